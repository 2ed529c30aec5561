package redlock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/scripts"
)

// fleetWaiters is how many Clients (processes, as the masters see them)
// wait for one release in the fleet tests below.
const fleetWaiters = 8

// One release wakes one Client of a fleet, not one per Client: eight
// Clients wait for a key; when its holder releases it, one of them is
// told (on its own channel of the key), attempts and takes it, and the
// others make no attempt until their (long) retry delay.
func TestReleaseWakesOneClientOfAFleet(t *testing.T) {
	attempts := attemptsAfterFleetRelease(t, true)
	assert.LessOrEqual(t, attempts, 2, "a release woke more than one Client's waiter")
}

// TestReleaseWithoutWaitersQueueWakesEveryClient is the broken variant
// of TestReleaseWakesOneClientOfAFleet: unenrolled, the waiters hear the
// release on the key's channel, and every Client's waiter attempts.
func TestReleaseWithoutWaitersQueueWakesEveryClient(t *testing.T) {
	noEnrolment = true
	t.Cleanup(func() { noEnrolment = false })
	attempts := attemptsAfterFleetRelease(t, false)
	assert.Greater(t, attempts, fleetWaiters/2, "without the waiters' queue, every Client's waiter attempts")
}

// attemptsAfterFleetRelease has fleetWaiters Clients, with a 10 s retry
// delay, Lock a key held by another Client, waits until each failed its
// attempts before and after it subscribed (and, when enrolled, until every
// one is among the key's waiters on every master), releases the key, and
// returns how many attempts reached a master in the 300 ms that follow
// the first waiter's grant. It checks that exactly one waiter got the key.
func attemptsAfterFleetRelease(t *testing.T, enrolled bool) int {
	t.Helper()
	servers := masters(t, 3)
	// A native release (DELIFEQ, DELEX IFEQ) cannot tell one Client: it
	// publishes on the key's channel, which wakes a waiter in every Client
	// (see Config.DisableNativeCommands). The queue is the script's.
	// HandOffAfter -1: the release wakes the longest waiter itself, not
	// through a later wake (see turns.go, TestLoopingClientKeepsItsTurn).
	holder := client(t, servers, Config{DisableNativeCommands: true, HandOffAfter: -1})
	l, err := holder.TryLock(bg, "fleet", 10*time.Second)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	var failed atomic.Int32
	got := make(chan *Lock, fleetWaiters)
	for range fleetWaiters {
		c := client(t, servers, waiterConfig(Config{}, &failed))
		go func() {
			l, err := c.Lock(ctx, "fleet", 10*time.Second)
			if err != nil {
				got <- nil
				return
			}
			got <- &l
		}()
	}
	waiters := func(s *redistest.Server) int {
		vals, err := redistest.Do(s.Addr(), "ZCARD", "fleet"+scripts.WaitersSuffix)
		if err != nil || len(vals) != 1 {
			return -1
		}
		return int(vals[0].Int)
	}
	require.Eventually(t, func() bool { return failed.Load() >= 2*fleetWaiters }, 10*time.Second, 10*time.Millisecond,
		"every waiter failed its attempts before and after it subscribed")
	if enrolled {
		require.Eventually(t, func() bool {
			for _, s := range servers {
				if waiters(s) != fleetWaiters {
					return false
				}
			}
			return true
		}, 10*time.Second, 10*time.Millisecond, "every Client enrolled among the key's waiters")
	}

	before := commandCalls(t, servers[0].Addr())["evalsha"]
	require.NoError(t, l.Unlock(bg))
	var winner *Lock
	select {
	case winner = <-got:
		require.NotNil(t, winner, "a waiter failed")
	case <-time.After(5 * time.Second):
		t.Fatal("no waiter took the released key")
	}
	// Give any other woken Client time to attempt: a wake-up comes within
	// a round trip of the release.
	time.Sleep(300 * time.Millisecond)
	attempts := commandCalls(t, servers[0].Addr())["evalsha"] - before
	t.Logf("%d attempts on a master after the release", attempts)
	if enrolled {
		assert.Equal(t, fleetWaiters-1, waiters(servers[0]), "the woken Client left the waiters, the others stay")
	}
	select {
	case l := <-got:
		t.Fatalf("a second waiter got the key while the first held it: %v", l)
	default:
	}
	require.NoError(t, winner.Unlock(bg))
	cancel()
	for range fleetWaiters - 1 { // every Lock call returns before the test ends (and a broken variant's switch flips back)
		<-got
	}
	return attempts
}
