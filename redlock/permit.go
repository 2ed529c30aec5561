package redlock

import (
	"context"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
)

// Permit is a held permit of a Semaphore: a small value, returned without
// allocation. Copy it freely, but Extend and Release one copy only: Extend
// updates the copy it is called on. The zero Permit holds nothing.
type Permit struct {
	s      *Semaphore
	permit int
	tok    token
	ttl    time.Duration
	until  time.Time // end of validity, on the monotonic clock
}

// Semaphore returns the permit's semaphore; nil for the zero Permit.
func (p *Permit) Semaphore() *Semaphore { return p.s }

// Index returns which of the semaphore's permits this is, from 0 to
// Permits-1. No other holder holds the same index at the same time.
func (p *Permit) Index() int { return p.permit }

// Until returns when the permit's validity ends (a monotonic clock
// reading, as Lock.Until).
func (p *Permit) Until() time.Time { return p.until }

// Validity returns how long the permit is still valid; zero or negative
// means it must be taken as lost.
func (p *Permit) Validity() time.Duration {
	if p.s == nil {
		return 0
	}
	return time.Until(p.until)
}

// TTL returns the TTL the permit was acquired or last extended with.
func (p *Permit) TTL() time.Duration { return p.ttl }

// Extend resets the permit's TTL to ttl on every master that still holds
// it, as Lock.Extend does, with its results and errors: nil (the validity
// renewed), ErrNotHeld (possibly inside an *Error) when the permit is
// lost, ErrExtendFailed when a quorum could not be reached, or ctx's
// error.
func (p *Permit) Extend(ctx context.Context, ttl time.Duration) (err error) {
	s := p.s
	if s == nil || p.Validity() <= 0 {
		return ErrNotHeld
	}
	c := s.c
	if err := c.checkTTL(ttl); err != nil {
		return err
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if ctx.Err() != nil {
		return &Error{Op: OpExtend, Key: s.name, Err: ctxerr.Of(ctx)}
	}
	o := c.getOp()
	defer c.putOp(o)
	if h := c.cfg.Hooks.Call; h != nil {
		if _, end := h(ctx, OpExtend, s.name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1, Masters: o.res}) }()
		}
	}
	pair := s.pair[p.permit][:]
	o.encode(&cmdSemExtend, s.name, pair, &p.tok, o.ttlArg(ttl), s.permitsArg)
	br := o.run(ctx.Done())
	o.report(OpExtend)
	until, _, err := o.extendVerdict(ctx, &br, s.name, ttl, p.until)
	if err == nil {
		p.until, p.ttl = until, ttl
	}
	return err
}

// Release gives the permit back on every master and wakes a waiter of
// the semaphore, as Lock.Unlock does (without hand-overs), with its
// results and errors. It is meant for defer: it sends the release even
// when ctx has already ended. Afterwards this Permit, and every copy of
// it, holds nothing.
func (p *Permit) Release(ctx context.Context) (err error) {
	s := p.s
	if s == nil {
		return ErrNotHeld
	}
	c := s.c
	if c.closed.Load() {
		return ErrClosed
	}
	done := ctx.Done()
	if ctx.Err() != nil {
		done = nil // already ended: wait our own timeout instead
	}
	o := c.getOp()
	defer c.putOp(o)
	if h := c.cfg.Hooks.Call; h != nil {
		if _, end := h(ctx, OpUnlock, s.name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1, Masters: o.res}) }()
		}
	}
	s.release(o, p.permit, &p.tok, true, false)
	br := o.run(done)
	o.report(OpUnlock)
	p.until = time.Time{}
	_, err = o.releaseVerdict(ctx, &br, s.name)
	return err
}

func (p *Permit) end(ctx context.Context) error { return p.Release(ctx) }
