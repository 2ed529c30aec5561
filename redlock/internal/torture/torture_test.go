package torture

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/redlock"
)

// testSeed is logged by every run; change it to replay a failure.
const testSeed = 20261122

// TestBrokenLockIsCaught runs the checker over a lock without NX: it grants
// whatever others hold, so the checker must report violations even
// without faults.
func TestBrokenLockIsCaught(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Duration: 2 * time.Second, Seed: testSeed, Masters: 3, Clients: 2, Goroutines: 4, Keys: 1,
		TTL: 300 * time.Millisecond, MaxTTL: time.Second, Faults: []Fault{},
		Slack: time.Second,
		NewLocker: func(id int, addrs []string) (Locker, error) {
			return NewBrokenLocker(addrs, pipe.Options{ReadTimeout: 200 * time.Millisecond}, testSeed+uint64(id))
		},
		Logf: t.Logf,
	})
	require.NoError(t, err)
	t.Logf("broken lock: %d acquisitions, %d violations", rep.Acquisitions, rep.Checker.Violations)
	require.Positive(t, rep.Acquisitions)
	require.Positive(t, rep.Checker.Violations, "the checker missed a lock without NX")
	require.NotEmpty(t, rep.Checker.Details)
	v := rep.Checker.Details[0]
	assert.Less(t, v.First.Start, v.First.End)
	assert.Less(t, v.Second.Start, v.First.End, "second acquired after the first ended")
	assert.NotEmpty(t, rep.Problems())
}

// halfMultiLocker is a deliberately broken multi-key lock: its LockMulti
// takes only the first key, as a non-atomic "lock them one by one" that
// stopped early would. The checker must see the second key held twice.
type halfMultiLocker struct{ Locker }

func (h halfMultiLocker) LockMulti(ctx context.Context, keys []string, ttl time.Duration) (Held, error) {
	return h.Lock(ctx, keys[0], ttl)
}

// TestBrokenMultiLockIsCaught: the checker judges a multi-key lock on every
// one of its keys.
func TestBrokenMultiLockIsCaught(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Duration: 3 * time.Second, Seed: testSeed, Masters: 3, Clients: 2, Goroutines: 4, Keys: 2,
		MultiKey: 0.5, TTL: 300 * time.Millisecond, MaxTTL: time.Second, Faults: []Fault{},
		Slack: time.Second, DisableRestartGuard: true,
		NewLocker: func(id int, addrs []string) (Locker, error) {
			lk, err := NewRedlockLocker(redlock.Config{Addrs: addrs, RetryDelay: 5 * time.Millisecond, Tries: 1 << 20, DisableRestartGuard: true})
			return halfMultiLocker{lk}, err
		},
		Logf: t.Logf,
	})
	require.NoError(t, err)
	t.Logf("half multi-lock: %d acquisitions, %d violations", rep.Acquisitions, rep.Checker.Violations)
	require.Positive(t, rep.Checker.Violations, "the checker missed a multi-key lock that took one key")
}

// TestIncrMaxFencingIsCaught runs the checker over the obvious
// multi-master fencing (INCR on each master, take the largest): a correct
// lock whose tokens go backwards. The fencing check must catch it, as it
// must let redlock's tokens pass (TestTortureShort).
func TestIncrMaxFencingIsCaught(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Duration: 5 * time.Second, Seed: testSeed, Masters: 5, Clients: 3, Goroutines: 6, Keys: 2,
		TTL: 300 * time.Millisecond, MaxTTL: time.Second, Faults: []Fault{},
		Slack: time.Second, Fencing: true,
		NewLocker: func(id int, addrs []string) (Locker, error) {
			return NewIncrMaxLocker(addrs, pipe.Options{ReadTimeout: 200 * time.Millisecond}, 50*time.Millisecond, testSeed+uint64(id))
		},
		Logf: t.Logf,
	})
	require.NoError(t, err)
	t.Logf("INCR-and-max: %d acquisitions, %d fenced, %d regressions, %d violations",
		rep.Acquisitions, rep.Checker.Fenced, rep.Checker.FenceRegressions, rep.Checker.Violations)
	require.Positive(t, rep.Checker.Fenced)
	require.Positive(t, rep.Checker.FenceRegressions, "the fencing check missed tokens that go backwards")
	assert.Zero(t, rep.Checker.Violations, "INCR-and-max is a correct lock")
	assert.NotEmpty(t, rep.Problems())
}

