package torture

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The liveness figures of a phase, and the bounds Problems holds a
// slow-rotation phase to: a run whose locks stall under one slow master
// must fail.
func TestSlowRotationLivenessIsChecked(t *testing.T) {
	s := time.Second
	grants := []time.Duration{s / 2, 1 * s, 2 * s, 5 * s, 9 * s, 10*s + 300*time.Millisecond}
	p := Phase{Fault: FaultSlowRotation, Start: s, Healed: 10 * s, Acquisitions: 4, Recovered: true, Recovery: 300 * time.Millisecond}
	p.liveness(grants)
	assert.InDelta(t, 4.0/9, p.PerSecond, 1e-9)
	assert.Equal(t, 4*s, p.LongestGap) // 5s -> 9s

	ok := Phase{Fault: FaultSlowRotation, Start: s, Healed: 3 * s, Acquisitions: 3, Recovered: true, Recovery: 100 * time.Millisecond}
	ok.liveness([]time.Duration{s + 500*time.Millisecond, 2 * s, 3 * s, 3*s + 100*time.Millisecond})
	assert.Equal(t, time.Second, ok.LongestGap)

	late := ok
	late.Recovery = 3 * time.Second

	for _, tc := range []struct {
		name  string
		phase Phase
		bad   bool
	}{
		{"within bounds", ok, false},
		{"gap past MaxSlowGap", p, true},
		{"recovery past MaxSlowRecovery", late, true},
		{"other faults are not held to them", Phase{Fault: FaultMajorityPartition, LongestGap: time.Hour, Recovered: true}, false},
	} {
		rep := &Report{Acquisitions: 1, Phases: []Phase{tc.phase}}
		if tc.bad {
			require.NotEmpty(t, rep.Problems(), tc.name)
		} else {
			require.Empty(t, rep.Problems(), tc.name)
		}
	}
}
