package main

import (
	"context"
	"time"

	"github.com/bsm/redislock"
	goredislib "github.com/redis/go-redis/v9"
)

const nameRedislock = "redislock"

// redisLock is bsm/redislock: a single-instance lock, so it runs on the
// first master only (one round trip per operation instead of a quorum).
type redisLock struct {
	cl       *goredislib.Client
	lc       *redislock.Client
	opts     redislock.Options
	defaults bool
}

func newRedislock(s Setup) (Contender, error) {
	cl := goredislib.NewClient(&goredislib.Options{
		Addr:         s.Addrs[0],
		PoolSize:     s.PoolSize,
		MinIdleConns: 1,
		ReadTimeout:  3 * time.Second,
		WriteTimeout: 3 * time.Second,
	})
	r := &redisLock{cl: cl, lc: redislock.New(cl), defaults: s.Defaults}
	if !s.Defaults {
		// Stateless, so shareable; Obtain bounds it by the context's deadline
		// (or the TTL when there is none) instead of a try count. Without
		// it, Obtain does not retry (redislock's default).
		r.opts.RetryStrategy = sharedRetry{s}
	}
	return r, nil
}

// sharedRetry is Setup's retry pause as a redislock.RetryStrategy.
type sharedRetry struct{ s Setup }

func (r sharedRetry) NextBackoff() time.Duration { return r.s.retryDelay() }

func (r *redisLock) Name() string { return nameRedislock }
func (r *redisLock) Note() string {
	if r.defaults {
		return "single master (the first): not Redlock; defaults: no retry (NoRetry), a taken key fails Obtain at once and the loop calls it again"
	}
	return "single master (the first): not Redlock"
}

func (r *redisLock) LockUnlock(ctx context.Context, key string, ttl time.Duration) error {
	l, err := r.lc.Obtain(ctx, key, ttl, &r.opts)
	if err != nil {
		return err
	}
	return l.Release(ctx)
}

func (r *redisLock) NewHolder() Holder { return &redislockHolder{r: r} }

func (r *redisLock) Close() error { return r.cl.Close() }

type redislockHolder struct {
	r *redisLock
	l *redislock.Lock
}

func (h *redislockHolder) Lock(ctx context.Context, key string, ttl time.Duration) error {
	l, err := h.r.lc.Obtain(ctx, key, ttl, &h.r.opts)
	if err != nil {
		return err
	}
	h.l = l
	return nil
}

func (h *redislockHolder) Unlock(ctx context.Context) error {
	err := h.l.Release(ctx)
	h.l = nil
	return err
}
