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
	"github.com/volleylock/volley/internal/redistest"
)

// dbSizes returns each server's key count.
func dbSizes(t *testing.T, servers []*redistest.Server) []int64 {
	t.Helper()
	out := make([]int64, len(servers))
	for i, s := range servers {
		vals, err := redistest.Do(s.Addr(), "DBSIZE")
		require.NoError(t, err)
		out[i] = vals[0].Int
	}
	return out
}

func TestSemaphoreAdmitsItsPermits(t *testing.T) {
	servers := masters(t, 5)
	a := client(t, servers, Config{})
	b := client(t, servers, Config{})
	sa, err := a.Semaphore("sem", 3)
	require.NoError(t, err)
	sb, err := b.Semaphore("sem", 3)
	require.NoError(t, err)

	var held []Permit
	seen := map[int]bool{}
	for i := range 3 {
		s := sa
		if i%2 == 1 {
			s = sb
		}
		// Acquire, not TryAcquire: a random first pick may find its permit
		// taken, and the next attempt picks a free one.
		p, err := s.Acquire(bg, 5*time.Second)
		require.NoError(t, err, "permit %d", i)
		require.False(t, seen[p.Index()], "permit %d given twice", p.Index())
		seen[p.Index()] = true
		require.Positive(t, p.Validity())
		held = append(held, p)
	}
	_, err = sb.TryAcquire(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a fourth holder of three permits")
	// Each permit is held on a quorum: a master may have missed a holder's
	// straggling attempt (another attempt of the same permit came first
	// there), so not necessarily on all five.
	states := inspectAll(t, sa.Inspect, nil)
	require.Len(t, states, 3*5, "three permits on five masters")
	holders := map[string]int{}
	for _, st := range states {
		if st.Exists {
			holders[st.Key]++
		}
		assert.False(t, st.Ours)
	}
	for i := range 3 {
		assert.GreaterOrEqual(t, holders[fmt.Sprintf("sem:permit:%d", i)], 3, "permit %d's masters", i)
	}
	mine := inspectAll(t, held[0].Inspect, nil)
	require.Len(t, mine, 5)
	ours := 0
	for _, st := range mine {
		if st.Ours {
			ours++
		}
		assert.Equal(t, fmt.Sprintf("sem:permit:%d", held[0].Index()), st.Key)
	}
	assert.GreaterOrEqual(t, ours, 3, "masters that hold the permit's token")
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	_, err = sa.Acquire(ctx, time.Second)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, held[1].Release(bg))
	require.ErrorIs(t, held[1].Release(bg), ErrNotHeld, "a second release")
	p, err := sb.Acquire(bg, 5*time.Second)
	require.NoError(t, err, "the released permit is free again")
	require.Equal(t, held[1].Index(), p.Index())
	held[1] = p

	for _, p := range held {
		require.NoError(t, p.Release(bg))
	}
	// A Release returns at its quorum: the other masters' releases may
	// land after it. Every TTL is 5 s, so keys gone within 2 s were
	// released, not expired.
	var sizes []int64
	assert.Eventually(t, func() bool {
		sizes = dbSizes(t, servers)
		return slices.Equal(sizes, []int64{0, 0, 0, 0, 0})
	}, 2*time.Second, 5*time.Millisecond, "the last release leaves no key behind: %v", &sizes)
}

