package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	goredislib "github.com/redis/go-redis/v9"
)

// majorityCounter is the semaphore mode's naive peer, the obvious
// semaphore over several masters, written as a user would with go-redis:
// each master admits at most P tokens in a sorted set scored by their
// expiry (on the master's clock), and a holder needs a majority of
// admissions. Majorities of different holders need not share a master
// that counted them all (with 5 masters and 2 permits, three holders can
// each have 3 masters), so it can admit more than P holders: the mode
// shows it, it does not fail for it. The torture checker's own copy of
// the algorithm (its broken semaphore) proves the checker catches that.
type majorityCounter struct {
	clients []*goredislib.Client
	quorum  int
	permits int
}

// majorityAdmit drops KEYS[1]'s expired tokens, then admits ARGV[1] until
// ARGV[2] ms from now if fewer than ARGV[3] remain: 1, else 0.
var majorityAdmit = goredislib.NewScript(`local t=redis.call("time") local now=t[1]*1000+math.floor(t[2]/1000) redis.call("zremrangebyscore",KEYS[1],"-inf",now) if redis.call("zcard",KEYS[1])>=tonumber(ARGV[3]) then return 0 end redis.call("zadd",KEYS[1],now+tonumber(ARGV[2]),ARGV[1]) redis.call("pexpire",KEYS[1],ARGV[2]) return 1`)

func newMajorityCounter(s Setup) (Contender, error) {
	m := &majorityCounter{quorum: len(s.Addrs)/2 + 1, permits: s.Permits}
	for _, a := range s.Addrs {
		m.clients = append(m.clients, goredislib.NewClient(&goredislib.Options{Addr: a, PoolSize: s.PoolSize}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range m.clients {
		if err := c.Ping(ctx).Err(); err != nil {
			m.Close()
			return nil, fmt.Errorf("majority counter: %w", err)
		}
	}
	return m, nil
}

func (m *majorityCounter) Name() string { return nameMajorityCounter }

func (m *majorityCounter) Note() string {
	return "the naive semaphore, on go-redis: a sorted set per master admits at most P, a holder needs a majority; EVALSHA on each master one after another; its own retry pause, uniform in [0, 5ms), and no try limit; not safe by design"
}

// lock tries until ctx ends: the admission script on each master in
// turn; a majority of admissions holds, else it withdraws and tries
// again. It returns the sorted set's key and the holder's token.
func (m *majorityCounter) lock(ctx context.Context, name string, ttl time.Duration) (key, tok string, err error) {
	key = "majority:" + name
	for {
		tok = strconv.FormatUint(rand.Uint64(), 16)
		start := time.Now()
		ok := 0
		for _, c := range m.clients {
			if n, err := majorityAdmit.Run(ctx, c, []string{key}, tok, ttl.Milliseconds(), m.permits).Int(); err == nil && n == 1 {
				ok++
			}
		}
		drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
		if ok >= m.quorum && time.Since(start) < ttl-drift {
			return key, tok, nil
		}
		m.unlock(context.WithoutCancel(ctx), key, tok)
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("majority counter: %w", context.Cause(ctx))
		case <-time.After(rand.N(5 * time.Millisecond)):
		}
	}
}

// unlock withdraws tok from every master.
func (m *majorityCounter) unlock(ctx context.Context, key, tok string) {
	for _, c := range m.clients {
		c.ZRem(ctx, key, tok)
	}
}

func (m *majorityCounter) LockUnlock(ctx context.Context, key string, ttl time.Duration) error {
	k, tok, err := m.lock(ctx, key, ttl)
	if err != nil {
		return err
	}
	m.unlock(ctx, k, tok)
	return nil
}

func (m *majorityCounter) NewHolder() Holder { return &counterHolder{m: m} }

func (m *majorityCounter) Close() error {
	for _, c := range m.clients {
		c.Close()
	}
	return nil
}

// counterHolder holds one permit of a majorityCounter at a time.
type counterHolder struct {
	m        *majorityCounter
	key, tok string
}

func (h *counterHolder) Lock(ctx context.Context, key string, ttl time.Duration) error {
	k, tok, err := h.m.lock(ctx, key, ttl)
	if err != nil {
		return err
	}
	h.key, h.tok = k, tok
	return nil
}

func (h *counterHolder) Unlock(ctx context.Context) error {
	h.m.unlock(ctx, h.key, h.tok)
	h.key, h.tok = "", ""
	return nil
}
