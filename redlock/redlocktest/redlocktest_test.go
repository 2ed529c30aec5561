package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/leakcheck"
	"github.com/volleylock/volley/redlock"
	"github.com/volleylock/volley/redlock/redlocktest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

var bg = context.Background()

// client is a lock client on ms with quick timeouts and reconnects.
func client(t *testing.T, ms *redlocktest.Masters) *redlock.Client {
	t.Helper()
	c, err := redlock.New(bg, redlock.Config{
		Addrs: ms.Addrs(), MasterTimeout: 50 * time.Millisecond, MaxTTL: 500 * time.Millisecond,
		Conn: redlock.Connection{ReconnectMin: time.Millisecond, ReconnectMax: 10 * time.Millisecond},
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// outcomes returns each master's outcome in a failed operation.
func outcomes(t *testing.T, err error) []redlock.Outcome {
	t.Helper()
	var le *redlock.Error
	require.ErrorAs(t, err, &le)
	out := make([]redlock.Outcome, len(le.Masters))
	for i, n := range le.Masters {
		out[i] = n.Outcome
	}
	return out
}

// A lock lands on every master with the same token and the TTL; Advance
// expires it.
func TestGetAndAdvance(t *testing.T) {
	ms := redlocktest.NewMasters(t, 3)
	c := client(t, ms)
	_, err := c.TryLock(bg, "k", 400*time.Millisecond)
	require.NoError(t, err)
	var first string
	for i := range ms.Len() {
		m := ms.Master(i)
		require.Eventually(t, func() bool { _, _, ok := m.Get("k"); return ok }, 5*time.Second, time.Millisecond)
		v, ttl, _ := m.Get("k")
		assert.Len(t, v, 32, "a token is 128 bits in hex")
		assert.True(t, ttl > 0 && ttl <= 400*time.Millisecond, "ttl %v", ttl)
		if i == 0 {
			first = v
		}
		assert.Equal(t, first, v, "master %d holds another token", i)
		assert.Equal(t, 1, m.Keys())
	}
	ms.Advance(time.Second)
	for i := range ms.Len() {
		assert.Zero(t, ms.Master(i).Keys())
	}
	_, err = c.TryLock(bg, "k", 400*time.Millisecond)
	require.NoError(t, err, "the expired lock is free again")
}

// Stop takes masters down (connection errors, fast); Start brings them
// back with their keys.
func TestStopStart(t *testing.T) {
	ms := redlocktest.NewMasters(t, 3)
	c := client(t, ms)
	l, err := c.TryLock(bg, "held", 400*time.Millisecond)
	require.NoError(t, err)
	// TryLock returns at a quorum: the third SET may still be on its way.
	require.Eventually(t, func() bool {
		for i := range 3 {
			if _, _, ok := ms.Master(i).Get("held"); !ok {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond)
	for i := range 2 {
		ms.Master(i).Stop()
	}
	_, err = c.TryLock(bg, "k", 400*time.Millisecond)
	require.ErrorIs(t, err, redlock.ErrNoQuorum) // two of three down: an outage
	assert.Equal(t, redlock.OutcomeConnError, outcomes(t, err)[0])
	for i := range 2 {
		ms.Master(i).Start()
		_, _, ok := ms.Master(i).Get("held")
		assert.True(t, ok, "a stopped master kept its keys")
	}
	require.Eventually(t, func() bool {
		l2, err := c.TryLock(bg, "k", 400*time.Millisecond)
		return err == nil && l2.Unlock(bg) == nil
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, l.Unlock(bg))
}

// RestartEmpty forgets the keys and is held out by the restart guard.
func TestRestartEmpty(t *testing.T) {
	ms := redlocktest.NewMasters(t, 3)
	// The guard lasts MaxTTL from the restart: long enough here that a
	// loaded machine's reconnect still finds it (with client's 500 ms,
	// make test-stress once saw the guard end before the poll below).
	c, err := redlock.New(bg, redlock.Config{
		Addrs: ms.Addrs(), MasterTimeout: 50 * time.Millisecond, MaxTTL: 10 * time.Second,
		Conn: redlock.Connection{ReconnectMin: time.Millisecond, ReconnectMax: 10 * time.Millisecond},
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = c.TryLock(bg, "k", 400*time.Millisecond)
	require.NoError(t, err)
	m := ms.Master(0)
	require.Eventually(t, func() bool { return m.Keys() == 1 }, 5*time.Second, time.Millisecond)
	m.RestartEmpty()
	assert.Zero(t, m.Keys())
	require.Eventually(t, func() bool {
		st := c.Masters()[0]
		return st.Err == nil && !st.Guard.IsZero()
	}, 5*time.Second, time.Millisecond, "the restarted master is not guarded")
}

// Pause, Partition, Slow and Garbage on a minority: locks still come;
// on a majority: they fail, each with the outcome the fault gives.
func TestFaultsOnAMajority(t *testing.T) {
	tests := []struct {
		name       string
		on, off    func(m *redlocktest.Master)
		wantOnFail redlock.Outcome
	}{
		{"pause", (*redlocktest.Master).Pause, (*redlocktest.Master).Resume, redlock.OutcomeTimeout},
		{"partition", func(m *redlocktest.Master) { m.Partition(true) }, func(m *redlocktest.Master) { m.Partition(false) }, redlock.OutcomeTimeout},
		{"slow", func(m *redlocktest.Master) { m.Slow(70 * time.Millisecond) }, func(m *redlocktest.Master) { m.Slow(0) }, redlock.OutcomeTimeout},
		{"garbage", func(m *redlocktest.Master) { m.Garbage(true) }, func(m *redlocktest.Master) { m.Garbage(false) }, redlock.OutcomeConnError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := redlocktest.NewMasters(t, 5)
			c := client(t, ms)
			for i := range 2 {
				tt.on(ms.Master(i))
			}
			l, err := c.TryLock(bg, "minority", 400*time.Millisecond)
			require.NoError(t, err, "two broken masters of five")
			require.NoError(t, l.Unlock(bg))

			tt.on(ms.Master(2))
			_, err = c.TryLock(bg, "majority", 400*time.Millisecond)
			require.ErrorIs(t, err, redlock.ErrNoQuorum)
			assert.Equal(t, tt.wantOnFail, outcomes(t, err)[2])

			for i := range 3 {
				tt.off(ms.Master(i))
			}
			require.Eventually(t, func() bool {
				l, err := c.TryLock(bg, "after", 400*time.Millisecond)
				return err == nil && l.Unlock(bg) == nil
			}, 5*time.Second, 5*time.Millisecond, "no lock after the fault ended")
		})
	}
}

func TestStartErrors(t *testing.T) {
	_, err := redlocktest.Start(0)
	require.Error(t, err)
	ms, err := redlocktest.Start(1)
	require.NoError(t, err)
	require.NoError(t, ms.Close())
	require.NoError(t, errors.Join(ms.Close()), "Close twice")
}

// The user's test shown in the README, as it would stand in their repo.
func TestChargeSurvivesTwoBadMasters(t *testing.T) {
	ms := redlocktest.NewMasters(t, 5)
	c, err := redlock.New(context.Background(), redlock.Config{Addrs: ms.Addrs(), MaxTTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ms.Master(0).RestartEmpty() // out of the quorum for MaxTTL (restart guard)
	ms.Master(1).Pause()        // answers nothing
	defer ms.Master(1).Resume()

	charged := 0
	err = c.Do(context.Background(), "invoice:42", time.Second, func(context.Context) error {
		charged++ // the user's code under the lock
		return nil
	})
	if err != nil || charged != 1 {
		t.Fatalf("charged %d times, err %v, with 3 of 5 masters healthy", charged, err)
	}
}

// A waiter is woken by the release even after every master's pub/sub
// connections were killed, and with one master's messages dropped; its
// retry delay (an hour) never ends the wait.
func TestWaiterSurvivesPubSubFaults(t *testing.T) {
	ms := redlocktest.NewMasters(t, 3)
	newClient := func() *redlock.Client {
		c, err := redlock.New(bg, redlock.Config{
			Addrs: ms.Addrs(), RetryDelay: time.Hour,
			Conn: redlock.Connection{ReconnectMin: time.Millisecond, ReconnectMax: 10 * time.Millisecond},
		})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	holder, waiter := newClient(), newClient()
	l, err := holder.Lock(bg, "w", 10*time.Second)
	require.NoError(t, err)

	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		wl, err := waiter.Lock(ctx, "w", 10*time.Second)
		if err == nil {
			err = wl.Unlock(bg)
		}
		got <- err
	}()
	// Wait until the waiter is subscribed everywhere, then kill that.
	require.Eventually(t, func() bool {
		n := 0
		for i := range 3 {
			n += ms.Master(i).KillSubscribers()
		}
		return n == 3
	}, 10*time.Second, 20*time.Millisecond)
	ms.Master(0).DropMessages(-1)
	// Released while the waiter may still be reconnecting: it attempts
	// again once it has subscribed, and finds the key free.
	require.NoError(t, l.Unlock(bg))
	require.NoError(t, <-got)
}

// Semaphores run on the fake masters as on Redis: the permits survive two
// bad masters, a third holder is refused, and Advance expires the
// permits and their record.
func TestSemaphore(t *testing.T) {
	ms := redlocktest.NewMasters(t, 5)
	c := client(t, ms)
	s, err := c.Semaphore("pool", 2)
	require.NoError(t, err)
	ms.Master(0).Pause()
	defer ms.Master(0).Resume()
	ms.Master(1).Stop()
	p1, err := s.Acquire(bg, 400*time.Millisecond)
	require.NoError(t, err)
	p2, err := s.Acquire(bg, 400*time.Millisecond)
	require.NoError(t, err)
	require.NotEqual(t, p1.Index(), p2.Index())
	_, err = s.TryAcquire(bg, 400*time.Millisecond)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	for i := 2; i < 5; i++ {
		v, _, ok := ms.Master(i).Get("pool")
		require.True(t, ok)
		assert.Equal(t, "semaphore:2", v)
		assert.Equal(t, 3, ms.Master(i).Keys(), "the record and two permits")
	}
	ms.Advance(time.Second)
	for i := 2; i < 5; i++ {
		assert.Zero(t, ms.Master(i).Keys(), "expired with their TTL")
	}
	p, err := s.TryAcquire(bg, 400*time.Millisecond)
	require.NoError(t, err, "the expired permits are free again")
	require.NoError(t, p.Release(bg))
}

// Read-write locks run on the fake masters as on Redis: readers share
// through a paused master, a writer waits them out, and Advance expires
// the readers.
func TestRWMutex(t *testing.T) {
	ms := redlocktest.NewMasters(t, 3)
	c := client(t, ms)
	rw, err := c.RWMutex("doc")
	require.NoError(t, err)
	ms.Master(0).Pause()
	r1, err := rw.RLock(bg, 400*time.Millisecond)
	require.NoError(t, err)
	_, err = rw.TryRLock(bg, 400*time.Millisecond)
	require.NoError(t, err, "readers share")
	_, err = rw.TryLock(bg, 400*time.Millisecond)
	require.ErrorIs(t, err, redlock.ErrNotAcquired, "a writer beside readers")
	ms.Master(0).Resume()
	require.NoError(t, r1.Unlock(bg))
	ms.Advance(time.Second) // the second reader expires without a release
	w, err := rw.TryLock(bg, 400*time.Millisecond)
	require.NoError(t, err, "the expired reader no longer keeps the writer out")
	require.NoError(t, w.Unlock(bg))

	// With fencing, the fake masters hand each writer a larger token.
	f, err := redlock.New(bg, redlock.Config{Addrs: ms.Addrs(), MasterTimeout: 50 * time.Millisecond, MaxTTL: 500 * time.Millisecond, Fencing: true})
	require.NoError(t, err)
	defer f.Close()
	frw, err := f.RWMutex("doc")
	require.NoError(t, err)
	var last uint64
	for range 3 {
		w, err := frw.TryLock(bg, 400*time.Millisecond)
		require.NoError(t, err)
		assert.Greater(t, w.Fence(), last)
		last = w.Fence()
		require.NoError(t, w.Unlock(bg))
	}
}