// TestSemaphoreTryAcquireFindsTheFreePermit: with P-1 of P permits held,
// every TryAcquire gets the free one, whichever permit its first attempt
// asks for (its failed attempt learns which permit is free on a quorum,
// and asks for it at once); with all P held, it fails. It counts the
// attempts each call made (Hooks.Call): at most two for the free permit.
func TestSemaphoreTryAcquireFindsTheFreePermit(t *testing.T) {
	const permits = 3
	servers := masters(t, 3)
	// A generous MasterTimeout: a master slow to answer on a loaded
	// machine is not what this test is about.
	holder := client(t, servers, Config{MasterTimeout: time.Second})
	var attempts atomic.Int64
	var calls atomic.Int64
	tryer := client(t, servers, Config{MasterTimeout: time.Second, Hooks: Hooks{
		Call: func(ctx context.Context, op Op, _ string) (context.Context, func(CallEnd)) {
			return ctx, func(e CallEnd) {
				if op == OpLock {
					attempts.Add(int64(e.Attempts))
					calls.Add(1)
				}
			}
		},
	}})
	hs, err := holder.Semaphore("try", permits)
	require.NoError(t, err)
	ts, err := tryer.Semaphore("try", permits)
	require.NoError(t, err)

	var held []Permit
	for range permits - 1 {
		p, err := hs.Acquire(bg, 30*time.Second)
		require.NoError(t, err)
		held = append(held, p)
	}
	failed := 0
	base := dbSizes(t, servers)
	for i := range 1000 {
		p, err := ts.TryAcquire(bg, 10*time.Second)
		if err != nil {
			failed++
			t.Logf("call %d: %v", i, err)
			continue
		}
		require.NotEqual(t, held[0].Index(), p.Index())
		require.NotEqual(t, held[1].Index(), p.Index())
		require.NoError(t, p.Release(bg))
		// A Release returns at its quorum: the last master's release may
		// land after the next TryAcquire (make test-stress once failed
		// one call in 1000 so). The test is about the choice of the free
		// permit, so the next call waits for it.
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !slices.Equal(dbSizes(t, servers), base); {
			time.Sleep(time.Millisecond)
		}
	}
	require.Zero(t, failed, "TryAcquire failed %d of 1000 times with a permit free", failed)
	assert.LessOrEqual(t, attempts.Load(), 2*calls.Load(), "at most two attempts per call")

	p, err := hs.Acquire(bg, 30*time.Second)
	require.NoError(t, err)
	held = append(held, p)
	_, err = ts.TryAcquire(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "every permit held")
	for _, p := range held {
		require.NoError(t, p.Release(bg))
	}
}

func TestSemaphoreBadInput(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{MaxTTL: 10 * time.Second})
	for _, n := range []int{0, -1, MaxPermits + 1} {
		_, err := c.Semaphore("s", n)
		require.ErrorContains(t, err, "permits", "permits %d", n)
	}
	s, err := c.Semaphore("s", 2)
	require.NoError(t, err)
	_, err = s.Acquire(bg, time.Minute)
	require.ErrorContains(t, err, "exceeds Config.MaxTTL")
	require.Equal(t, []int64{0, 0, 0}, dbSizes(t, servers))

	// Another number of permits while a permit is held: a clear error, no
	// retry, and nothing written.
	p, err := s.Acquire(bg, 5*time.Second)
	require.NoError(t, err)
	before := dbSizes(t, servers)
	other, err := c.Semaphore("s", 3)
	require.NoError(t, err)
	_, err = other.Acquire(bg, time.Second)
	require.ErrorIs(t, err, ErrSemaphoreMismatch)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, 1, e.Attempts, "a mismatch is not retried")
	require.ErrorContains(t, err, "has 2 permits, not 3")
	require.Equal(t, before, dbSizes(t, servers), "a refused acquire writes nothing")
	require.NoError(t, p.Release(bg))

	// A name held as a lock.
	l, err := c.TryLock(bg, "m", time.Second)
	require.NoError(t, err)
	m, err := c.Semaphore("m", 2)
	require.NoError(t, err)
	_, err = m.TryAcquire(bg, time.Second)
	require.ErrorIs(t, err, ErrSemaphoreMismatch)
	require.ErrorContains(t, err, "is a lock, not a semaphore")
	require.NoError(t, l.Unlock(bg))

	// A name that holds another type.
	for _, srv := range servers[:2] {
		_, err := redistest.Do(srv.Addr(), "HSET", "h", "f", "v")
		require.NoError(t, err)
	}
	h, err := c.Semaphore("h", 2)
	require.NoError(t, err)
	_, err = h.TryAcquire(bg, time.Second)
	require.ErrorIs(t, err, ErrSemaphoreMismatch)
	require.ErrorContains(t, err, "WRONGTYPE")
	// The third master granted the permit; the failed attempt's release
	// is sent without waiting for it, so it lands soon, not at once.
	require.Eventually(t, func() bool { return slices.Equal([]int64{1, 1, 0}, dbSizes(t, servers)) }, 5*time.Second, 5*time.Millisecond)
	for _, srv := range servers[:2] {
		_, err := redistest.Do(srv.Addr(), "DEL", "h")
		require.NoError(t, err)
	}

	// A semaphore's name taken by a lock: the lock scripts say what it is,
	// at once, and what an attempt wrote elsewhere is released.
	p, err = s.Acquire(bg, 5*time.Second)
	require.NoError(t, err)
	before = dbSizes(t, servers)
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	_, err = c.TryLock(bg, "s", time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a plain SET only sees the name taken")
	rw, err := c.RWMutex("s")
	require.NoError(t, err)
	for name, lock := range map[string]func() error{
		"Lock": func() error { _, err := c.Lock(ctx, "s", time.Second); return err },
		"LockMulti": func() error {
			_, err := c.LockMulti(ctx, []string{"free", "s"}, time.Second)
			return err
		},
		"RWMutex.Lock":  func() error { _, err := rw.Lock(ctx, time.Second); return err },
		"RWMutex.RLock": func() error { _, err := rw.RLock(ctx, time.Second); return err },
	} {
		err := lock()
		require.ErrorIs(t, err, ErrWrongKind, name)
		require.ErrorContains(t, err, "is a semaphore, not a lock", name)
		require.Eventually(t, func() bool { return slices.Equal(before, dbSizes(t, servers)) },
			5*time.Second, time.Millisecond, "%s leaves nothing behind", name)
	}
	require.NoError(t, ctx.Err(), "refused at once, not after waiting")
	require.NoError(t, p.Release(bg))
}

