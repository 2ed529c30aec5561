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
	"github.com/volleylock/volley/redlock"
	"github.com/volleylock/volley/resp"
)

// Locker is a lock client under test: one per simulated client process.
type Locker interface {
	// Lock acquires key for ttl, retrying until ctx ends.
	Lock(ctx context.Context, key string, ttl time.Duration) (Held, error)
	// LockMulti acquires all of keys, or none, as one lock.
	LockMulti(ctx context.Context, keys []string, ttl time.Duration) (Held, error)
	// WaitReady waits until the Locker can grant locks (connected, and
	// past the restart guard's window).
	WaitReady(ctx context.Context) error
	Close() error
}

// DoLocker is a Locker that also runs a function under a lock it keeps
// extended (redlock's Client.Do), for Config.DoShare.
type DoLocker interface {
	Locker
	Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error
}

// Held is a lock a Locker granted.
type Held interface {
	// Started is the earliest moment any vote counted for this lock can
	// have been cast: no master was asked before it.
	Started() time.Time
	// Until is the end of the validity.
	Until() time.Time
	Extend(ctx context.Context, ttl time.Duration) error
	Unlock(ctx context.Context) error
	// Votes describes each master's answer to the acquisition and to the
	// latest successful extension, for the report of a violation; "" if
	// the Locker cannot tell.
	Votes() string
	// Fence is the lock's fencing token; 0 if it has none.
	Fence() uint64
}

// redlockLocker is the real thing.
type redlockLocker struct {
	c     *redlock.Client
	drift float64
}

// NewRedlockLocker returns a Locker backed by redlock.New(ctx, cfg); it
// waits at most 10s for the masters' first connects.
func NewRedlockLocker(cfg redlock.Config) (Locker, error) {
	if cfg.DriftFactor == 0 {
		cfg.DriftFactor = 0.01
	}
	if cfg.Hooks.Call == nil {
		cfg.Hooks.Call = recordVotes
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redlock.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &redlockLocker{c: c, drift: cfg.DriftFactor}, nil
}

func (r *redlockLocker) Lock(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	h := &redlockHeld{drift: r.drift}
	l, err := r.c.Lock(context.WithValue(ctx, votesKey{}, &h.lockVotes), key, ttl)
	if err != nil {
		return nil, err
	}
	h.l = l
	return h, nil
}

func (r *redlockLocker) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return r.c.Do(ctx, key, ttl, fn)
}

func (r *redlockLocker) LockMulti(ctx context.Context, keys []string, ttl time.Duration) (Held, error) {
	h := &redlockHeld{drift: r.drift}
	l, err := r.c.LockMulti(context.WithValue(ctx, votesKey{}, &h.lockVotes), keys, ttl)
	if err != nil {
		return nil, err
	}
	h.l = l
	return h, nil
}

// votesKey marks a context carrying a *string that recordVotes fills.
type votesKey struct{}

// recordVotes is the torture's Hooks.Call: when the call's context carries
// a *string (see votesKey), it writes there each master's outcome and
// latency, so that a violation can show who voted for whom.
func recordVotes(ctx context.Context, _ redlock.Op, _ string) (context.Context, func(redlock.CallEnd)) {
	dst, ok := ctx.Value(votesKey{}).(*string)
	if !ok {
		return ctx, nil
	}
	return ctx, func(e redlock.CallEnd) {
		var b strings.Builder
		for i, n := range e.Masters {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "m%d %s", i, n.Outcome)
			if n.Outcome != redlock.OutcomeNone && n.Latency > 0 {
				fmt.Fprintf(&b, " %.1fms", float64(n.Latency.Microseconds())/1000)
			}
		}
		*dst = b.String()
	}
}

