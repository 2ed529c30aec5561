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

// startFloorBlocking starts n real masters and a floor-blocking over them.
func startFloorBlocking(t *testing.T, n int) (*floorBlocking, []*goredislib.Client) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	s := Setup{Addrs: redistest.Addrs(servers), MasterTimeout: time.Second, TTL: 10 * time.Second, RetryDelay: 2 * time.Millisecond, Tries: 1}
	c, err := newFloorBlocking(s)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	var clients []*goredislib.Client
	for _, a := range s.Addrs {
		cl := goredislib.NewClient(&goredislib.Options{Addr: a})
		t.Cleanup(func() { cl.Close() })
		clients = append(clients, cl)
	}
	return c.(*floorBlocking), clients
}

// TestFloorBlockingLocks: floor-blocking takes real locks on every master,
// excludes a second holder, releases, and serves many callers at once.
func TestFloorBlockingLocks(t *testing.T) {
	f, clients := startFloorBlocking(t, 5)
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
	f, _ := startFloorBlocking(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, f.LockUnlock(ctx, "floor-blocking:test:c", 10*time.Second), context.Canceled)
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Empty(t, f.queue)
}