// TestSemaphoreNeverOverAdmits: holders in two Clients, counted in
// process, never exceed the permits, and every goroutine gets its turns.
func TestSemaphoreNeverOverAdmits(t *testing.T) {
	servers := masters(t, 5)
	const permits, goroutines, rounds = 3, 12, 15
	// What is counted is exclusion, not timeouts: a MasterTimeout that a
	// loaded machine (GOMAXPROCS=1 under -race) does not reach, so that
	// every release is confirmed.
	cfg := Config{RetryDelay: 20 * time.Millisecond, MasterTimeout: time.Second}
	clients := []*Client{client(t, servers, cfg), client(t, servers, cfg)}
	var holders, most atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		s, err := clients[g%2].Semaphore("busy", permits)
		require.NoError(t, err)
		wg.Go(func() {
			for range rounds {
				ctx, cancel := context.WithTimeout(bg, 20*time.Second)
				p, err := s.Acquire(ctx, 2*time.Second)
				cancel()
				if err != nil {
					errs <- err
					return
				}
				n := holders.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond) // hold it a moment, for overlap
				holders.Add(-1)
				if err := p.Release(bg); err != nil {
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
	require.LessOrEqual(t, most.Load(), int32(permits))
	require.Equal(t, int32(permits), most.Load(), "the permits were all in use at some point")
}

// TestSemaphoreWaiterWokenByRelease: with a 10 s retry delay, a waiter
// gets a permit within 3 s of a release only if the release woke it.
func TestSemaphoreWaiterWokenByRelease(t *testing.T) {
	servers := masters(t, 3)
	var failed atomic.Int32
	a := client(t, servers, Config{})
	b := client(t, servers, waiterConfig(Config{}, &failed))
	sa, err := a.Semaphore("w", 2)
	require.NoError(t, err)
	sb, err := b.Semaphore("w", 2)
	require.NoError(t, err)
	p1, err := sa.Acquire(bg, 10*time.Second)
	require.NoError(t, err)
	p2, err := sa.Acquire(bg, 10*time.Second)
	require.NoError(t, err)
	requireWoken(t, &failed, 1, func() error {
		p, err := sb.Acquire(bg, time.Second)
		if err == nil {
			err = p.Release(bg)
		}
		return err
	}, func() error { return p2.Release(bg) }, "the waiter was woken by the release")
	require.NoError(t, p1.Release(bg))
}

func TestSemaphoreExtendAndDo(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{})
	s, err := c.Semaphore("do", 1)
	require.NoError(t, err)

	p, err := s.Acquire(bg, 500*time.Millisecond)
	require.NoError(t, err)
	require.NoError(t, p.Extend(bg, 2*time.Second))
	require.Greater(t, p.Validity(), time.Second)
	require.Equal(t, 2*time.Second, p.TTL())
	for _, srv := range servers {
		vals, err := redistest.Do(srv.Addr(), "PTTL", "do")
		require.NoError(t, err)
		require.Greater(t, vals[0].Int, int64(1000), "the record lives as long as its permits")
	}
	require.NoError(t, p.Release(bg))
	require.ErrorIs(t, p.Extend(bg, time.Second), ErrNotHeld)

	// Do keeps the permit past its TTL.
	ran := false
	require.NoError(t, s.Do(bg, 300*time.Millisecond, func(ctx context.Context) error {
		ran = true
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Second):
			return nil
		}
	}))
	require.True(t, ran)

	// Do reports the loss: the permit's keys vanish under it.
	err = s.Do(bg, 300*time.Millisecond, func(ctx context.Context) error {
		for _, srv := range servers {
			require.NoError(t, srv.Flush())
		}
		<-ctx.Done()
		return nil
	})
	require.ErrorIs(t, err, ErrNotHeld)
	require.Equal(t, []int64{0, 0, 0}, dbSizes(t, servers))
}

