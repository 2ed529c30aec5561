package redlock

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Do acquires key (as Lock does), runs fn while keeping the lock extended,
// and releases it when fn returns.
//
// fn's context is cancelled with cause ErrNotHeld (see context.Cause) the
// moment the lock is lost: an extension found it gone, or its validity ran
// out before an extension succeeded, or Config.MaxExtensions was reached.
// fn should stop its critical work then. The lock is extended every
// ttl*Config.ExtendFraction by the Client's renewer, shared by every Do
// call (of locks, permits and read locks alike): values of one kind whose
// renewal falls due together are extended in one script call per master,
// each judged on its own quorum. These extensions do not go through
// Hooks.Call; Hooks.Master reports each batch (OpExtend) and Hooks.Event
// each value's EventExtended or EventLost. Once Do returns, its lock is
// never extended again.
//
// Do returns fn's error; if the lock was lost while fn ran, the error also
// matches ErrNotHeld (errors.Is), even when fn returned nil, because the
// work may then have run without exclusion, and ErrNoQuorum as well when
// its validity ran out while too few masters could vote on its
// extensions (an outage). The release at the end counts
// as well when a quorum's answers show the lock gone; answers that come
// late (slow masters) do not make Do report a loss. It returns Lock's error when the
// lock could not be taken, without calling fn.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.do(ctx, key, fn, func(ctx context.Context) (heldValue, error) {
		l, err := c.Lock(ctx, key, ttl)
		return &l, err
	})
}

// DoMulti is Do for a lock on several keys: all of keys, or none, as
// LockMulti takes them. Hooks.Call is given the first key in sorted order.
func (c *Client) DoMulti(ctx context.Context, keys []string, ttl time.Duration, fn func(ctx context.Context) error) error {
	if len(keys) == 0 {
		return ErrNoKeys
	}
	return c.do(ctx, slices.Min(keys), fn, func(ctx context.Context) (heldValue, error) {
		l, err := c.LockMulti(ctx, keys, ttl)
		return &l, err
	})
}

// Do takes a permit (as Acquire does), runs fn while keeping the permit
// extended, and releases it when fn returns, as Client.Do does for a lock:
// fn's context is cancelled with cause ErrNotHeld the moment the permit is
// lost (an extension found it gone, its validity ran out before one
// succeeded, Config.MaxExtensions was reached, or the Client was closed),
// and Do's error then also matches ErrNotHeld. The permit is extended by
// the Client's renewer, in batches with the other permits that fall due
// together. It returns Acquire's error without calling fn when no permit
// could be taken.
func (s *Semaphore) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return s.c.do(ctx, s.name, fn, func(ctx context.Context) (heldValue, error) {
		p, err := s.Acquire(ctx, ttl)
		return &p, err
	})
}

// DoWrite is Client.Do for the write lock: it takes it as Lock does, runs
// fn while the Client's renewer keeps it extended, and releases it.
func (rw *RWMutex) DoWrite(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return rw.c.do(ctx, rw.name, fn, func(ctx context.Context) (heldValue, error) {
		l, err := rw.Lock(ctx, ttl)
		return &l, err
	})
}

// DoRead takes a read lock (as RLock does), runs fn while the Client's
// renewer keeps it extended, and releases it, as Semaphore.Do does for a
// permit.
func (rw *RWMutex) DoRead(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return rw.c.do(ctx, rw.name, fn, func(ctx context.Context) (heldValue, error) {
		r, err := rw.RLock(ctx, ttl)
		return &r, err
	})
}

// do is every Do: it takes a value by take, runs fn while the renewer
// keeps the value extended, and releases it. name is what Hooks.Call is
// given.
func (c *Client) do(ctx context.Context, name string, fn func(ctx context.Context) error, take func(ctx context.Context) (heldValue, error)) (err error) {
	if h := c.cfg.Hooks.Call; h != nil {
		var end func(CallEnd)
		if ctx, end = h(ctx, OpDo, name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1}) }()
		}
	}
	v, err := take(ctx)
	if err != nil {
		return err
	}
	workCtx, cancel := context.WithCancelCause(ctx)
	if f := v.fenceToken(); f != 0 {
		workCtx = context.WithValue(workCtx, fenceCtxKey{}, f)
	}
	h, how := v.holding()
	renewal := c.renew.register(h, how, h.ttl, func(error) { cancel(ErrNotHeld) })
	// However fn ends, panics included: stop renewing, then release.
	defer func() {
		lostErr := c.renew.unregister(renewal)
		cancel(nil)
		endErr := v.end(context.WithoutCancel(ctx)) // even if ctx has ended
		switch {
		case lostErr != nil:
			err = errors.Join(err, lostErr)
		case err == nil && c.goneAtUnlock(endErr):
			// Released nothing: the value was gone by the time fn returned.
			err = endErr
		}
	}()
	return fn(workCtx)
}

// goneAtUnlock reports whether Unlock's error shows the lock gone (more
// masters than a quorum can spare answered that they do not hold it). An
// Unlock whose answers came late (a loaded machine, a slow master) fails
// with ErrUnlockFailed instead, which says nothing of the sort: Do, whose
// renewer kept the lock valid while fn ran, does not report it lost.
func (c *Client) goneAtUnlock(err error) bool { return errors.Is(err, ErrNotHeld) }

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
