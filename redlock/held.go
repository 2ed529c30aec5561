package redlock

import (
	"context"
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

// heldValue is a held value as Do holds it: taken by its kind's acquire,
// kept extended by the Client's renewer, released when fn returns.
type heldValue interface {
	// holding returns the value's hold and how it is extended (its
	// extend command, name, keys and arguments).
	holding() (*hold, heldOp)
	// fenceToken is its fencing token (Config.Fencing), else 0.
	fenceToken() uint64
	// end releases it (Unlock, Release).
	end(ctx context.Context) error
}

func (l *Lock) holding() (*hold, heldOp) { return &l.hold, l.extendOp() }
func (l *Lock) fenceToken() uint64       { return l.fence }
func (l *Lock) end(ctx context.Context) error {
	return l.Unlock(ctx)
}

func (p *Permit) holding() (*hold, heldOp) { return &p.hold, p.extendOp() }
func (p *Permit) fenceToken() uint64       { return p.fence }
func (p *Permit) end(ctx context.Context) error {
	return p.Release(ctx)
}

func (r *ReadLock) holding() (*hold, heldOp) { return &r.hold, r.extendOp() }
func (r *ReadLock) fenceToken() uint64       { return 0 }
func (r *ReadLock) end(ctx context.Context) error {
	return r.Unlock(ctx)
}