func TestSemaphoreOneMasterDown(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{MasterTimeout: 50 * time.Millisecond})
	s, err := c.Semaphore("down", 2)
	require.NoError(t, err)
	servers[2].Kill()
	p, err := s.Acquire(bg, time.Second)
	require.NoError(t, err, "a quorum is enough")
	require.NoError(t, p.Release(bg))
	servers[1].Kill()
	_, err = s.TryAcquire(bg, time.Second)
	require.ErrorIs(t, err, ErrNoQuorum)
	var e *Error
	require.True(t, errors.As(err, &e), "the error says what each master did: %v", err)
	require.Contains(t, fmt.Sprint(err), "connection")
}

// TestClusterSemaphore: over a 3-primary cluster each copy's record and
// permits share the copy's tag (one slot, one node); two Clients share the
// permits, and a waiter is woken by a release through the copy's shard
// channel.
func TestClusterSemaphore(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{})
	var failed atomic.Int32
	a := clusterClient(t, cl, Config{})
	b := clusterClient(t, cl, waiterConfig(Config{}, &failed))
	sa, err := a.Semaphore("pool", 2)
	require.NoError(t, err)
	sb, err := b.Semaphore("pool", 2)
	require.NoError(t, err)
	p1, err := sa.Acquire(bg, 10*time.Second)
	require.NoError(t, err)
	p2, err := sb.Acquire(bg, 10*time.Second)
	require.NoError(t, err)
	require.NotEqual(t, p1.Index(), p2.Index())
	for i := range a.masters {
		addr, tag := copyAt(a, i, "pool")
		vals, err := redistest.Do(addr, "GET", tag+"pool")
		require.NoError(t, err)
		assert.Equal(t, "semaphore:2", string(vals[0].Bytes), "copy %d's record is %spool", i, tag)
	}
	_, err = sa.TryAcquire(bg, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)

	requireWoken(t, &failed, 1, func() error {
		p, err := sb.Acquire(bg, time.Second)
		if err == nil {
			err = p.Release(bg)
		}
		return err
	}, func() error { return p1.Release(bg) }, "the waiter was woken by the release")
	require.NoError(t, p2.Release(bg))
}

