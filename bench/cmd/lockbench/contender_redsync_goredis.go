package main

import (
	"context"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

const nameRedsyncGoredis = "redsync-goredis"

// redsyncGoredis is redsync with one go-redis v9 pool per master.
type redsyncGoredis struct {
	rs       *redsync.Redsync
	clients  []*goredislib.Client
	opts     []redsync.Option
	defaults bool
}

func newRedsyncGoredis(s Setup) (Contender, error) {
	c := &redsyncGoredis{}
	pools := make([]redsyncredis.Pool, 0, len(s.Addrs))
	for _, a := range s.Addrs {
		cl := goredislib.NewClient(&goredislib.Options{
			Addr:         a,
			PoolSize:     s.PoolSize,
			MinIdleConns: 1,
			ReadTimeout:  3 * time.Second, // go-redis's default
			WriteTimeout: 3 * time.Second,
		})
		c.clients = append(c.clients, cl)
		pools = append(pools, goredis.NewPool(cl))
	}
	c.rs = redsync.New(pools...)
	c.opts = redsyncOptions(s)
	c.defaults = s.Defaults
	return c, nil
}

// redsyncDefaultsNote is what redsync runs with under Setup.Defaults (its
// defaults in the version of go.mod).
const redsyncDefaultsNote = "defaults: redsync's options but WithExpiry (32 tries, retry 50-250ms, per-master timeout 0.05 x expiry, no fail-fast)"

// redsyncNote is a redsync contender's note over its driver's pools.
func redsyncNote(defaults bool, pools string) string {
	if defaults {
		return redsyncDefaultsNote + "; " + pools
	}
	return "fail-fast; " + pools
}

// redsyncOptions gives redsync the shared TTL, tries, retry delay and
// per-master timeout (redsync's is expiry*TimeoutFactor), and fail-fast so
// that it returns once the quorum's answer is known, as Volley does. With
// Setup.Defaults it gives the TTL only (see redsyncDefaultsNote).
func redsyncOptions(s Setup) []redsync.Option {
	if s.Defaults {
		return []redsync.Option{redsync.WithExpiry(s.TTL)}
	}
	return []redsync.Option{
		redsync.WithExpiry(s.TTL),
		redsync.WithTries(s.Tries),
		redsync.WithRetryDelayFunc(func(int) time.Duration { return s.retryDelay() }),
		redsync.WithTimeoutFactor(float64(s.MasterTimeout) / float64(s.TTL)),
		redsync.WithFailFast(true),
	}
}

func (c *redsyncGoredis) Name() string { return nameRedsyncGoredis }
func (c *redsyncGoredis) Note() string { return redsyncNote(c.defaults, "go-redis pool per master") }

func (c *redsyncGoredis) LockUnlock(ctx context.Context, key string, _ time.Duration) error {
	return redsyncLockUnlock(ctx, c.rs.NewMutex(key, c.opts...))
}

func (c *redsyncGoredis) NewHolder() Holder { return &redsyncHolder{rs: c.rs, opts: c.opts} }

func (c *redsyncGoredis) Close() error {
	var first error
	for _, cl := range c.clients {
		if err := cl.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func redsyncLockUnlock(ctx context.Context, m *redsync.Mutex) error {
	if err := m.LockContext(ctx); err != nil {
		return err
	}
	_, err := m.UnlockContext(ctx)
	return err
}

// redsyncHolder serves both redsync contenders (the TTL is in opts).
type redsyncHolder struct {
	rs   *redsync.Redsync
	opts []redsync.Option
	m    *redsync.Mutex
}

func (h *redsyncHolder) Lock(ctx context.Context, key string, _ time.Duration) error {
	m := h.rs.NewMutex(key, h.opts...)
	if err := m.LockContext(ctx); err != nil {
		return err
	}
	h.m = m
	return nil
}

func (h *redsyncHolder) Unlock(ctx context.Context) error {
	_, err := h.m.UnlockContext(ctx)
	h.m = nil
	return err
}