// TestTortureShort is the short pass of the torture run for `make test`:
// redlock with the restart guard on, every safe fault once in a compressed
// rotation, against five real masters. It must find no violation, no lock
// granted while a majority is cut off, no panic, no stuck operation and no
// leaked goroutine, and recover after every fault.
func TestTortureShort(t *testing.T) {
	var log bytes.Buffer
	rep, err := Run(context.Background(), Config{
		Duration: 45 * time.Second, Cycles: 1, Seed: testSeed,
		Masters: 5, Clients: 3, Goroutines: 6, Keys: 2,
		TTL: 400 * time.Millisecond, MaxTTL: time.Second, MasterTimeout: 30 * time.Millisecond,
		Fencing: true,
		// The race detector on two cores stretches scheduling.
		Slack:     time.Second,
		FaultTime: 3 * time.Second, HealTime: 700 * time.Millisecond,
		Logf: func(format string, args ...any) { t.Logf(format, args...) },
	})
	require.NoError(t, err)
	rep.WriteTable(&log)
	t.Logf("seed %d\n%s", testSeed, log.String())
	seen := map[Fault]bool{}
	for _, p := range rep.Phases {
		seen[p.Fault] = true
	}
	for _, f := range SafeFaults() {
		assert.True(t, seen[f], "fault %s never ran", f)
	}
	assert.Positive(t, rep.Checker.Fenced, "fencing on: holders carry tokens")
	assert.Empty(t, rep.Problems())
}

func TestTortureHandOvers(t *testing.T) {
	// Unfenced, so that Unlock hands locks to waiters of the same Client
	// (fenced locks are never handed over): under faults, hand-overs and
	// releases mixed keep mutual exclusion.
	var handedOver atomic.Int64
	cfg := Config{
		Duration: 25 * time.Second, Cycles: 1, Seed: testSeed + 1,
		Masters: 5, Clients: 3, Goroutines: 6, Keys: 2,
		TTL: 400 * time.Millisecond, MaxTTL: time.Second, MasterTimeout: 30 * time.Millisecond,
		Slack:     time.Second,
		FaultTime: 1500 * time.Millisecond, HealTime: 500 * time.Millisecond,
		Logf: func(format string, args ...any) { t.Logf(format, args...) },
	}
	cfg.NewLocker = func(_ int, addrs []string) (Locker, error) {
		lc := DefaultLockerConfig(cfg, addrs)
		lc.Hooks.Event = func(ev redlock.Event, _ string) {
			if ev == redlock.EventHandedOver {
				handedOver.Add(1)
			}
		}
		return NewRedlockLocker(lc)
	}
	rep, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	var log bytes.Buffer
	rep.WriteTable(&log)
	t.Logf("seed %d, %d hand-overs\n%s", testSeed+1, handedOver.Load(), log.String())
	assert.Positive(t, handedOver.Load(), "no lock was handed over")
	assert.Positive(t, rep.Checker.Intervals)
	assert.Empty(t, rep.Problems())
}

// TestDoRoundsCountLostHolds: Do rounds (Config.DoShare) hold their keys
// through renewals and lose none without faults; with MaxExtensions 1
// (BreakRenewals) the long ones are lost, and the report counts them.
func TestDoRoundsCountLostHolds(t *testing.T) {
	for _, broken := range []bool{false, true} {
		rep, err := Run(context.Background(), Config{
			Duration: 4 * time.Second, Seed: testSeed + 2, Masters: 3, Clients: 2, Goroutines: 2, Keys: 3,
			TTL: 300 * time.Millisecond, MaxTTL: time.Second, Faults: []Fault{},
			DoShare: 1, DoTTLs: 6, BreakRenewals: broken,
			Slack: time.Second,
			Logf:  t.Logf,
		})
		require.NoError(t, err)
		t.Logf("broken %v: %d Do holds, %d lost, %d violations", broken, rep.DoHolds, rep.DoLost, rep.Checker.Violations)
		require.Positive(t, rep.DoHolds)
		assert.Zero(t, rep.Checker.Violations)
		if broken {
			assert.Positive(t, rep.DoLost, "MaxExtensions 1 loses long holds: the count missed them")
		} else {
			assert.Zero(t, rep.DoLost)
		}
	}
}
