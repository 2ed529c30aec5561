package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// masterDo runs one command on s over a connection of its own.
func masterDo(t *testing.T, s *redistest.Server, args ...any) (resp.Value, error) {
	t.Helper()
	c, err := pipe.Dial(bg, pipe.Options{Addr: s.Addr()})
	require.NoError(t, err)
	defer c.Close()
	vals, err := c.Do(bg, args...)
	if err != nil {
		return resp.Value{}, err
	}
	return vals[0], nil
}

// exists is EXISTS key on s.
func exists(t *testing.T, s *redistest.Server, key string) int {
	t.Helper()
	v, err := masterDo(t, s, "EXISTS", key)
	require.NoError(t, err)
	return int(v.Int)
}

func TestLockMultiAllOrNone(t *testing.T) {
	servers := masters(t, 3)
	a := client(t, servers, Config{Tries: 1})
	b := client(t, servers, Config{Tries: 1})
	const ttl = 10 * time.Second

	keys := []string{"m:c", "m:a", "m:b", "m:a"}
	l, err := a.LockMulti(bg, keys, ttl)
	require.NoError(t, err)
	assert.Equal(t, []string{"m:a", "m:b", "m:c"}, l.Keys(), "sorted, deduplicated")
	assert.Equal(t, []string{"m:c", "m:a", "m:b", "m:a"}, keys, "the caller's slice is not modified")
	assert.Equal(t, "m:a", l.Key())
	assert.Greater(t, l.Validity(), ttl*9/10)
	// All keys or none on each master (one that answered after the
	// quorum, NOSCRIPT on its first script, may have none), all on a quorum.
	holding := 0
	for _, s := range servers {
		n := 0
		for _, k := range l.Keys() {
			n += exists(t, s, k)
		}
		assert.Contains(t, []int{0, 3}, n, "keys on %s", s.Addr())
		if n == 3 {
			holding++
		}
	}
	assert.GreaterOrEqual(t, holding, a.Quorum())

	// Overlapping sets and single keys inside the set are taken; the
	// failed attempt leaves nothing behind on the free keys.
	_, err = b.TryLockMulti(bg, []string{"m:c", "m:d"}, ttl)
	require.ErrorIs(t, err, ErrNotAcquired)
	_, err = b.TryLock(bg, "m:b", ttl)
	require.ErrorIs(t, err, ErrNotAcquired)
	for _, s := range servers {
		assert.Equal(t, 0, exists(t, s, "m:d"), "a refused multi-lock set nothing")
	}
	// A disjoint set is free.
	other, err := b.TryLockMulti(bg, []string{"m:d", "m:e"}, ttl)
	require.NoError(t, err)
	require.NoError(t, other.Unlock(bg))

	require.NoError(t, l.Extend(bg, 20*time.Second))
	assert.Greater(t, l.Validity(), 18*time.Second)
	require.NoError(t, l.Unlock(bg))
	for _, s := range servers {
		for _, k := range []string{"m:a", "m:b", "m:c"} {
			assert.Equal(t, 0, exists(t, s, k), "%s on %s after Unlock", k, s.Addr())
		}
	}
	assert.Nil(t, l.Keys(), "an unlocked multi-key lock holds nothing")
	require.ErrorIs(t, l.Unlock(bg), ErrNotHeld)
	require.ErrorIs(t, l.Extend(bg, ttl), ErrNotHeld)

	again, err := b.TryLockMulti(bg, []string{"m:c", "m:d"}, ttl)
	require.NoError(t, err)
	require.NoError(t, again.Unlock(bg))
}

