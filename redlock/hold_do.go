package redlock

import (
	"context"
	"errors"
	"time"
)

// heldValue is a hold that Do keeps extended: a Permit or a ReadLock.
type heldValue interface {
	Extend(ctx context.Context, ttl time.Duration) error
	Validity() time.Duration
	TTL() time.Duration
	// end releases the hold (Permit.Release, ReadLock.Unlock).
	end(ctx context.Context) error
}

// fencedHold is a hold with a fencing token (a Permit): Do gives it to fn's
// context, for FenceFrom.
type fencedHold interface{ Fence() uint64 }

// Do takes a permit (as Acquire does), runs fn while keeping the permit
// extended, and releases it when fn returns, as Client.Do does for a lock:
// fn's context is cancelled with cause ErrNotHeld the moment the permit is
// lost (an extension found it gone, its validity ran out before one
// succeeded, Config.MaxExtensions was reached, or the Client was closed),
// and Do's error then also matches ErrNotHeld. It returns Acquire's error
// without calling fn when no permit could be taken.
//
// The permit is extended every ttl*Config.ExtendFraction by a goroutine
// of this call (a permit's extension is not batched with the Client's
// locks), which ends before Do returns.
func (s *Semaphore) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return s.c.doHold(ctx, s.name, ttl, fn, func(ctx context.Context) (heldValue, error) {
		p, err := s.Acquire(ctx, ttl)
		return &p, err
	})
}

// doHold is the Do of a hold taken by take: see Semaphore.Do.
func (c *Client) doHold(ctx context.Context, name string, ttl time.Duration, fn func(ctx context.Context) error, take func(ctx context.Context) (heldValue, error)) (err error) {
	if h := c.cfg.Hooks.Call; h != nil {
		var end func(CallEnd)
		if ctx, end = h(ctx, OpDo, name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1}) }()
		}
	}
	h, err := take(ctx)
	if err != nil {
		return err
	}
	workCtx, cancel := context.WithCancelCause(ctx)
	if f, ok := h.(fencedHold); ok && f.Fence() != 0 {
		workCtx = context.WithValue(workCtx, fenceCtxKey{}, f.Fence())
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	var lostErr error // written by the renewing goroutine before stopped closes
	go func() {
		defer close(stopped)
		lostErr = c.keep(h, name, stop)
		if lostErr != nil {
			cancel(ErrNotHeld)
		}
	}()
	// However fn ends, panics included: stop renewing, then release.
	defer func() {
		close(stop)
		<-stopped
		cancel(nil)
		releaseErr := h.end(context.WithoutCancel(ctx)) // even if ctx has ended
		switch {
		case lostErr != nil:
			err = errors.Join(err, lostErr)
		case err == nil && c.goneAtUnlock(releaseErr):
			err = releaseErr
		}
	}()
	return fn(workCtx)
}

// keep extends h every ttl*Config.ExtendFraction until stop closes (nil)
// or h is lost (its error, matching ErrNotHeld). A failed extension that
// does not show h lost is retried sooner, while the validity lasts.
func (c *Client) keep(h heldValue, name string, stop <-chan struct{}) error {
	cfg := &c.cfg
	ttl := h.TTL()
	every := time.Duration(float64(ttl) * cfg.ExtendFraction)
	retry := max(cfg.MasterTimeout, every/8)
	t := time.NewTimer(every)
	defer t.Stop()
	for n := 0; ; {
		select {
		case <-stop:
			return nil
		case <-c.renew.stop:
			return &Error{Op: OpExtend, Key: name, Err: errClosedWhileHeld}
		case <-t.C:
		}
		if cfg.MaxExtensions >= 0 && n >= cfg.MaxExtensions {
			return &Error{Op: OpExtend, Key: name, Err: ErrNotHeld}
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.Validity())
		err := h.Extend(ctx, ttl)
		cancel()
		switch {
		case err == nil:
			n++
			t.Reset(every)
		case errors.Is(err, ErrNotHeld) || h.Validity() <= 0:
			if !errors.Is(err, ErrNotHeld) {
				err = &Error{Op: OpExtend, Key: name, Err: ErrNotHeld}
			}
			return err
		default:
			t.Reset(min(retry, h.Validity()))
		}
	}
}
