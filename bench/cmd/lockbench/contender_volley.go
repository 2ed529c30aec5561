package main

import (
	"cmp"
	"context"
	"time"

	"github.com/volleylock/volley/redlock"
)

const (
	nameVolley       = "volley"
	nameVolleyFenced = "volley-fenced"
)

// volleyFencedModes are the modes volley-fenced takes part in: what a
// fencing token costs a lock, next to volley.
var volleyFencedModes = []string{modeLatency, modeThroughput, modeContended, modeAllocs}

// volley is Volley's redlock.Client over every master.
type volley struct {
	c        *redlock.Client
	defaults bool
	fencing  bool
	maxTTL   time.Duration // the Config's, for the defaults' note
}

func newVolley(s Setup) (Contender, error) { return newVolleyWith(s, redlock.Hooks{}) }

// newVolleyFenced is newVolley with Config.Fencing: Lock.Fence tokens.
func newVolleyFenced(s Setup) (Contender, error) { return newVolleyConfig(s, redlock.Hooks{}, true) }

// newVolleyWith is newVolley with hooks (the adapters mode).
func newVolleyWith(s Setup, hooks redlock.Hooks) (Contender, error) {
	return newVolleyConfig(s, hooks, false)
}

func newVolleyConfig(s Setup, hooks redlock.Hooks, fencing bool) (Contender, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := redlock.Config{
		Hooks:               hooks,
		Addrs:               s.Addrs,
		MaxTTL:              cmp.Or(s.MaxTTL, max(s.TTL, 30*time.Second)),
		DisableRestartGuard: true, // the masters were just started
		Fencing:             fencing,
	}
	if !s.Defaults {
		cfg.MasterTimeout = s.MasterTimeout
		cfg.Tries = s.Tries
		cfg.RetryDelay = s.RetryDelay // uniform in [RetryDelay/2, RetryDelay], as Setup says
	}
	c, err := redlock.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &volley{c: c, defaults: s.Defaults, fencing: fencing, maxTTL: cfg.MaxTTL}, nil
}

func (v *volley) Name() string {
	if v.fencing {
		return nameVolleyFenced
	}
	return nameVolley
}

func (v *volley) Note() string {
	if v.fencing {
		return "DisableRestartGuard (fresh masters); Config.Fencing: one round per Lock while its proposed token exceeds the counters, two otherwise"
	}
	if v.defaults {
		return "DisableRestartGuard (fresh masters); defaults: redlock.Config zero values but Addrs, MaxTTL " + v.maxTTL.String() + " and DisableRestartGuard"
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
