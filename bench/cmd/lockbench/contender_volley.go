package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"time"

	"github.com/volleylock/volley/redlock"
)

const (
	nameVolley       = "volley"
	nameVolleyFenced = "volley-fenced"
	nameVolleyTLS    = "volley-tls"
)

// volleyTLSModes are the modes volley-tls takes part in: what TLS costs a
// lock, next to volley on the same masters' plain ports.
var volleyTLSModes = []string{modeLatency, modeThroughput}

// newVolleyTLS is newVolley over the masters' TLS ports (rediss://).
func newVolleyTLS(s Setup) (Contender, error) {
	if len(s.TLSAddrs) == 0 {
		return nil, errNoTLSMasters
	}
	c, err := newVolleyTuned(s, redlock.Hooks{}, false, func(cfg *redlock.Config) {
		cfg.Addrs = nil
		for _, a := range s.TLSAddrs {
			cfg.Addrs = append(cfg.Addrs, "rediss://"+a)
		}
		cfg.Conn.TLS = &tls.Config{RootCAs: s.TLSRoots}
	})
	if err != nil {
		return nil, err
	}
	c.(*volley).tls = true
	return c, nil
}

// volleyFencedModes are the modes volley-fenced takes part in: what a
// fencing token costs a lock, next to volley.
var volleyFencedModes = []string{modeLatency, modeThroughput, modeContended, modeAllocs}

// volley is Volley's redlock.Client over every master.
type volley struct {
	c        *redlock.Client
	defaults bool
	fencing  bool
	tls      bool          // volley-tls
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
	return newVolleyTuned(s, hooks, fencing, nil)
}

// newVolleyTuned is newVolleyConfig with tune, when not nil, applied to
// the Config last.
func newVolleyTuned(s Setup, hooks redlock.Hooks, fencing bool, tune func(*redlock.Config)) (Contender, error) {
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
	if tune != nil {
		tune(&cfg)
	}
	c, err := redlock.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &volley{c: c, defaults: s.Defaults, fencing: fencing, maxTTL: cfg.MaxTTL}, nil
}

func (v *volley) Name() string {
	if v.tls {
		return nameVolleyTLS
	}
	if v.fencing {
		return nameVolleyFenced
	}
	return nameVolley
}

func (v *volley) Note() string {
	if v.tls {
		return "DisableRestartGuard (fresh masters); the same masters' TLS ports (rediss://, TLS 1.3, a self-signed certificate made for the run): what TLS costs, next to volley"
	}
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

// Connects returns, per master, how many times the Client's connection to
// it has connected so far (see reconnectCounter).
func (v *volley) Connects() []uint64 {
	ms := v.c.Masters()
	out := make([]uint64, len(ms))
	for i, m := range ms {
		if m.Info != nil {
			out[i] = m.Info.Generation
		}
	}
	return out
}
