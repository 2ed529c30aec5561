package redlock

import (
	"context"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
)

// An extension and a release, and the verdicts of their bursts, one for
// every kind of hold (a Lock, a Permit, a ReadLock): what a quorum's
// answers mean does not depend on what was held.

// extendHeld extends the hold h describes, whose token is tok, for ttl, its validity *until and
// its TTL *ttlNow updated on success; lost reports that it is known gone,
// and its validity then ends (see hold.lostAt). The caller has checked that
// the hold is still valid.
func (c *Client) extendHeld(ctx context.Context, h *heldOp, v *hold, ttl time.Duration) (lost bool, err error) {
	if err := c.checkTTL(ttl); err != nil {
		return false, err
	}
	if c.closed.Load() {
		return false, ErrClosed
	}
	if ctx.Err() != nil {
		// Nothing sent: the previous validity stands.
		return false, &Error{Op: OpExtend, Key: h.name, Err: ctxerr.Of(ctx)}
	}
	o := c.getOp()
	defer c.putOp(o)
	if hook := c.cfg.Hooks.Call; hook != nil {
		if _, end := hook(ctx, OpExtend, h.name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1, Masters: o.res}) }()
		}
	}
	o.encode(h.cmd, args{key: h.key, keys: h.keys, tok: &v.tok, arg: o.ttlArg(ttl), arg2: h.arg2})
	br := o.run(ctx.Done())
	c.report(o.res, OpExtend)
	newUntil, lost, err := c.extendVerdict(ctx, o.res, &br, h.name, ttl, v.until)
	switch {
	case err == nil:
		v.until, v.ttl = newUntil, ttl
		if m := o.res.notOurs(); m != 0 { // rare: no clock reading otherwise
			c.restoreCopies(h, &v.tok, ttl-time.Since(br.start), m)
		}
	case lost:
		v.lostAt(time.Now())
	}
	return lost, err
}

// releaseHeld releases the hold h describes, whose token is tok, on every
// master, waiting as Unlock does (see releasePatience; less if a live ctx
// ends sooner): see releaseVerdict. It sends the release even when ctx has
// already ended.
func (c *Client) releaseHeld(ctx context.Context, h *heldOp, tok *token) (ended bool, err error) {
	if c.closed.Load() {
		return false, ErrClosed
	}
	done := ctx.Done()
	if ctx.Err() != nil {
		done = nil // already ended: wait our own timeout instead
	}
	o := c.getOp()
	defer c.putOp(o)
	if hook := c.cfg.Hooks.Call; hook != nil {
		if _, end := hook(ctx, OpUnlock, h.name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1, Masters: o.res}) }()
		}
	}
	o.encode(h.cmd, args{key: h.key, keys: h.keys, tok: tok, arg: h.arg, arg2: h.arg2})
	br := o.run(done)
	c.report(o.res, OpUnlock)
	return c.releaseVerdict(ctx, o.res, &br, h.name)
}

// extension judges an extension's votes, ok masters that extended the
// value and taken that said it is not theirs: granted when a quorum's yes
// came within both the new validity (until) and the one held (held), at
// now; gone when so many said "not ours" that no quorum holds it; neither
// when too few answered to tell. Extend (extendVerdict) and Do's renewer
// (renewer.apply) judge by it.
func (c *Client) extension(ok, taken int, until, held, now time.Time) (granted, gone bool) {
	granted = ok >= c.quorum && now.Before(until) && now.Before(held)
	return granted, !granted && taken > len(c.masters)-c.quorum
}

// extendVerdict judges the burst br of an extension for ttl of what is
// held on key, valid until held. On success (nil) it returns the new
// validity; lost reports that the hold is known gone (ErrNotHeld, possibly
// inside an *Error): a quorum no longer holds its token, or its validity
// ran out while asking. Otherwise the error wraps ErrExtendFailed (the
// previous validity stands) or ctx's error. It reports EventExtended or
// EventLost.
func (c *Client) extendVerdict(ctx context.Context, res votes, br *burstResult, key string, ttl time.Duration, held time.Time) (until time.Time, lost bool, err error) {
	until = c.validUntil(br.start, ttl)
	now := time.Now()
	granted, gone := c.extension(br.ok, br.taken, until, held, now)
	switch {
	case br.cancelled:
		return held, false, res.error(OpExtend, key, ctxerr.Of(ctx), 1)
	case granted:
		c.event(EventExtended, key)
		return until, false, nil
	case gone || now.After(held):
		c.event(EventLost, key)
		if br.failed == 0 {
			return held, true, ErrNotHeld
		}
		return held, true, res.error(OpExtend, key, ErrNotHeld, 1)
	default:
		return held, false, res.error(OpExtend, key, ErrExtendFailed, 1)
	}
}

// releaseVerdict judges the burst br of a release of what was held on
// key: nil if a quorum released it; ErrNotHeld (possibly inside an *Error)
// if it was no longer held; an *Error wrapping ErrUnlockFailed if too few
// answered to tell, or ctx's error. ended is false only in that last case
// (the release may yet land: the caller's hold is over either way). It
// reports EventReleased.
func (c *Client) releaseVerdict(ctx context.Context, res votes, br *burstResult, key string) (ended bool, err error) {
	switch {
	case br.ok >= c.quorum:
		c.event(EventReleased, key)
		return true, nil
	case br.cancelled:
		return false, res.error(OpUnlock, key, ctxerr.Of(ctx), 1)
	case br.failed == 0:
		return true, ErrNotHeld
	case br.taken > len(c.masters)-c.quorum:
		return true, res.error(OpUnlock, key, ErrNotHeld, 1)
	default:
		// Answers missing (late, failed): not known gone, not known
		// released.
		return true, res.error(OpUnlock, key, ErrUnlockFailed, 1)
	}
}
