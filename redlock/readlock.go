package redlock

import (
	"context"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
)

// ReadLock is a held read lock of an RWMutex: a small value, returned
// without allocation. Copy it freely, but Extend and Unlock one copy only:
// Extend updates the copy it is called on. The zero ReadLock holds
// nothing.
type ReadLock struct {
	rw    *RWMutex
	tok   token
	ttl   time.Duration
	until time.Time // end of validity, on the monotonic clock
}

// RWMutex returns the read lock's RWMutex; nil for the zero ReadLock.
func (r *ReadLock) RWMutex() *RWMutex { return r.rw }

// Until returns when the read lock's validity ends (a monotonic clock
// reading, as Lock.Until).
func (r *ReadLock) Until() time.Time { return r.until }

// Validity returns how long the read lock is still valid; zero or negative
// means it must be taken as lost.
func (r *ReadLock) Validity() time.Duration {
	if r.rw == nil {
		return 0
	}
	return time.Until(r.until)
}

// TTL returns the TTL the read lock was acquired or last extended with.
func (r *ReadLock) TTL() time.Duration { return r.ttl }

// Extend resets the read lock's TTL to ttl on every master that still
// holds it, with Lock.Extend's results and errors.
func (r *ReadLock) Extend(ctx context.Context, ttl time.Duration) (err error) {
	rw := r.rw
	if rw == nil || r.Validity() <= 0 {
		return ErrNotHeld
	}
	c := rw.c
	if err := c.checkTTL(ttl); err != nil {
		return err
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if ctx.Err() != nil {
		return &Error{Op: OpExtend, Key: rw.name, Err: ctxerr.Of(ctx)}
	}
	o := c.getOp()
	defer c.putOp(o)
	if h := c.cfg.Hooks.Call; h != nil {
		if _, end := h(ctx, OpExtend, rw.name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1, Masters: o.res}) }()
		}
	}
	o.encode(&cmdRWRExtend, rw.name, rw.keys, &r.tok, o.ttlArg(ttl), nil)
	br := o.run(ctx.Done())
	o.report(OpExtend)
	until, _, err := o.extendVerdict(ctx, &br, rw.name, ttl, r.until)
	if err == nil {
		r.until, r.ttl = until, ttl
	}
	return err
}

// Unlock releases the read lock on every master, with Lock.Unlock's
// results and errors (without hand-overs); each reader's release wakes a
// writer that waits. It is meant for defer: it sends the release even
// when ctx has already ended.
func (r *ReadLock) Unlock(ctx context.Context) (err error) {
	rw := r.rw
	if rw == nil {
		return ErrNotHeld
	}
	c := rw.c
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
		if _, end := h(ctx, OpUnlock, rw.name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1, Masters: o.res}) }()
		}
	}
	o.encode(&cmdRWRUnlock, rw.name, rw.keys, &r.tok, nil, nil)
	br := o.run(done)
	o.report(OpUnlock)
	r.until = time.Time{}
	_, err = o.releaseVerdict(ctx, &br, rw.name)
	return err
}

func (r *ReadLock) end(ctx context.Context) error { return r.Unlock(ctx) }
