package torture

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/redlock"
)

// TestTortureElectionShort is the election's short torture pass for
// `make test`: redlock's Election on 5 real masters, every safe fault
// once in a compressed rotation. It must find no two leaders at once, no
// term below an earlier leader's, no leader past its lease, no slow
// takeover outside faults, and recover after every fault.
func TestTortureElectionShort(t *testing.T) {
	shortPass(t, Config{Election: true, Goroutines: 2})
}

// brokenElection runs an election of Electors made by newElector on 3
// masters, under faults.
func brokenElection(t *testing.T, faults []Fault, longLeads float64, newElector func(cfg redlock.Config) (Elector, error)) *Report {
	t.Helper()
	rep, err := Run(context.Background(), Config{
		Duration: 8 * time.Second, Seed: testSeed, Election: true, Masters: 3, Clients: 2, Goroutines: 2,
		TTL: 300 * time.Millisecond, MaxTTL: time.Second, Faults: faults, LongLeads: longLeads,
		FaultTime: 1500 * time.Millisecond, HealTime: 500 * time.Millisecond,
		Slack: time.Second,
		NewElector: func(id int, addrs []string) (Elector, error) {
			cfg := DefaultLockerConfig(Config{TTL: 300 * time.Millisecond, MaxTTL: time.Second}, addrs)
			return newElector(cfg)
		},
		Logf: t.Logf,
	})
	require.NoError(t, err)
	return rep
}

// TestLocalTermsAreCaught: terms counted by each candidate on its own do
// not grow from one leader to the next, and the checker says so, without
// faults.
func TestLocalTermsAreCaught(t *testing.T) {
	rep := brokenElection(t, []Fault{}, -1, NewLocalTermElector)
	t.Logf("local terms: %d leaderships, %d regressions", rep.Leaderships, rep.Checker.FenceRegressions)
	require.Positive(t, rep.Leaderships)
	require.Positive(t, rep.Checker.FenceRegressions, "the checker missed terms from a local counter")
	assert.NotEmpty(t, rep.Problems())
}

// TestIgnoredLossIsCaught: leaders that ignore the end of their
// leadership (a failed renewal) act on under a majority partition, past
// their lease, and the run says so.
func TestIgnoredLossIsCaught(t *testing.T) {
	rep := brokenElection(t, []Fault{FaultMajorityPartition}, 1, NewIgnoringElector)
	t.Logf("ignoring leaders: %d leaderships, %d past their lease, %d violations", rep.Leaderships, rep.PastLease, rep.Checker.Violations)
	require.Positive(t, rep.PastLease, "the run missed a leader acting past its lease")
	assert.NotEmpty(t, rep.Problems())

	// The same schedule with leaders that stop: nothing.
	rep = brokenElection(t, []Fault{FaultMajorityPartition}, 1, NewRedlockElector)
	require.Positive(t, rep.Leaderships)
	assert.Zero(t, rep.PastLease)
	assert.Zero(t, rep.Checker.Violations)
}
