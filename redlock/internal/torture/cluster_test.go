package torture

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTortureClusterShort runs one rotation of the cluster faults
// (failover, a primary killed, a copy's slot moved, a failover that lost
// writes) over a 3-primary Redis Cluster, fenced: no two holders at once,
// no token below an earlier holder's, and locks come back after each
// fault.
func TestTortureClusterShort(t *testing.T) {
	var log bytes.Buffer
	rep, err := Run(context.Background(), Config{
		Cluster: true, Fencing: true,
		Duration: 60 * time.Second, Cycles: 1, Seed: testSeed,
		Clients: 3, Goroutines: 6, Keys: 2,
		TTL: 400 * time.Millisecond, MaxTTL: time.Second, FailoverGrace: 500 * time.Millisecond,
		// Six more processes on two cores under the race detector.
		MasterTimeout: 100 * time.Millisecond, Slack: time.Second,
		FaultTime: 2 * time.Second, HealTime: 700 * time.Millisecond,
		Logf: func(format string, args ...any) { t.Logf(format, args...) },
	})
	require.NoError(t, err)
	rep.WriteTable(&log)
	t.Logf("seed %d\n%s", testSeed, log.String())
	seen := map[Fault]bool{}
	for _, p := range rep.Phases {
		seen[p.Fault] = true
	}
	for _, f := range ClusterFaults() {
		assert.True(t, seen[f], "fault %s never ran", f)
	}
	assert.Positive(t, rep.Acquisitions)
	assert.Positive(t, rep.Checker.Fenced)
	assert.Empty(t, rep.Problems())
}

// TestBrokenLockIsCaughtOnCluster: the cluster topology's checker catches
// a lock without NX (SET on every primary, each under a tag of its own
// slots), as the standalone one does.
func TestBrokenLockIsCaughtOnCluster(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Cluster:  true,
		Duration: 2 * time.Second, Seed: testSeed, Clients: 2, Goroutines: 4, Keys: 1,
		TTL: 300 * time.Millisecond, MaxTTL: time.Second, Faults: []Fault{},
		Slack: time.Second,
		NewLocker: func(id int, addrs []string) (Locker, error) {
			return NewBrokenClusterLocker(addrs[0], testSeed+uint64(id))
		},
		Logf: t.Logf,
	})
	require.NoError(t, err)
	t.Logf("broken lock on a cluster: %d acquisitions, %d violations", rep.Acquisitions, rep.Checker.Violations)
	require.Positive(t, rep.Acquisitions)
	require.Positive(t, rep.Checker.Violations, "the checker missed a lock without NX")
}

// TestClusterFaultsNeedACluster: a cluster fault on standalone masters, or
// a proxy's fault on a cluster, is a config error.
func TestClusterFaultsNeedACluster(t *testing.T) {
	_, err := Run(context.Background(), Config{Faults: []Fault{FaultFailover}})
	require.ErrorContains(t, err, "fault failover with Cluster false")
	_, err = Run(context.Background(), Config{Cluster: true, Faults: []Fault{FaultPause}})
	require.ErrorContains(t, err, "fault pause with Cluster true")
}

// TestIncrMaxFencingIsCaughtOnCluster: over a cluster too, the fencing
// check catches tokens that go backwards: those of INCR-and-max with a
// counter per primary (not the lock copy's), a correct lock otherwise.
func TestIncrMaxFencingIsCaughtOnCluster(t *testing.T) {
	rep, err := Run(context.Background(), Config{
		Cluster: true, Fencing: true, ShortLived: -1,
		Duration: 5 * time.Second, Seed: testSeed, Clients: 3, Goroutines: 6, Keys: 2,
		TTL: 300 * time.Millisecond, MaxTTL: time.Second, Faults: []Fault{},
		Slack: time.Second,
		NewLocker: func(id int, addrs []string) (Locker, error) {
			return NewIncrMaxClusterLocker(addrs[0], 100*time.Millisecond, testSeed+uint64(id))
		},
		Logf: t.Logf,
	})
	require.NoError(t, err)
	t.Logf("INCR-and-max on a cluster: %d acquisitions, %d fenced, %d regressions, %d violations",
		rep.Acquisitions, rep.Checker.Fenced, rep.Checker.FenceRegressions, rep.Checker.Violations)
	require.Positive(t, rep.Checker.Fenced)
	require.Positive(t, rep.Checker.FenceRegressions, "the fencing check missed tokens that go backwards")
	assert.Zero(t, rep.Checker.Violations, "INCR-and-max is a correct lock")
}
