package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/redlock"
)

// Semaphores under torture (Config.Permits): every key is a semaphore of
// Permits permits, Lock takes one of its permits, and the checker counts
// the holders of a key at each moment (NewCountingChecker).

// errNoMulti: a semaphore Locker has no LockMulti (Config.Permits sets
// MultiKey to 0).
var errNoMulti = errors.New("torture: a semaphore has no multi-key lock")

// semaphoreLocker takes redlock Semaphore permits: Lock(key) is
// Semaphore(key, permits).Acquire.
type semaphoreLocker struct {
	*redlockLocker
	permits int
	mu      sync.Mutex
	sems    map[string]*redlock.Semaphore
}

// NewSemaphoreLocker returns a Locker whose Lock(key) takes a permit of the
// redlock Semaphore key of permits permits, on a redlock.Client made as
// NewRedlockLocker makes it.
func NewSemaphoreLocker(cfg redlock.Config, permits int) (Locker, error) {
	lk, err := NewRedlockLocker(cfg)
	if err != nil {
		return nil, err
	}
	return &semaphoreLocker{redlockLocker: lk.(*redlockLocker), permits: permits, sems: map[string]*redlock.Semaphore{}}, nil
}

func (s *semaphoreLocker) semaphore(key string) (*redlock.Semaphore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sem := s.sems[key]; sem != nil {
		return sem, nil
	}
	sem, err := s.c.Semaphore(key, s.permits)
	if err != nil {
		return nil, err
	}
	s.sems[key] = sem
	return sem, nil
}

func (s *semaphoreLocker) Lock(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	sem, err := s.semaphore(key)
	if err != nil {
		return nil, err
	}
	h := &permitHeld{drift: s.drift}
	p, err := sem.Acquire(context.WithValue(ctx, votesKey{}, &h.lockVotes), ttl)
	if err != nil {
		return nil, err
	}
	h.p = p
	return h, nil
}

func (s *semaphoreLocker) LockMulti(context.Context, []string, time.Duration) (Held, error) {
	return nil, errNoMulti
}

// permitHeld is a redlock Permit.
type permitHeld struct {
	p           redlock.Permit
	drift       float64
	lockVotes   string
	extendVotes string
}

// Started recovers the burst's start from the validity, as
// redlockHeld.Started does.
func (h *permitHeld) Started() time.Time {
	ttl := h.p.TTL()
	return h.p.Until().Add(-(ttl - time.Duration(float64(ttl)*h.drift) - 2*time.Millisecond))
}
func (h *permitHeld) Until() time.Time { return h.p.Until() }
func (h *permitHeld) Extend(ctx context.Context, ttl time.Duration) error {
	var votes string
	err := h.p.Extend(context.WithValue(ctx, votesKey{}, &votes), ttl)
	if err == nil {
		h.extendVotes = votes
	}
	return err
}
func (h *permitHeld) Votes() string {
	v := "permit " + strconv.Itoa(h.p.Index()) + ": " + h.lockVotes
	if h.extendVotes != "" {
		v += "; latest extend: " + h.extendVotes
	}
	return v
}
func (h *permitHeld) Unlock(ctx context.Context) error { return h.p.Release(ctx) }
func (h *permitHeld) Fence() uint64                    { return h.p.Fence() }
func (h *permitHeld) Slot() int                        { return h.p.Index() }

// majorityCounter is the obvious semaphore over several masters, which is
// wrong: each master admits at most permits holders (a sorted set of
// tokens scored by their expiry, on the master's clock), and a client
// holds a permit when a majority of masters admitted it. Majorities of
// different holders need not share a master that counted them all: with
// 5 masters and 2 permits, three holders can each have 3 masters
// (9 <= 10 admissions). The counting checker must catch it.
type majorityCounter struct {
	conns   []*pipe.Conn
	quorum  int
	permits int
	mu      sync.Mutex
	rng     *rand.Rand
}

// majorityAdmitScript drops KEYS[1]'s expired tokens, then admits ARGV[1]
// until ARGV[2] ms from now if fewer than ARGV[3] remain: 1, else 0.
const majorityAdmitScript = `local t=redis.call("time") local now=t[1]*1000+math.floor(t[2]/1000) redis.call("zremrangebyscore",KEYS[1],"-inf",now) if redis.call("zcard",KEYS[1])>=tonumber(ARGV[3]) then return 0 end redis.call("zadd",KEYS[1],now+tonumber(ARGV[2]),ARGV[1]) redis.call("pexpire",KEYS[1],ARGV[2]) return 1`

// NewMajorityCounterLocker returns the majority-quorum counting semaphore
// of permits permits on addrs.
func NewMajorityCounterLocker(addrs []string, opts pipe.Options, permits int, seed uint64) (Locker, error) {
	m := &majorityCounter{quorum: len(addrs)/2 + 1, permits: permits, rng: rand.New(rand.NewPCG(seed, 13))}
	for _, a := range addrs {
		o := opts
		o.Addr = a
		c, err := pipe.New(o)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.conns = append(m.conns, c)
	}
	return m, nil
}

func (m *majorityCounter) WaitReady(ctx context.Context) error {
	for _, c := range m.conns {
		if err := c.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (m *majorityCounter) Close() error {
	for _, c := range m.conns {
		c.Close()
	}
	return nil
}

func (m *majorityCounter) LockMulti(context.Context, []string, time.Duration) (Held, error) {
	return nil, errNoMulti
}

// Lock tries until ctx ends: on each master in turn, the admission script;
// a majority of admissions holds, else it withdraws and tries again.
func (m *majorityCounter) Lock(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	for {
		m.mu.Lock()
		tok := strconv.FormatUint(m.rng.Uint64(), 16)
		backoff := time.Duration(m.rng.Int64N(int64(5 * time.Millisecond)))
		m.mu.Unlock()
		key := "majority:" + key
		start := time.Now()
		ok := 0
		for _, c := range m.conns {
			v, err := c.Do(ctx, "EVAL", majorityAdmitScript, 1, key, tok, ttl.Milliseconds(), m.permits)
			if err == nil && len(v) > 0 && v[0].Int == 1 {
				ok++
			}
		}
		drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
		h := &counterHeld{m: m, key: key, tok: tok, start: start, until: start.Add(ttl - drift)}
		if ok >= m.quorum && time.Now().Before(h.until) {
			return h, nil
		}
		h.Unlock(context.WithoutCancel(ctx))
		if !sleepCtx(ctx, backoff) {
			return nil, fmt.Errorf("majority counter: %w", context.Cause(ctx))
		}
	}
}

type counterHeld struct {
	m            *majorityCounter
	key, tok     string
	start, until time.Time
}

func (h *counterHeld) Started() time.Time { return h.start }
func (h *counterHeld) Until() time.Time   { return h.until }
func (h *counterHeld) Votes() string      { return "" }
func (h *counterHeld) Fence() uint64      { return 0 }
func (h *counterHeld) Extend(context.Context, time.Duration) error {
	return errors.New("majority counter: no extend")
}
func (h *counterHeld) Unlock(ctx context.Context) error {
	for _, c := range h.m.conns {
		c.Do(ctx, "ZREM", h.key, h.tok)
	}
	return nil
}
