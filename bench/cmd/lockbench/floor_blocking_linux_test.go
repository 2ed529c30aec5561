//go:build linux

package main

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// startFloorBlocking starts n real masters and a floor-blocking over them
// that gives a master masterTimeout.
func startFloorBlocking(t *testing.T, n int, masterTimeout time.Duration) (*floorBlocking, []*goredislib.Client) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	s := Setup{Addrs: redistest.Addrs(servers), MasterTimeout: masterTimeout, TTL: 10 * time.Second, RetryDelay: 2 * time.Millisecond, Tries: 1}
	c, err := newFloorBlocking(s)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c.(*floorBlocking), masterClients(t, s.Addrs)
}

// TestFloorBlockingLocks: floor-blocking takes real locks on every master,
// excludes a second holder, releases, and serves many callers at once.
func TestFloorBlockingLocks(t *testing.T) {
	f, clients := startFloorBlocking(t, 5, time.Second)
	ctx := context.Background()
	const key = "floor-blocking:test:k"

	h := f.NewHolder().(*floorBlockingHolder)
	require.NoError(t, h.Lock(ctx, key, 10*time.Second))
	tok := string(h.c.tok[:])
	assert.Equal(t, len(clients), count(values(t, clients, key), tok), "a batch is answered by every master")

	other := f.NewHolder().(*floorBlockingHolder)
	require.ErrorIs(t, other.Lock(ctx, key, 10*time.Second), errFloorNotAcquired)
	assert.Nil(t, other.c)
	assert.Equal(t, len(clients), count(values(t, clients, key), tok), "the loser's release left the lock alone")

	require.NoError(t, h.Unlock(ctx))
	assert.Equal(t, len(clients), count(values(t, clients, key), ""), "released everywhere")
	require.ErrorIs(t, h.Unlock(ctx), errFloorNotHeld)

	// 200 callers at once: every pair succeeds, in batches, and no key is
	// left behind.
	var wg sync.WaitGroup
	errs := make([]error, 200)
	for i := range errs {
		wg.Go(func() {
			for j := range 5 {
				if err := f.LockUnlock(ctx, "floor-blocking:test:"+strconv.Itoa(i)+":"+strconv.Itoa(j), 10*time.Second); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "caller %d", i)
	}
	for _, cl := range clients {
		n, err := cl.DBSize(ctx).Result()
		require.NoError(t, err)
		assert.Zero(t, n)
	}

	// Close stops the driver; a call after it fails at once.
	require.NoError(t, f.Close())
	require.NoError(t, f.Close(), "a second Close is a no-op")
	require.ErrorIs(t, f.LockUnlock(ctx, key, 10*time.Second), errFloorClosed)
}

// TestFloorBlockingCancelled: a caller whose context has ended does not
// queue, and its error is the context's.
func TestFloorBlockingCancelled(t *testing.T) {
	f, _ := startFloorBlocking(t, 3, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, f.LockUnlock(ctx, "floor-blocking:test:c", 10*time.Second), context.Canceled)
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Empty(t, f.queue)
}

// TestFloorBlockingSlowMaster: a master that stops answering for longer
// than MasterTimeout is skipped for the commands it owes (the others'
// quorum answers them), its late replies are dropped, and it counts again
// for the commands written after.
func TestFloorBlockingSlowMaster(t *testing.T) {
	f, clients := startFloorBlocking(t, 5, 200*time.Millisecond)
	ctx := context.Background()
	const pause = 2 * time.Second
	paused := time.Now()
	require.NoError(t, clients[0].Do(ctx, "CLIENT", "PAUSE", strconv.Itoa(int(pause/time.Millisecond))).Err())
	for j := range 2 {
		require.NoError(t, f.LockUnlock(ctx, "floor-blocking:slow:"+strconv.Itoa(j), 10*time.Second))
	}
	// Two Lock+Unlocks of two 200ms timeouts each, not the pause: the
	// driver did not wait for the paused master.
	require.Less(t, time.Since(paused), pause*3/4, "answered while master 0 was paused")
	// Once the pause is over, master 0 takes locks again; its late
	// answers to the commands above went to no one.
	require.Eventually(t, func() bool {
		h := f.NewHolder().(*floorBlockingHolder)
		if h.Lock(ctx, "floor-blocking:slow:after", 10*time.Second) != nil {
			return false
		}
		held := 0 // no require here: Eventually runs this in a goroutine of its own
		for _, cl := range clients {
			if v, _ := cl.Get(ctx, "floor-blocking:slow:after").Result(); v == string(h.c.tok[:]) {
				held++
			}
		}
		return h.Unlock(ctx) == nil && held == len(clients)
	}, 5*time.Second, 20*time.Millisecond)
	// And it stays: its late answers did not count for later commands (a
	// reply to no command would fail its socket for good).
	for j := range 3 {
		key := "floor-blocking:slow:then:" + strconv.Itoa(j)
		h := f.NewHolder().(*floorBlockingHolder)
		require.NoError(t, h.Lock(ctx, key, 10*time.Second))
		assert.Equal(t, len(clients), count(values(t, clients, key), string(h.c.tok[:])), "every master holds %s", key)
		require.NoError(t, h.Unlock(ctx))
	}
	for _, cl := range clients {
		require.Eventually(t, func() bool { return cl.DBSize(ctx).Val() == 0 }, 5*time.Second, 10*time.Millisecond, "no key left behind")
	}
}
