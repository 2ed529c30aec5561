package redlock

import (
	"context"
	"errors"
	"time"
)

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
func (s *Semaphore) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) (err error) {
	c := s.c
	if h := c.cfg.Hooks.Call; h != nil {
		var end func(CallEnd)
		if ctx, end = h(ctx, OpDo, s.name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1}) }()
		}
	}
	p, err := s.Acquire(ctx, ttl)
	if err != nil {
		return err
	}
	workCtx, cancel := context.WithCancelCause(ctx)
	stop, stopped := make(chan struct{}), make(chan struct{})
	var lostErr error // written by the renewing goroutine before stopped closes
	go func() {
		defer close(stopped)
		lostErr = p.keep(stop)
		if lostErr != nil {
			cancel(ErrNotHeld)
		}
	}()
	// However fn ends, panics included: stop renewing, then release.
	defer func() {
		close(stop)
		<-stopped
		cancel(nil)
		releaseErr := p.Release(context.WithoutCancel(ctx)) // even if ctx has ended
		switch {
		case lostErr != nil:
			err = errors.Join(err, lostErr)
		case err == nil && c.goneAtUnlock(releaseErr):
			err = releaseErr
		}
	}()
	return fn(workCtx)
}

// keep extends p every ttl*Config.ExtendFraction until stop closes (nil)
// or p is lost (its error, matching ErrNotHeld). A failed extension that
// does not show p lost is retried sooner, while the validity lasts.
func (p *Permit) keep(stop <-chan struct{}) error {
	c := p.s.c
	cfg := &c.cfg
	every := time.Duration(float64(p.ttl) * cfg.ExtendFraction)
	retry := max(cfg.MasterTimeout, every/8)
	t := time.NewTimer(every)
	defer t.Stop()
	for n := 0; ; {
		select {
		case <-stop:
			return nil
		case <-c.renew.stop:
			return &Error{Op: OpExtend, Key: p.s.name, Err: errClosedWhileHeld}
		case <-t.C:
		}
		if cfg.MaxExtensions >= 0 && n >= cfg.MaxExtensions {
			return &Error{Op: OpExtend, Key: p.s.name, Err: ErrNotHeld}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Until(p.until))
		err := p.Extend(ctx, p.ttl)
		cancel()
		switch {
		case err == nil:
			n++
			t.Reset(every)
		case errors.Is(err, ErrNotHeld) || p.Validity() <= 0:
			if !errors.Is(err, ErrNotHeld) {
				err = &Error{Op: OpExtend, Key: p.s.name, Err: ErrNotHeld}
			}
			return err
		default:
			t.Reset(min(retry, p.Validity()))
		}
	}
}