// TestSemaphoreFenced: with Config.Fencing, the holders of each permit,
// from two Clients and through Acquire and Do, get strictly increasing
// tokens (each recorded while its permit is held, so in acquisition order
// per permit), from the counter every fenced lock uses, with five
// goroutines waiting for two permits; a Client without fencing hands out
// none, and the last release leaves no key of the semaphore.
func TestSemaphoreFenced(t *testing.T) {
	servers := masters(t, 3)
	clients := []*Client{fenced(t, servers), fenced(t, servers)}
	const permits = 2
	var sems []*Semaphore
	for _, c := range clients {
		s, err := c.Semaphore("fenced-sem", permits)
		require.NoError(t, err)
		sems = append(sems, s)
	}
	var logs [permits]tokenLog
	var wg sync.WaitGroup
	for g := range 5 {
		s := sems[g%2]
		wg.Go(func() {
			for i := range 10 {
				if i%2 == 0 {
					p, err := s.Acquire(bg, ttlF)
					if !assert.NoError(t, err) {
						return
					}
					logs[p.Index()].record(p.Fence())
					assert.NoError(t, p.Release(bg))
					continue
				}
				assert.NoError(t, s.Do(bg, ttlF, func(ctx context.Context) error {
					f, ok := FenceFrom(ctx)
					assert.True(t, ok)
					// Which permit Do holds is not told; the token is
					// checked in sequence by the Acquire rounds.
					assert.NotZero(t, f)
					return nil
				}))
			}
		})
	}
	wg.Wait()
	var last uint64
	for i := range logs {
		seen := logs[i].tokens()
		require.NotEmpty(t, seen, "permit %d", i)
		for j := 1; j < len(seen); j++ {
			assert.Greater(t, seen[j], seen[j-1], "permit %d, holder %d", i, j)
		}
		last = max(last, seen[len(seen)-1])
	}
	l, err := clients[0].Lock(bg, "plain", ttlF)
	require.NoError(t, err)
	assert.Greater(t, l.Fence(), last, "one counter for every lock and permit")
	require.NoError(t, l.Unlock(bg))

	plain := client(t, servers, Config{})
	ps, err := plain.Semaphore("fenced-sem", permits)
	require.NoError(t, err)
	p, err := ps.TryAcquire(bg, time.Second)
	require.NoError(t, err)
	assert.Zero(t, p.Fence(), "a Client without Fencing hands out no token")
	require.NoError(t, p.Release(bg))
	// Release returns at its quorum: the last master's release may land
	// after it.
	for _, key := range []string{"fenced-sem", "fenced-sem:permit:0", "fenced-sem:permit:1"} {
		gone(t, servers, key)
	}
}

// TestSemaphoreCorruptedTakenIsNotAGrant: a master's "taken" answer whose
// first byte was corrupted (`*1 :1`, one permit free, read as `:1`) or
// another request's grant (a reply stream shifted by a swallowed reply)
// must not count as a grant: a grant names its request's token. Holder A
// has the permit on masters 1 and 2; B finds master 0 free, master 1
// taken, and master 2 answers the corrupted bytes: two grants would be a
// quorum of 3 and a second holder of a 1-permit semaphore.
func TestSemaphoreCorruptedTakenIsNotAGrant(t *testing.T) {
	for _, raw := range []string{":1\r\n", "$16\r\n0123456789abcdef\r\n"} {
		servers, addrs := fakeMasters(t, 3)
		a := fakeClient(t, addrs, Config{MasterTimeout: time.Second})
		b := fakeClient(t, addrs, Config{MasterTimeout: time.Second})
		sa, err := a.Semaphore("corrupt", 1)
		require.NoError(t, err)
		sb, err := b.Semaphore("corrupt", 1)
		require.NoError(t, err)
		p, err := sa.TryAcquire(bg, 5*time.Second)
		require.NoError(t, err)
		// On every master, not only the quorum TryAcquire returned at: b's
		// attempt must find it taken on all but the one it is deleted from.
		inspectAll(t, p.Inspect, func(s KeyState) bool { return s.Ours })
		_, err = redistest.Do(addrs[0], "DEL", "corrupt:permit:0")
		require.NoError(t, err)
		servers[2].SetFault("EVALSHA", fakeredis.Fault{Raw: []byte(raw), Times: 1})
		_, err = sb.TryAcquire(bg, 5*time.Second)
		require.ErrorIs(t, err, ErrNotAcquired, "answer %q counted as a grant", raw)
		require.NoError(t, p.Release(bg))
	}
}
