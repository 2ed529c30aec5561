package redlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/slot"
)

// counterAt reads copy i's fencing counter of key where c keeps it: the
// counter in the copy's slot, on the slot's node; ok false when there is
// none.
func counterAt(t *testing.T, c *Client, i int, key string) (n uint64, ok bool) {
	t.Helper()
	addr, tag := copyAt(c, i, key)
	vals, err := redistest.Do(addr, "GET", tag+fenceKey)
	require.NoError(t, err)
	if vals[0].Null {
		return 0, false
	}
	n, err = strconv.ParseUint(string(vals[0].Bytes), 10, 64)
	require.NoError(t, err)
	return n, true
}

// TestClusterFencing: over a 3-primary cluster, fenced locks of every
// kind (a Lock, a multi-key lock of keys that share a hash tag, a
// read-write lock's writer, a semaphore's permit) take tokens that grow
// from one holder to the next, across two Clients. Each copy's counter
// lives in the slot of the lock's copy (under its tag, moving with it), a
// quorum of them hold at least the last token, and no node has an
// untagged one.
func TestClusterFencing(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
	cfg := Config{Fencing: true, RetryDelay: 10 * time.Millisecond}
	a := clusterClient(t, cl, cfg)
	b := clusterClient(t, cl, cfg)
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()

	rwA, err := a.RWMutex("{fk}rw")
	require.NoError(t, err)
	rwB, err := b.RWMutex("{fk}rw")
	require.NoError(t, err)
	semA, err := a.Semaphore("{fk}sem", 1)
	require.NoError(t, err)
	semB, err := b.Semaphore("{fk}sem", 1)
	require.NoError(t, err)
	kinds := map[string]func(c *Client) (uint64, func() error){
		"lock": func(c *Client) (uint64, func() error) {
			l, err := c.Lock(ctx, "{fk}lock", time.Second)
			require.NoError(t, err)
			return l.Fence(), func() error { return l.Unlock(bg) }
		},
		"multi": func(c *Client) (uint64, func() error) {
			l, err := c.LockMulti(ctx, []string{"{fk}a", "{fk}b"}, time.Second)
			require.NoError(t, err)
			return l.Fence(), func() error { return l.Unlock(bg) }
		},
		"writer": func(c *Client) (uint64, func() error) {
			rw := rwA
			if c == b {
				rw = rwB
			}
			l, err := rw.Lock(ctx, time.Second)
			require.NoError(t, err)
			return l.Fence(), func() error { return l.Unlock(bg) }
		},
		"permit": func(c *Client) (uint64, func() error) {
			s := semA
			if c == b {
				s = semB
			}
			p, err := s.Acquire(ctx, time.Second)
			require.NoError(t, err)
			return p.Fence(), func() error { return p.Release(bg) }
		},
	}
	for name, take := range kinds {
		var last uint64
		for round := range 6 {
			c := a
			if round%2 == 1 {
				c = b
			}
			fence, release := take(c)
			require.Greater(t, fence, last, "%s, round %d: a token not above the last holder's", name, round)
			last = fence
			require.NoError(t, release())
		}
		// Every copy has a counter in its slot; a quorum of them (2 of 3)
		// hold the last token. Not every copy need: a copy that missed the
		// last holder's round (late under load, or still holding a permit
		// whose release it had not yet run) was not raised by it, and the
		// argument rests on quorums alone.
		holding := 0
		for i := range 3 {
			n, ok := counterAt(t, a, i, "{fk}")
			require.True(t, ok, "%s: copy %d has no counter in its slot", name, i)
			if n >= last {
				holding++
			}
		}
		assert.GreaterOrEqual(t, holding, 2, "%s: fewer than a quorum of copies' counters hold the last token %d", name, last)
	}
	for _, p := range cl.Primaries() {
		vals, err := redistest.Do(p.Addr(), "KEYS", "volley:*")
		require.NoError(t, err)
		assert.Empty(t, vals[1:], "%s has fencing keys outside the copies' slots", p.Addr())
	}
}