func TestLockMultiArguments(t *testing.T) {
	servers := masters(t, 1)
	c := client(t, servers, Config{Tries: 1})
	_, err := c.LockMulti(bg, nil, time.Second)
	require.ErrorIs(t, err, ErrNoKeys)
	many := make([]string, MaxKeys+1)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
	}
	_, err = c.LockMulti(bg, many, time.Second)
	require.ErrorContains(t, err, "MaxKeys")
	_, err = c.LockMulti(bg, []string{"a"}, 0)
	require.ErrorContains(t, err, "TTL")

	// MaxKeys keys are allowed, and one distinct key is a plain lock.
	l, err := c.LockMulti(bg, many[:MaxKeys], time.Second)
	require.NoError(t, err)
	assert.Len(t, l.Keys(), MaxKeys)
	require.NoError(t, l.Unlock(bg))
	one, err := c.LockMulti(bg, []string{"solo", "solo"}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{"solo"}, one.Keys())
	v, err := masterDo(t, servers[0], "TYPE", "solo")
	require.NoError(t, err)
	assert.Equal(t, "string", string(v.Bytes))
	require.NoError(t, one.Unlock(bg))
}

// TestExtendMultiLostKey: a multi-key lock is lost as a whole when one key
// is gone from a quorum.
func TestExtendMultiLostKey(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{Tries: 1})
	l, err := c.LockMulti(bg, []string{"x:1", "x:2"}, 10*time.Second)
	require.NoError(t, err)
	for _, s := range servers[:2] {
		_, err := masterDo(t, s, "DEL", "x:2")
		require.NoError(t, err)
	}
	require.ErrorIs(t, l.Extend(bg, 10*time.Second), ErrNotHeld)
	// Unlock deletes what is still ours (x:1 everywhere, x:2 on one).
	require.ErrorIs(t, l.Unlock(bg), ErrNotHeld)
	for _, s := range servers {
		assert.Equal(t, 0, exists(t, s, "x:1"), "x:1 left on %s", s.Addr())
		assert.Equal(t, 0, exists(t, s, "x:2"), "x:2 left on %s", s.Addr())
	}
}

// TestLockMultiMutualExclusion: goroutines of two clients lock random
// overlapping pairs of keys; no key is ever held by two at once.
func TestLockMultiMutualExclusion(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	servers := masters(t, 3)
	clients := []*Client{
		client(t, servers, Config{RetryDelay: 2 * time.Millisecond, Tries: 1000}),
		client(t, servers, Config{RetryDelay: 2 * time.Millisecond, Tries: 1000}),
	}
	const nkeys = 4
	var holders [nkeys]atomic.Int32
	var overlaps, rounds atomic.Int32
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%2]
			for i := 0; ctx.Err() == nil; i++ {
				k1, k2 := (g+i)%nkeys, (g+2*i+1)%nkeys
				if k1 == k2 {
					k2 = (k2 + 1) % nkeys
				}
				l, err := c.LockMulti(ctx, []string{fmt.Sprint("mx:", k1), fmt.Sprint("mx:", k2)}, 5*time.Second)
				if err != nil {
					continue
				}
				for _, k := range []int{k1, k2} {
					if holders[k].Add(1) != 1 {
						overlaps.Add(1)
					}
				}
				time.Sleep(100 * time.Microsecond)
				for _, k := range []int{k1, k2} {
					holders[k].Add(-1)
				}
				// An Unlock that a loaded machine's masters answer too late
				// is not confirmed (ErrUnlockFailed); never may it find the
				// lock gone: its TTL is 5 s.
				if err := l.Unlock(bg); !errors.Is(err, ErrUnlockFailed) {
					require.NoError(t, err)
				}
				rounds.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, overlaps.Load())
	assert.Greater(t, rounds.Load(), int32(20))
}

func TestLockMultiNoScriptFallsBackToEval(t *testing.T) {
	servers, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{})
	for _, s := range servers {
		s.SetFault("EVALSHA", fakeredis.Fault{NoScript: true, Times: 1})
	}
	l, err := c.TryLockMulti(bg, []string{"f:1", "f:2"}, 10*time.Second)
	require.NoError(t, err)
	for _, s := range servers {
		s.SetFault("EVALSHA", fakeredis.Fault{NoScript: true, Times: 1})
	}
	require.NoError(t, l.Extend(bg, 10*time.Second))
	require.NoError(t, l.Unlock(bg))
	for _, s := range servers {
		require.Eventually(t, func() bool { return s.Keys() == 0 }, 5*time.Second, time.Millisecond,
			"unlock left keys on %s", s.Addr())
	}
}

