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
// (failover, a primary killed, a copy's slot moved) over a 3-primary Redis
// Cluster: no two holders at once, and locks come back after each fault.
func TestTortureClusterShort(t *testing.T) {
	var log bytes.Buffer
	rep, err := Run(context.Background(), Config{
		Cluster:  true,
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
