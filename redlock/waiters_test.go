package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/scripts"
)

// One release wakes one Client of a fleet, not one per Client: eight
// Clients (eight processes, as the masters see them) wait for a key; when
// its holder releases it, one of them attempts and takes it, and the
// others make no attempt until their (long) retry delay. Without the
// waiters' queue every Client's waiter would attempt: eight attempts per
// master for one grant.
func TestReleaseWakesOneClientOfAFleet(t *testing.T) {
	const fleet = 8
	servers := masters(t, 3)
	holder := client(t, servers, Config{})
	l, err := holder.TryLock(bg, "fleet", 10*time.Second)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	got := make(chan *Lock, fleet)
	for range fleet {
		c := client(t, servers, Config{RetryDelay: 10 * time.Second})
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
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if waiters(s) != fleet {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every Client enrolled among the key's waiters")

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
	assert.LessOrEqual(t, attempts, 2, "a release woke more than one Client's waiter")
	assert.Equal(t, fleet-1, waiters(servers[0]), "the woken Client is still among the waiters")
	select {
	case l := <-got:
		t.Fatalf("a second waiter got the key while the first held it: %v", l)
	default:
	}
	require.NoError(t, winner.Unlock(bg))
	cancel()
}