func TestLockMultiErrorNamesFirstKey(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{Tries: 1, MasterTimeout: 50 * time.Millisecond})
	servers[0].Stop()
	servers[1].Stop()
	_, err := c.TryLockMulti(bg, []string{"z", "y"}, time.Second)
	var e *Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, "y", e.Key)
	assert.ErrorIs(t, err, ErrNoQuorum)
}

func TestDoMulti(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{Tries: 1})
	ran := false
	err := c.DoMulti(bg, []string{"d:2", "d:1"}, 150*time.Millisecond, func(ctx context.Context) error {
		ran = true
		_, err := c.TryLock(bg, "d:1", time.Second)
		require.ErrorIs(t, err, ErrNotAcquired, "held by DoMulti")
		time.Sleep(400 * time.Millisecond) // past the TTL: extended meanwhile
		_, err = c.TryLockMulti(bg, []string{"d:2", "d:3"}, time.Second)
		require.ErrorIs(t, err, ErrNotAcquired, "still held after the TTL")
		return ctx.Err()
	})
	require.NoError(t, err)
	assert.True(t, ran)
	l, err := c.TryLockMulti(bg, []string{"d:1", "d:2"}, time.Second)
	require.NoError(t, err, "released when fn returned")
	require.NoError(t, l.Unlock(bg))
	require.ErrorIs(t, c.DoMulti(bg, nil, time.Second, func(context.Context) error { return nil }), ErrNoKeys)
}

func TestInspect(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{Tries: 1})
	other := client(t, servers, Config{Tries: 1})

	states := inspectAll(t, func(ctx context.Context) ([]KeyState, error) { return c.Inspect(ctx, "i:1") }, nil)
	require.Len(t, states, 3)
	for i, s := range states {
		assert.Equal(t, KeyState{Key: "i:1", Addr: servers[i].Addr()}, s, "a free key")
	}

	l, err := c.LockMulti(bg, []string{"i:2", "i:1"}, 10*time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the third master may answer after the quorum
		states, err := l.Inspect(bg)
		return err == nil && len(states) == 6 && !slices.ContainsFunc(states, func(s KeyState) bool { return !s.Ours })
	}, 5*time.Second, time.Millisecond)
	states = inspectAll(t, l.Inspect, nil)
	for i, s := range states {
		assert.Equal(t, []string{"i:1", "i:2"}[i/3], s.Key)
		assert.True(t, s.Exists && s.Ours, "%+v", s)
		assert.InDelta(t, 10*time.Second, s.TTL, float64(time.Second))
	}
	// Another client sees the keys, but not as its own.
	states = inspectAll(t, func(ctx context.Context) ([]KeyState, error) { return other.Inspect(ctx, "i:2") }, nil)
	for _, s := range states {
		assert.True(t, s.Exists)
		assert.False(t, s.Ours)
	}

	// A master that is down is named, the others still answer.
	servers[2].Stop()
	states, err = l.Inspect(bg)
	require.NoError(t, err)
	for i, s := range states {
		if i%3 == 2 {
			assert.Error(t, s.Err)
		} else {
			assert.True(t, s.Ours)
		}
	}
	require.NoError(t, l.Unlock(bg))
	_, err = l.Inspect(bg)
	require.ErrorIs(t, err, ErrNotHeld)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err = c.Inspect(ctx, "i:1")
	require.ErrorIs(t, err, context.Canceled)
}

// TestInspectHungMaster: a master that never answers costs MasterTimeout, and
// its requests are given back (the leak check at exit sees no goroutine).
func TestInspectHungMaster(t *testing.T) {
	servers, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{MasterTimeout: 50 * time.Millisecond})
	servers[1].SetFault("GET", fakeredis.Fault{Hang: true})
	start := time.Now()
	states, err := c.Inspect(bg, "h")
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.NoError(t, states[0].Err)
	assert.ErrorIs(t, states[1].Err, errNoAnswer)
	assert.NoError(t, states[2].Err)
}
