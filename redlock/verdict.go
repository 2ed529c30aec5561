package redlock

import (
	"context"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
)

// The verdicts of an extension's and a release's burst, one for every kind
// of hold (a Lock, a Permit): what a quorum's answers mean does not depend
// on what was held.

// extendVerdict judges the burst br of an extension for ttl of what is
// held on key, valid until held. On success (nil) it returns the new
// validity; lost reports that the hold is known gone (ErrNotHeld, possibly
// inside an *Error): a quorum no longer holds its token, or its validity
// ran out while asking. Otherwise the error wraps ErrExtendFailed (the
// previous validity stands) or ctx's error. It reports EventExtended or
// EventLost.
func (o *op) extendVerdict(ctx context.Context, br *burstResult, key string, ttl time.Duration, held time.Time) (until time.Time, lost bool, err error) {
	c := o.c
	until = c.validUntil(br.start, ttl)
	now := time.Now()
	switch {
	case br.cancelled:
		return held, false, o.error(OpExtend, key, ctxerr.Of(ctx), 1)
	case br.ok >= c.quorum && now.Before(until) && now.Before(held):
		c.event(EventExtended, key)
		return until, false, nil
	case br.taken > len(c.masters)-c.quorum || now.After(held):
		c.event(EventLost, key)
		if br.failed == 0 {
			return held, true, ErrNotHeld
		}
		return held, true, o.error(OpExtend, key, ErrNotHeld, 1)
	default:
		return held, false, o.error(OpExtend, key, ErrExtendFailed, 1)
	}
}

// releaseVerdict judges the burst br of a release of what was held on
// key: nil if a quorum released it; ErrNotHeld (possibly inside an *Error)
// if it was no longer held; an *Error wrapping ErrUnlockFailed if too few
// answered to tell, or ctx's error. ended is false only in that last case
// (the release may yet land: the caller's hold is over either way). It
// reports EventReleased.
func (o *op) releaseVerdict(ctx context.Context, br *burstResult, key string) (ended bool, err error) {
	c := o.c
	switch {
	case br.ok >= c.quorum:
		c.event(EventReleased, key)
		return true, nil
	case br.cancelled:
		return false, o.error(OpUnlock, key, ctxerr.Of(ctx), 1)
	case br.failed == 0:
		return true, ErrNotHeld
	case br.taken > len(c.masters)-c.quorum:
		return true, o.error(OpUnlock, key, ErrNotHeld, 1)
	default:
		// Answers missing (late, failed): not known gone, not known
		// released.
		return true, o.error(OpUnlock, key, ErrUnlockFailed, 1)
	}
}