func (r *redlockLocker) WaitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		ready := true
		for _, m := range r.c.Masters() {
			if m.Err != nil || !m.Guard.IsZero() {
				ready = false
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

func (r *redlockLocker) Close() error { return r.c.Close() }

type redlockHeld struct {
	l           redlock.Lock
	drift       float64
	lockVotes   string // each master's answer to the acquisition
	extendVotes string // ... and to the latest extension that succeeded
}

// Started recovers the burst's start from the validity redlock computed:
// until = start + ttl - (ttl*drift + 2ms).
func (h *redlockHeld) Started() time.Time {
	ttl := h.l.TTL()
	return h.l.Until().Add(-(ttl - time.Duration(float64(ttl)*h.drift) - 2*time.Millisecond))
}
func (h *redlockHeld) Until() time.Time { return h.l.Until() }
func (h *redlockHeld) Extend(ctx context.Context, ttl time.Duration) error {
	var votes string
	err := h.l.Extend(context.WithValue(ctx, votesKey{}, &votes), ttl)
	if err == nil {
		h.extendVotes = votes
	}
	return err
}

func (h *redlockHeld) Votes() string {
	if h.extendVotes == "" {
		return "lock: " + h.lockVotes
	}
	return "lock: " + h.lockVotes + "; latest extend: " + h.extendVotes
}
func (h *redlockHeld) Unlock(ctx context.Context) error { return h.l.Unlock(ctx) }
func (h *redlockHeld) Fence() uint64                    { return h.l.Fence() }

// brokenLocker is a deliberately wrong lock: SET without NX on every
// master, so it "acquires" whatever others hold. The checker must catch it.
type brokenLocker struct {
	conns  []*pipe.Conn
	tags   []string // per master, what its keys start with ("" but on a cluster)
	mu     sync.Mutex
	rng    *rand.Rand
	quorum int
}

// NewBrokenClusterLocker returns the broken Locker on the primaries of a
// Redis Cluster, entry's seed nodes (redis-cluster://host:port,...), each
// of which must be a primary: on each, the keys carry a hash tag of a slot
// it owns, found by asking it (a GET answered with MOVED names a slot of
// another).
func NewBrokenClusterLocker(entry string, seed uint64) (Locker, error) {
	addrs := strings.Split(strings.TrimPrefix(entry, "redis-cluster://"), ",")
	lk, err := NewBrokenLocker(addrs, pipe.Options{ReadTimeout: 200 * time.Millisecond}, seed)
	if err != nil {
		return nil, err
	}
	b := lk.(*brokenLocker)
	if b.tags, err = localTags(b.conns, "{broken"); err != nil {
		b.Close()
		return nil, fmt.Errorf("torture: broken cluster locker: %w", err)
	}
	return b, nil
}

// localTags returns, per cluster node of conns, a hash tag of its own
// slots: prefix, a number, "}" (the first such number that the node
// answers for without MOVED). It waits at most 10s for the connections.
func localTags(conns []*pipe.Conn, prefix string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var tags []string
	for _, c := range conns {
		if err := c.WaitReady(ctx); err != nil {
			return nil, err
		}
		for j := 0; ; j++ {
			tag := prefix + strconv.Itoa(j) + "}"
			_, err := c.Do(ctx, "GET", tag)
			if err == nil {
				tags = append(tags, tag)
				break
			}
			var se *resp.ServerError
			if !errors.As(err, &se) || se.Prefix != "MOVED" {
				return nil, err
			}
		}
	}
	return tags, nil
}

// key is key as master i stores it.
func (b *brokenLocker) key(i int, key string) string {
	if b.tags == nil {
		return key
	}
	return b.tags[i] + key
}

// NewBrokenLocker returns the broken Locker on addrs.
func NewBrokenLocker(addrs []string, opts pipe.Options, seed uint64) (Locker, error) {
	b := &brokenLocker{rng: rand.New(rand.NewPCG(seed, 7)), quorum: len(addrs)/2 + 1}
	for _, a := range addrs {
		o := opts
		o.Addr = a
		c, err := pipe.New(o)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.conns = append(b.conns, c)
	}
	return b, nil
}

func (b *brokenLocker) WaitReady(ctx context.Context) error {
	for _, c := range b.conns {
		if err := c.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (b *brokenLocker) Close() error {
	for _, c := range b.conns {
		c.Close()
	}
	return nil
}

var errBrokenNoQuorum = errors.New("broken: no quorum")

func (b *brokenLocker) Lock(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	return b.LockMulti(ctx, []string{key}, ttl)
}

// LockMulti sets every key, without NX, on every master: as wrong as Lock.
func (b *brokenLocker) LockMulti(ctx context.Context, keys []string, ttl time.Duration) (Held, error) {
	b.mu.Lock()
	tok := make([]byte, 16)
	for i := range tok {
		tok[i] = byte(b.rng.Uint32())
	}
	b.mu.Unlock()
	start := time.Now()
	ok := 0
	for i, c := range b.conns {
		set := 0
		for _, key := range keys {
			if _, err := c.Do(ctx, "SET", b.key(i, key), tok, "PX", ttl.Milliseconds()); err == nil {
				set++
			}
		}
		if set == len(keys) {
			ok++
		}
	}
	if ok < b.quorum {
		return nil, errBrokenNoQuorum
	}
	drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
	return &brokenHeld{b: b, keys: keys, tok: tok, start: start, until: start.Add(ttl - drift)}, nil
}

type brokenHeld struct {
	b            *brokenLocker
	keys         []string
	tok          []byte
	start, until time.Time
}

func (h *brokenHeld) Started() time.Time { return h.start }
func (h *brokenHeld) Votes() string      { return "" }
func (h *brokenHeld) Fence() uint64      { return 0 }
func (h *brokenHeld) Until() time.Time   { return h.until }
func (h *brokenHeld) Extend(context.Context, time.Duration) error {
	return errors.New("broken: no extend")
}

func (h *brokenHeld) Unlock(ctx context.Context) error {
	for i, c := range h.b.conns {
		for _, key := range h.keys {
			c.Do(ctx, "EVAL", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, 1, h.b.key(i, key), h.tok)
		}
	}
	return nil
}