// TestClusterFenceLostWrites: copy 0's shard fails over to a replica that
// missed the latest token (FailoverLosingWrites), which copy 2 missed too
// (its key was taken); a Client whose proposals are far behind (so its
// token is the counters' largest plus one) then meets copy 0's old
// counter and copy 2's, copy 1 being taken. With the per-slot check, the
// promoted node's counter does not count until a repair, so there is no
// lock; once copy 1 is free the token is above every earlier one. The
// broken variant, which trusts whatever counter a slot's node has, hands
// out a token below an earlier holder's.
func TestClusterFenceLostWrites(t *testing.T) {
	for _, broken := range []bool{false, true} {
		name := "vouched"
		if broken {
			name = "unvouched"
		}
		t.Run(name, func(t *testing.T) {
			regressed := fenceAfterLostWrites(t, broken)
			if broken {
				require.True(t, regressed, "the broken variant kept its tokens growing: the test cannot tell")
			} else {
				require.False(t, regressed, "a token went backwards after a failover that lost writes")
			}
		})
	}
}

// fenceAfterLostWrites runs TestClusterFenceLostWrites' schedule and
// reports whether a token went backwards.
func fenceAfterLostWrites(t *testing.T, broken bool) bool {
	unvouchedCluster = broken
	t.Cleanup(func() { unvouchedCluster = false })
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{})
	cfg := Config{Fencing: true, RetryDelay: 10 * time.Millisecond, Tries: 1}
	a := clusterClient(t, cl, cfg)
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	const key = "lost"
	lock := func(c *Client) uint64 {
		t.Helper()
		var l Lock
		require.Eventually(t, func() bool {
			var err error
			l, err = c.TryLock(ctx, key, time.Second)
			return err == nil
		}, 20*time.Second, 20*time.Millisecond, "no fenced lock")
		require.NoError(t, l.Unlock(bg))
		return l.Fence()
	}
	// take has copy i's key held by someone else, for 5s, or frees it.
	take := func(i int, held bool) {
		t.Helper()
		addr, tag := copyAt(a, i, key)
		args := []string{"SET", tag + key, "someone-else", "PX", "5000"}
		if !held {
			args = []string{"DEL", tag + key}
		}
		_, err := redistest.Do(addr, args...)
		require.NoError(t, err)
	}
	first := lock(a)

	_, tag0 := copyAt(a, 0, key)
	var top uint64
	killed, err := cl.FailoverLosingWrites([]int{cl.ShardOf(slot.Of(tag0))}, func() {
		// Copy 0's replica is cut off: the token taken now reaches copy
		// 0's primary and copy 1, not the replica, nor copy 2 (taken).
		take(2, true)
		top = lock(a)
		take(2, false)
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = killed[0].Restart(false) })
	require.Greater(t, top, first)

	// A Client whose clock is far behind proposes 1: its token is the
	// largest counter it reads plus one.
	b := clusterClient(t, cl, cfg)
	b.fence.now = func() time.Time { return time.UnixMicro(0) }
	n0, ok0 := counterAt(t, b, 0, key)
	n2, _ := counterAt(t, b, 2, key)
	t.Logf("after the failover: copy 0's counter %d, copy 2's %d, last token %d", n0, n2, top)
	require.Less(t, n2, top, "copy 2 missed the latest token")
	require.True(t, ok0, "copy 0's counter was replicated before the link was cut")
	require.Less(t, n0, top, "copy 0 kept the latest token: the failover lost no write")

	take(1, true)
	l, err := b.TryLock(ctx, key, time.Second)
	take(1, false)
	if err == nil {
		require.NoError(t, l.Unlock(bg))
		t.Logf("with copy 1 taken: token %d", l.Fence())
		return l.Fence() <= top
	}
	t.Logf("with copy 1 taken: %v", err)
	// Copy 1 is free: it and copy 2 make a quorum that vouches.
	fence := lock(b)
	t.Logf("with copy 1 free: token %d", fence)
	return fence <= top
}
