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
// call: locks whose renewal falls due together are extended in one script
// call per master, each judged on its own quorum. These extensions do not
// go through Hooks.Call; Hooks.Master reports each batch (OpExtend) and
// Hooks.Event each lock's EventExtended or EventLost. Once Do returns, its
// lock is never extended again.
//
// Do returns fn's error; if the lock was lost while fn ran, the error also
// matches ErrNotHeld (errors.Is), even when fn returned nil, because the
// work may then have run without exclusion. The release at the end counts
// as well when a quorum's answers show the lock gone; answers that come
// late (slow masters) do not make Do report a loss. It returns Lock's error when the
// lock could not be taken, without calling fn.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.do(ctx, key, nil, nil, ttl, fn)
}

// DoMulti is Do for a lock on several keys: all of keys, or none, as
// LockMulti takes them. Hooks.Call is given the first key in sorted order.
func (c *Client) DoMulti(ctx context.Context, keys []string, ttl time.Duration, fn func(ctx context.Context) error) error {
	if len(keys) == 0 {
		return ErrNoKeys
	}
	return c.do(ctx, slices.Min(keys), keys, nil, ttl, fn)
}

// do is Do on key, or DoMulti on keys when not nil (key is then the
// first), or, with spec, a read-write lock's DoWrite.
func (c *Client) do(ctx context.Context, key string, keys []string, spec *lockSpec, ttl time.Duration, fn func(ctx context.Context) error) (err error) {
	if h := c.cfg.Hooks.Call; h != nil {
		var end func(CallEnd)
		if ctx, end = h(ctx, OpDo, key); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1}) }()
		}
	}
	var l Lock
	switch {
	case spec != nil:
		if err = c.checkTTL(ttl); err == nil {
			l, err = c.acquire(ctx, key, nil, spec, ttl, c.cfg.Tries)
		}
	case keys != nil:
		l, err = c.LockMulti(ctx, keys, ttl)
	default:
		l, err = c.Lock(ctx, key, ttl)
	}
	if err != nil {
		return err
	}
	workCtx, cancel := context.WithCancelCause(ctx)
	if l.fence != 0 {
		workCtx = context.WithValue(workCtx, fenceCtxKey{}, l.fence)
	}
	renewal := c.renew.register(&l, ttl, func() { cancel(ErrNotHeld) })
	// However fn ends, panics included: stop renewing, then release.
	defer func() {
		lostErr := c.renew.unregister(renewal)
		cancel(nil)
		unlockErr := l.Unlock(context.WithoutCancel(ctx)) // even if ctx has ended
		switch {
		case lostErr != nil:
			err = errors.Join(err, lostErr)
		case err == nil && c.goneAtUnlock(unlockErr):
			// Released nothing: the lock was gone by the time fn returned.
			err = unlockErr
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
