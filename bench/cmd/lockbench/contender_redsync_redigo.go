package main

import (
	"context"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/redigo"
	redigolib "github.com/gomodule/redigo/redis"
)

const nameRedsyncRedigo = "redsync-redigo"

// redsyncRedigo is redsync with one redigo pool per master.
type redsyncRedigo struct {
	rs       *redsync.Redsync
	pools    []*redigolib.Pool
	opts     []redsync.Option
	defaults bool
}

func newRedsyncRedigo(s Setup) (Contender, error) {
	c := &redsyncRedigo{}
	pools := make([]redsyncredis.Pool, 0, len(s.Addrs))
	for _, a := range s.Addrs {
		p := &redigolib.Pool{
			MaxIdle:     s.PoolSize,
			MaxActive:   s.PoolSize,
			Wait:        true,
			IdleTimeout: time.Minute,
			DialContext: func(ctx context.Context) (redigolib.Conn, error) {
				return redigolib.DialContext(ctx, "tcp", a,
					redigolib.DialReadTimeout(3*time.Second),
					redigolib.DialWriteTimeout(3*time.Second))
			},
		}
		c.pools = append(c.pools, p)
		pools = append(pools, redigo.NewPool(p))
	}
	c.rs = redsync.New(pools...)
	c.opts = redsyncOptions(s)
	c.defaults = s.Defaults
	return c, nil
}

func (c *redsyncRedigo) Name() string { return nameRedsyncRedigo }
func (c *redsyncRedigo) Note() string { return redsyncNote(c.defaults, "redigo pool per master") }

func (c *redsyncRedigo) LockUnlock(ctx context.Context, key string, _ time.Duration) error {
	return redsyncLockUnlock(ctx, c.rs.NewMutex(key, c.opts...))
}

func (c *redsyncRedigo) NewHolder() Holder { return &redsyncHolder{rs: c.rs, opts: c.opts} }

func (c *redsyncRedigo) Close() error {
	var first error
	for _, p := range c.pools {
		if err := p.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
