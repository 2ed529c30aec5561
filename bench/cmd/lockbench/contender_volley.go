package main

import (
	"context"
	"time"

	"github.com/volleylock/volley/redlock"
)

const nameVolley = "volley"

// volley is Volley's redlock.Client over every master.
type volley struct {
	c        *redlock.Client
	defaults bool
}

func newVolley(s Setup) (Contender, error) { return newVolleyWith(s, redlock.Hooks{}) }

// newVolleyWith is newVolley with hooks (the adapters mode).
func newVolleyWith(s Setup, hooks redlock.Hooks) (Contender, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := redlock.Config{
		Hooks:               hooks,
		Addrs:               s.Addrs,
		MaxTTL:              max(s.TTL, 30*time.Second),
		DisableRestartGuard: true, // the masters were just started
	}
	if !s.Defaults {
		cfg.NodeTimeout = s.NodeTimeout
		cfg.Tries = s.Tries
		cfg.RetryDelay = s.RetryDelay // uniform in [RetryDelay/2, RetryDelay], as Setup says
	}
	c, err := redlock.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &volley{c: c, defaults: s.Defaults}, nil
}

func (v *volley) Name() string { return nameVolley }
func (v *volley) Note() string {
	if v.defaults {
		return "DisableRestartGuard (fresh masters); defaults: redlock.Config zero values but Addrs, MaxTTL and DisableRestartGuard"
	}
	return "DisableRestartGuard (fresh masters)"
}

func (v *volley) LockUnlock(ctx context.Context, key string, ttl time.Duration) error {
	l, err := v.c.Lock(ctx, key, ttl)
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}

func (v *volley) NewHolder() Holder { return &volleyHolder{c: v.c} }

func (v *volley) Close() error { return v.c.Close() }

type volleyHolder struct {
	c *redlock.Client
	l redlock.Lock
}

func (h *volleyHolder) Lock(ctx context.Context, key string, ttl time.Duration) error {
	l, err := h.c.Lock(ctx, key, ttl)
	if err != nil {
		return err
	}
	h.l = l
	return nil
}

func (h *volleyHolder) Unlock(ctx context.Context) error {
	err := h.l.Unlock(ctx)
	h.l = redlock.Lock{}
	return err
}
