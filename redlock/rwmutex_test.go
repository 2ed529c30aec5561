package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

func TestRWMutexReadersShareWritersExclude(t *testing.T) {
	servers := masters(t, 5)
	// MasterTimeout 150 ms: make test-stress (Valkey 9.1.2, -race, CPU
	// hogs) once timed a TryLock out on all five masters within the 50 ms
	// default; the test is about who may hold the lock, not the timeout.
	a := client(t, servers, Config{MasterTimeout: 150 * time.Millisecond})
	b := client(t, servers, Config{MasterTimeout: 150 * time.Millisecond})
	ra, err := a.RWMutex("doc")
	require.NoError(t, err)
	rb, err := b.RWMutex("doc")
	require.NoError(t, err)

	r1, err := ra.TryRLock(bg, 5*time.Second)
	require.NoError(t, err)
	r2, err := rb.TryRLock(bg, 5*time.Second)
	require.NoError(t, err, "readers share")
	_, err = rb.TryLock(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a writer while readers hold it")
	r3, err := ra.TryRLock(bg, time.Second)
	require.NoError(t, err, "a writer that does not wait leaves no intent")
	require.NoError(t, r3.Unlock(bg))
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	_, err = rb.Lock(ctx, time.Second)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "a writer waits while readers hold it")
	_, err = ra.TryRLock(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a new reader once a writer waits (its intent)")
	require.NoError(t, r1.Extend(bg, 5*time.Second))
	require.NoError(t, r1.Unlock(bg))
	require.ErrorIs(t, r1.Unlock(bg), ErrNotHeld)
	require.NoError(t, r2.Unlock(bg))

	w, err := rb.TryLock(bg, 5*time.Second)
	require.NoError(t, err, "the readers are gone")
	assert.Zero(t, w.Fence())
	_, err = ra.TryLock(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "two writers")
	_, err = ra.TryRLock(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a reader while a writer holds it")
	require.NoError(t, w.Extend(bg, 5*time.Second))
	require.NoError(t, w.Unlock(bg))
	r4, err := ra.TryRLock(bg, time.Second)
	require.NoError(t, err)
	require.NoError(t, r4.Unlock(bg))
	require.Equal(t, []int64{0, 0, 0, 0, 0}, dbSizes(t, servers), "nothing left behind")
}

// TestRWMutexNeverMixes: readers and writers of two Clients, counted in
// process: never a writer with anyone else, and readers do overlap.
func TestRWMutexNeverMixes(t *testing.T) {
	servers := masters(t, 5)
	// What is counted is exclusion, not timeouts: a MasterTimeout that a
	// loaded machine (GOMAXPROCS=1 under -race) does not reach, so that
	// every release is confirmed.
	cfg := Config{RetryDelay: 20 * time.Millisecond, MasterTimeout: time.Second}
	clients := []*Client{client(t, servers, cfg), client(t, servers, cfg)}
	var readers, writers, mostReaders, bad atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 10 {
		rw, err := clients[g%2].RWMutex("mix")
		require.NoError(t, err)
		writer := g%5 == 0
		wg.Go(func() {
			for range 12 {
				ctx, cancel := context.WithTimeout(bg, 20*time.Second)
				var unlock func(context.Context) error
				if writer {
					l, err := rw.Lock(ctx, 2*time.Second)
					if err != nil {
						cancel()
						errs <- err
						return
					}
					if writers.Add(1) > 1 || readers.Load() > 0 {
						bad.Add(1)
					}
					time.Sleep(time.Millisecond)
					writers.Add(-1)
					unlock = l.Unlock
				} else {
					r, err := rw.RLock(ctx, 2*time.Second)
					if err != nil {
						cancel()
						errs <- err
						return
					}
					n := readers.Add(1)
					if writers.Load() > 0 {
						bad.Add(1)
					}
					for m := mostReaders.Load(); n > m && !mostReaders.CompareAndSwap(m, n); m = mostReaders.Load() {
					}
					time.Sleep(2 * time.Millisecond)
					readers.Add(-1)
					unlock = r.Unlock
				}
				cancel()
				if err := unlock(bg); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, bad.Load(), "a writer held it with someone else")
	require.Greater(t, mostReaders.Load(), int32(1), "readers held it together")
}

// TestRWMutexWakeUps: with a 10 s retry delay, waiting readers are woken
// together by the writer's release, and a waiting writer by the readers'
// releases.
func TestRWMutexWakeUps(t *testing.T) {
	servers := masters(t, 3)
	var failed atomic.Int32
	a := client(t, servers, Config{})
	b := client(t, servers, waiterConfig(Config{}, &failed))
	ra, err := a.RWMutex("wake")
	require.NoError(t, err)
	rb, err := b.RWMutex("wake")
	require.NoError(t, err)

	w, err := ra.Lock(bg, 10*time.Second)
	require.NoError(t, err)
	requireWoken(t, &failed, 2, func() error {
		r, err := rb.RLock(bg, time.Second)
		if err == nil {
			err = r.Unlock(bg)
		}
		return err
	}, func() error { return w.Unlock(bg) }, "both readers were woken by the writer's release")

	r, err := ra.RLock(bg, 10*time.Second)
	require.NoError(t, err)
	requireWoken(t, &failed, 1, func() error {
		l, err := rb.Lock(bg, time.Second)
		if err == nil {
			err = l.Unlock(bg)
		}
		return err
	}, func() error { return r.Unlock(bg) }, "the writer was woken by the reader's release")
}

func TestRWMutexDo(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	servers := masters(t, 3)
	c := client(t, servers, Config{})
	rw, err := c.RWMutex("do")
	require.NoError(t, err)
	slow := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(700 * time.Millisecond):
			return nil
		}
	}
	require.NoError(t, rw.DoRead(bg, 300*time.Millisecond, slow), "a read lock kept past its TTL")
	require.NoError(t, rw.DoWrite(bg, 300*time.Millisecond, slow), "a write lock kept past its TTL")
	err = rw.DoRead(bg, 300*time.Millisecond, func(ctx context.Context) error {
		for _, srv := range servers {
			require.NoError(t, srv.Flush())
		}
		<-ctx.Done()
		return nil
	})
	require.ErrorIs(t, err, ErrNotHeld, "a lost read lock is reported")
	_, err = rw.RLock(bg, time.Hour)
	require.ErrorContains(t, err, "exceeds Config.MaxTTL")
}

// TestRWMutexFencedWriter: with Config.Fencing, the writers of a
// read-write lock, from two Clients and through Lock, TryLock and
// DoWrite, get strictly increasing tokens (each recorded while it holds
// the lock, so in acquisition order), and readers between them change
// nothing; the writer's tokens come from the counter a plain Lock's do.
// A writer that finds readers and waits still leaves its intent.
func TestRWMutexFencedWriter(t *testing.T) {
	servers := masters(t, 3)
	clients := []*Client{fenced(t, servers), fenced(t, servers)}
	var rws []*RWMutex
	for _, c := range clients {
		rw, err := c.RWMutex("fenced-rw")
		require.NoError(t, err)
		rws = append(rws, rw)
	}
	var log tokenLog
	record := log.record
	var wg sync.WaitGroup
	for g := range 4 {
		rw := rws[g%2]
		wg.Go(func() {
			for i := range 12 {
				switch i % 3 {
				case 0:
					l, err := rw.Lock(bg, ttlF)
					if !assert.NoError(t, err) {
						return
					}
					record(l.Fence())
					assert.NoError(t, l.Unlock(bg))
				case 1:
					assert.NoError(t, rw.DoWrite(bg, ttlF, func(ctx context.Context) error {
						f, ok := FenceFrom(ctx)
						assert.True(t, ok)
						record(f)
						return nil
					}))
				case 2:
					r, err := rw.RLock(bg, ttlF)
					if !assert.NoError(t, err) {
						return
					}
					assert.NoError(t, r.Unlock(bg))
				}
			}
		})
	}
	wg.Wait()
	seen := log.tokens()
	require.Len(t, seen, 32)
	for i := 1; i < len(seen); i++ {
		assert.Greater(t, seen[i], seen[i-1], "writer %d's token", i)
	}
	l, err := clients[0].Lock(bg, "plain", ttlF)
	require.NoError(t, err)
	assert.Greater(t, l.Fence(), seen[len(seen)-1], "one counter for every lock")
	require.NoError(t, l.Unlock(bg))

	r, err := rws[0].TryRLock(bg, ttlF)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	_, err = rws[1].Lock(ctx, ttlF)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "a fenced writer waits while a reader holds it")
	_, err = rws[0].TryRLock(bg, ttlF)
	require.ErrorIs(t, err, ErrNotAcquired, "its intent keeps new readers out")
	require.NoError(t, r.Unlock(bg))
	w, err := rws[1].TryLock(bg, ttlF)
	require.NoError(t, err)
	assert.Greater(t, w.Fence(), l.Fence())
	require.NoError(t, w.Unlock(bg))
}

// TestClusterRWMutex: over a Redis Cluster of six primaries, a read-write
// lock's keys (name, readers, intent) share each copy's slot: readers of
// two Clients share it, a writer excludes them and each other, and a
// waiting writer gets it once the readers are gone.
func TestClusterRWMutex(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Shards: 6, Replicas: -1})
	a := clusterClient(t, cl, Config{})
	b := clusterClient(t, cl, Config{RetryDelay: 10 * time.Millisecond})
	ra, err := a.RWMutex("doc")
	require.NoError(t, err)
	rb, err := b.RWMutex("doc")
	require.NoError(t, err)

	r1, err := ra.TryRLock(bg, 5*time.Second)
	require.NoError(t, err)
	r2, err := rb.TryRLock(bg, 5*time.Second)
	require.NoError(t, err, "readers share")
	_, err = rb.TryLock(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a writer while readers hold it")
	require.NoError(t, r1.Extend(bg, 5*time.Second))
	require.NoError(t, r1.Unlock(bg))
	time.AfterFunc(50*time.Millisecond, func() { r2.Unlock(bg) })
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	w, err := rb.Lock(ctx, 5*time.Second)
	require.NoError(t, err, "the writer gets it once the readers are gone")
	_, err = ra.TryRLock(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a reader while a writer holds it")
	_, err = ra.TryLock(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "two writers")
	require.NoError(t, w.Unlock(bg))
}
