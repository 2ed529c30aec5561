package torture

import (
	"bytes"
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/redlock"
)

// TestBrokenSemaphoreIsCaught runs the counting checker over a semaphore
// that counts with a majority quorum (each master admits at most P): with
// 5 masters and 2 permits, three holders fit in 9 of the 10 admissions, so
// the checker must report more than 2 holders at once, without faults.
func TestBrokenSemaphoreIsCaught(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Duration: 4 * time.Second, Seed: testSeed, Masters: 5, Clients: 3, Goroutines: 4, Keys: 1, Permits: 2,
		TTL: 300 * time.Millisecond, MaxTTL: time.Second, Faults: []Fault{},
		Slack: time.Second,
		NewLocker: func(id int, addrs []string) (Locker, error) {
			return NewMajorityCounterLocker(addrs, pipe.Options{ReadTimeout: 200 * time.Millisecond}, 2, testSeed+uint64(id))
		},
		Logf: t.Logf,
	})
	require.NoError(t, err)
	t.Logf("majority counter: %d acquisitions, %d violations", rep.Acquisitions, rep.Checker.Violations)
	require.Positive(t, rep.Acquisitions)
	require.Positive(t, rep.Checker.Violations, "the checker missed a semaphore counted with a majority quorum")
	v := rep.Checker.Details[0]
	assert.Greater(t, v.Holders, 2)
	assert.NotEmpty(t, rep.Problems())
}

// TestTortureSemaphoreShort is the semaphore's short torture pass for
// `make test`: redlock's Semaphore of 2 permits on 5 real masters, fenced,
// every safe fault once in a compressed rotation. It must find no moment
// with more than 2 holders of a key, no permit's token below an earlier
// holder's of that permit, no permit granted while a majority is cut off,
// no panic, no stuck operation and no leaked goroutine, and recover after
// every fault.
func TestTortureSemaphoreShort(t *testing.T) { shortPass(t, Config{Permits: 2, Fencing: true}) }

// shortPass runs the compressed rotation of every safe fault on 5 real
// masters over keys of the kind that kind's Permits or ReadShare sets (or
// one election, with kind's Election; kind's Goroutines, if set, per
// client), and requires acquisitions and no problem.
func shortPass(t *testing.T, kind Config) {
	var log bytes.Buffer
	rep, err := Run(context.Background(), Config{
		Duration: 40 * time.Second, Cycles: 1, Seed: testSeed,
		Masters: 5, Clients: 3, Goroutines: cmp.Or(kind.Goroutines, 6), Keys: 2,
		Permits: kind.Permits, ReadShare: kind.ReadShare, Fencing: kind.Fencing, Election: kind.Election,
		TTL: 400 * time.Millisecond, MaxTTL: time.Second, MasterTimeout: 30 * time.Millisecond,
		Slack:     time.Second,
		FaultTime: 2 * time.Second, HealTime: 700 * time.Millisecond,
		Logf: func(format string, args ...any) { t.Logf(format, args...) },
	})
	require.NoError(t, err)
	rep.WriteTable(&log)
	t.Logf("seed %d\n%s", testSeed, log.String())
	require.Positive(t, rep.Acquisitions)
	assert.Empty(t, rep.Problems())
}

// TestBrokenRWLockIsCaught runs the checker over read locks that do not
// see the writer (semaphore permits of a name of their own): it must
// report a reader with a writer, without faults.
func TestBrokenRWLockIsCaught(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Duration: 3 * time.Second, Seed: testSeed, Masters: 3, Clients: 2, Goroutines: 4, Keys: 1, ReadShare: 0.5,
		TTL: 300 * time.Millisecond, MaxTTL: time.Second, Faults: []Fault{},
		Slack: time.Second, DisableRestartGuard: true,
		NewLocker: func(id int, addrs []string) (Locker, error) {
			return NewBrokenRWLocker(redlock.Config{Addrs: addrs, RetryDelay: 5 * time.Millisecond, Tries: 1 << 20, DisableRestartGuard: true})
		},
		Logf: t.Logf,
	})
	require.NoError(t, err)
	t.Logf("blind readers: %d acquisitions, %d violations", rep.Acquisitions, rep.Checker.Violations)
	require.Positive(t, rep.Checker.Violations, "the checker missed a reader beside a writer")
	v := rep.Checker.Details[0]
	assert.True(t, v.First.Shared != v.Second.Shared, "a reader and a writer: %+v", v)
}

// TestTortureRWShort is the read-write lock's short torture pass for
// `make test`: redlock's RWMutex on 5 real masters, half the rounds
// readers, every safe fault once in a compressed rotation, fenced. It must
// find no reader beside a writer, no two writers and no writer's token
// below an earlier writer's, and recover after every fault.
func TestTortureRWShort(t *testing.T) { shortPass(t, Config{ReadShare: 0.5, Fencing: true}) }
