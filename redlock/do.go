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
// ttl*Config.ExtendFraction.
//
// Do returns fn's error; if the lock was lost while fn ran, the error also
// matches ErrNotHeld (errors.Is), even when fn returned nil, because the
// work may then have run without exclusion. It returns Lock's error when the
// lock could not be taken, without calling fn.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.do(ctx, key, nil, ttl, fn)
}

// DoMulti is Do for a lock on several keys: all of keys, or none, as
// LockMulti takes them. Hooks.Call is given the first key in sorted order.
func (c *Client) DoMulti(ctx context.Context, keys []string, ttl time.Duration, fn func(ctx context.Context) error) error {
	if len(keys) == 0 {
		return ErrNoKeys
	}
	return c.do(ctx, slices.Min(keys), keys, ttl, fn)
}

// do is Do on key, or DoMulti on keys when not nil (key is then the first).
func (c *Client) do(ctx context.Context, key string, keys []string, ttl time.Duration, fn func(ctx context.Context) error) (err error) {
	if h := c.cfg.Hooks.Call; h != nil {
		var end func(CallEnd)
		if ctx, end = h(ctx, OpDo, key); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1}) }()
		}
	}
	var l Lock
	if keys != nil {
		l, err = c.LockMulti(ctx, keys, ttl)
	} else {
		l, err = c.Lock(ctx, key, ttl)
	}
	if err != nil {
		return err
	}
	workCtx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	lost := make(chan error, 1)
	go func() { // owned by Do: ends when stop closes, before Do returns
		lost <- c.keepExtended(workCtx, &l, ttl, stop, cancel)
	}()
	// However fn ends, panics included: stop the extender, then release.
	defer func() {
		close(stop)
		lostErr := <-lost
		cancel(nil)
		unlockErr := l.Unlock(context.WithoutCancel(ctx)) // even if ctx has ended
		switch {
		case lostErr != nil:
			err = errors.Join(err, lostErr)
		case err == nil && errors.Is(unlockErr, ErrNotHeld):
			// Released nothing: the lock was gone by the time fn returned.
			err = unlockErr
		}
	}()
	return fn(workCtx)
}

// keepExtended extends l every ttl*ExtendFraction until stop closes. When
// the lock is lost it cancels the work with ErrNotHeld and returns the
// reason; it returns nil if stop closed while the lock was held.
func (c *Client) keepExtended(ctx context.Context, l *Lock, ttl time.Duration, stop <-chan struct{}, cancel context.CancelCauseFunc) error {
	every := time.Duration(float64(ttl) * c.cfg.ExtendFraction)
	retry := max(c.cfg.NodeTimeout, every/8)
	lose := func(reason error) error {
		c.event(EventLost, l.key)
		cancel(ErrNotHeld)
		return reason
	}
	next := every
	t := time.NewTimer(min(next, l.Validity()))
	defer t.Stop()
	for extensions := 0; ; {
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
		if l.Validity() <= 0 {
			return lose(&Error{Op: OpExtend, Key: l.key, Err: ErrNotHeld, Attempts: extensions})
		}
		if c.cfg.MaxExtensions >= 0 && extensions >= c.cfg.MaxExtensions {
			// No more extensions: hold until the validity ends, then stop.
			t.Reset(l.Validity())
			continue
		}
		// Bounded by the validity: an extension still waiting for its
		// masters when the validity ends must not keep fn running past it.
		ectx, cancelExtend := context.WithDeadline(context.WithoutCancel(ctx), l.Until())
		err := l.Extend(ectx, ttl)
		cancelExtend()
		switch {
		case err == nil:
			extensions++
			next = every
		case errors.Is(err, ErrNotHeld):
			return lose(err)
		default:
			next = retry // transient: try again soon, within the validity
		}
		t.Reset(max(0, min(next, l.Validity())))
	}
}
