package redlock

import (
	"time"
)

// hold is what every held value (Lock, Permit, ReadLock) keeps of its
// hold on the masters: its token, the TTL it was taken or last extended
// with, and the end of its validity on the monotonic clock. While Do's
// renewer keeps the value extended, the renewer owns these fields (see
// renewer.register).
type hold struct {
	tok   token
	ttl   time.Duration
	until time.Time
}

// validity is how long the hold is still valid.
func (h *hold) validity() time.Duration { return time.Until(h.until) }

// lostAt ends the hold's validity at now, when it was known lost (or
// ended), unless it had ended already.
func (h *hold) lostAt(now time.Time) {
	if now.Before(h.until) {
		h.until = now
	}
}

// driftFloor is the part of the clock-drift allowance that does not scale
// with the TTL: the Redlock spec's "few milliseconds" for the masters'
// expiry resolution and the client's own timing.
const driftFloor = 2 * time.Millisecond

// validUntil is when a lock set (or extended) for ttl by a burst that left
// at start stops being valid: ttl less the drift allowance,
// ttl*DriftFactor + driftFloor, counted from start.
func (c *Client) validUntil(start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl - c.drift(ttl))
}

// drift is the clock-drift allowance of a lock of ttl: ttl*DriftFactor +
// driftFloor.
func (c *Client) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*c.cfg.DriftFactor) + driftFloor
}
