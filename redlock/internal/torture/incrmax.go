package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/volleylock/volley/internal/pipe"
)

// incrMaxLocker is the obvious multi-master fencing, which is wrong: a
// correct Redlock (every key set with NX on each master, a quorum within
// the validity) whose token is the largest of the INCRs of a counter on
// the masters that granted it. An attempt that fails still bumps the
// counters of the masters it won, so counters drift apart, and a later
// holder whose quorum misses the high ones gets a smaller token. The
// fencing check must catch it; mutual exclusion it keeps.
type incrMaxLocker struct {
	conns   []*pipe.Conn
	tags    []string // over a Redis Cluster, per primary a hash tag of its slots; else nil
	quorum  int
	timeout time.Duration
	mu      sync.Mutex
	rng     *rand.Rand
}

// incrMaxCounter is the counter every master INCRs for a granted key set.
const incrMaxCounter = "torture:incrmax:counter"

// incrMaxLockScript sets every key but the last (the counter) to ARGV[1]
// for ARGV[2] ms if none exists, and returns the counter's INCR; -1 if a
// key was taken.
const incrMaxLockScript = `for i=1,#KEYS-1 do if redis.call("exists",KEYS[i])==1 then return -1 end end for i=1,#KEYS-1 do redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2]) end return redis.call("incr",KEYS[#KEYS])`

// incrMaxUnlockScript deletes every key that holds ARGV[1].
const incrMaxUnlockScript = `for i=1,#KEYS do if redis.call("get",KEYS[i])==ARGV[1] then redis.call("del",KEYS[i]) end end return 1`

// NewIncrMaxLocker returns the INCR-and-max Locker on addrs; masterTimeout
// bounds each round on each master.
func NewIncrMaxLocker(addrs []string, opts pipe.Options, masterTimeout time.Duration, seed uint64) (Locker, error) {
	l := &incrMaxLocker{quorum: len(addrs)/2 + 1, timeout: masterTimeout, rng: rand.New(rand.NewPCG(seed, 11))}
	for _, a := range addrs {
		o := opts
		o.Addr = a
		c, err := pipe.New(o)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.conns = append(l.conns, c)
	}
	return l, nil
}

// NewIncrMaxClusterLocker returns the INCR-and-max Locker over the Redis
// Cluster of entry's seed nodes (redis-cluster://host:port,...), each
// primary one master, its keys and its counter under a hash tag of its
// own slots: fencing over a cluster with a counter that is not the lock's
// copy's, which the fencing check must catch.
func NewIncrMaxClusterLocker(entry string, masterTimeout time.Duration, seed uint64) (Locker, error) {
	addrs := strings.Split(strings.TrimPrefix(entry, "redis-cluster://"), ",")
	lk, err := NewIncrMaxLocker(addrs, pipe.Options{ReadTimeout: 200 * time.Millisecond}, masterTimeout, seed)
	if err != nil {
		return nil, err
	}
	l := lk.(*incrMaxLocker)
	if l.tags, err = localTags(l.conns, "{incrmax"); err != nil {
		l.Close()
		return nil, fmt.Errorf("torture: INCR-and-max cluster locker: %w", err)
	}
	return l, nil
}

// key is key as master i stores it.
func (l *incrMaxLocker) key(i int, key string) string {
	if l.tags == nil {
		return key
	}
	return l.tags[i] + key
}

func (l *incrMaxLocker) WaitReady(ctx context.Context) error {
	for _, c := range l.conns {
		if err := c.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (l *incrMaxLocker) Close() error {
	for _, c := range l.conns {
		c.Close()
	}
	return nil
}

func (l *incrMaxLocker) Lock(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	return l.LockMulti(ctx, []string{key}, ttl)
}

// LockMulti attempts until it wins a quorum or ctx ends.
func (l *incrMaxLocker) LockMulti(ctx context.Context, keys []string, ttl time.Duration) (Held, error) {
	for {
		if h := l.attempt(ctx, keys, ttl); h != nil {
			return h, nil
		}
		l.mu.Lock()
		pause := time.Duration(2+l.rng.IntN(10)) * time.Millisecond
		l.mu.Unlock()
		if !sleepCtx(ctx, pause) {
			return nil, ctx.Err()
		}
	}
}

// attempt is one round on every master at once; nil if it did not win.
func (l *incrMaxLocker) attempt(ctx context.Context, keys []string, ttl time.Duration) *incrMaxHeld {
	l.mu.Lock()
	tok := strconv.FormatUint(l.rng.Uint64(), 16)
	l.mu.Unlock()
	start := time.Now()
	counters := make([]int64, len(l.conns))
	var wg sync.WaitGroup
	for i, c := range l.conns {
		args := []any{"EVAL", incrMaxLockScript, len(keys) + 1}
		for _, k := range keys {
			args = append(args, l.key(i, k))
		}
		args = append(args, l.key(i, incrMaxCounter), tok, ttl.Milliseconds())
		wg.Go(func() { // joined below
			rctx, cancel := context.WithTimeout(ctx, l.timeout)
			defer cancel()
			counters[i] = -1
			if vals, err := c.Do(rctx, args...); err == nil && !vals[0].IsError() {
				counters[i] = vals[0].Int
			}
		})
	}
	wg.Wait()
	won, fence := 0, int64(0)
	for _, n := range counters {
		if n > 0 {
			won++
			fence = max(fence, n)
		}
	}
	drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
	h := &incrMaxHeld{l: l, keys: keys, tok: tok, start: start, until: start.Add(ttl - drift), fence: uint64(fence)}
	if won >= l.quorum && time.Now().Before(h.until) {
		return h
	}
	h.Unlock(context.WithoutCancel(ctx))
	return nil
}

type incrMaxHeld struct {
	l            *incrMaxLocker
	keys         []string
	tok          string
	start, until time.Time
	fence        uint64
}

func (h *incrMaxHeld) Started() time.Time { return h.start }
func (h *incrMaxHeld) Until() time.Time   { return h.until }
func (h *incrMaxHeld) Votes() string      { return "" }
func (h *incrMaxHeld) Fence() uint64      { return h.fence }

var errIncrMaxNoExtend = errors.New("incr-max: no extend")

func (h *incrMaxHeld) Extend(context.Context, time.Duration) error { return errIncrMaxNoExtend }

func (h *incrMaxHeld) Unlock(ctx context.Context) error {
	var wg sync.WaitGroup
	for i, c := range h.l.conns {
		args := []any{"EVAL", incrMaxUnlockScript, len(h.keys)}
		for _, k := range h.keys {
			args = append(args, h.l.key(i, k))
		}
		args = append(args, h.tok)
		wg.Go(func() { // joined below
			rctx, cancel := context.WithTimeout(ctx, h.l.timeout)
			defer cancel()
			c.Do(rctx, args...)
		})
	}
	wg.Wait()
	return nil
}
