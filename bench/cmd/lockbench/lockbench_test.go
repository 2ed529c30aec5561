package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smokeOptions is a run short enough for go test: every mode, 1 round.
func smokeOptions(defs []contenderDef) Options {
	return Options{
		Modes:      allModes,
		Duration:   150 * time.Millisecond,
		Rounds:     1,
		Goroutines: []int{1, 4},
		ContendedG: 4,
		Contenders: defs,
		StartProxy: startFaultProxy,

		DegradedWindow:  200 * time.Millisecond,
		RenewalDuration: 500 * time.Millisecond,
		RenewalLocks:    []int{20},
		RenewalTTL:      300 * time.Millisecond,
		Setup: Setup{
			NodeTimeout: 50 * time.Millisecond,
			TTL:         10 * time.Second,
			RetryDelay:  2 * time.Millisecond,
			Tries:       1000,
			PoolSize:    16,
		},
	}
}

// startTestMasters starts three local masters (redis-server when
// installed, fakes otherwise) for the test.
func startTestMasters(t *testing.T) Masters {
	t.Helper()
	ms, stop, err := startMasters(3, false)
	require.NoError(t, err)
	t.Cleanup(stop)
	t.Logf("masters: %s", ms.Kind)
	return ms
}

// TestHarnessSmoke runs every mode for a moment on three masters and
// checks the shape of the report and of the tables.
func TestHarnessSmoke(t *testing.T) {
	ms := startTestMasters(t)
	defs := allContenders()
	if ms.Kind == kindFake {
		// The fake runs only Volley's scripts.
		defs = []contenderDef{{nameVolley, newVolley}}
	}
	rep, err := NewRunner(smokeOptions(defs), ms, nil).Run(context.Background())
	require.NoError(t, err)
	require.Empty(t, rep.Skipped)
	require.Len(t, rep.Contenders, len(defs))

	require.Len(t, rep.Latency, len(defs))
	for _, l := range rep.Latency {
		assert.Positive(t, l.N, l.Name)
		assert.LessOrEqual(t, l.P50, l.P99, l.Name)
		assert.NotEmpty(t, l.CDF, l.Name)
	}
	require.Len(t, rep.Throughput, 2*len(defs))
	for _, th := range rep.Throughput {
		assert.Positive(t, th.OpsPerSec, th.Name)
	}
	require.Len(t, rep.Contended, len(defs))
	for _, c := range rep.Contended {
		assert.Positive(t, c.AcqPerSec, c.Name)
		assert.Zero(t, c.Violations, c.Name)
	}
	require.Len(t, rep.Allocs, len(defs))
	require.Len(t, rep.Skew, 3*len(defs))
	require.Len(t, rep.Degraded, len(defs))
	for _, d := range rep.Degraded {
		assert.Positive(t, d.AcqPerSecWarm, d.Name)
		assert.Zero(t, d.Violations, d.Name)
	}
	require.Len(t, rep.DegradedSchedule, 3)
	if ms.Kind != kindFake {
		require.Len(t, rep.Adapters, len(adapterSetups))
		for _, a := range rep.Adapters {
			assert.Positive(t, a.P50Ms, a.Name)
		}
		assert.Greater(t, rep.Adapters[1].AllocsPerOp, rep.Adapters[0].AllocsPerOp, "otel spans cost nothing?")
	}
	// Multi: every contender (the peers key by key), each key count.
	require.Len(t, rep.Multi, len(defs)*len(multiKeyCounts))
	for _, m := range rep.Multi {
		assert.Positive(t, m.Lat.N, "%s %d keys", m.Name, m.Keys)
		assert.Zero(t, m.Errors, "%s %d keys", m.Name, m.Keys)
	}
	// Renewal: the three contenders that keep locks extended, if present.
	renewing := 0
	for _, d := range defs {
		if d.name == nameVolley || d.name == nameRedsyncGoredis || d.name == nameRueidislock {
			renewing++
		}
	}
	require.Len(t, rep.Renewal, renewing)
	for _, x := range rep.Renewal {
		assert.Zero(t, x.Errors, x.Name)
		assert.Zero(t, x.Lost, x.Name)
		assert.Positive(t, x.CommandsPerSec, x.Name)
	}
	require.Len(t, rep.Targets, 15)

	var out bytes.Buffer
	rep.WriteTables(&out)
	text := out.String()
	for _, section := range []string{"LATENCY:", "THROUGHPUT:", "CONTENDED:", "ALLOCS:", "SKEW:", "MULTI:", "RENEWAL:", "TARGETS"} {
		assert.Contains(t, text, section)
	}
	for _, d := range defs {
		assert.Contains(t, text, d.name)
	}
	assert.Contains(t, text, "G=4")

	var svg bytes.Buffer
	require.NoError(t, writeSVG(&svg, rep))
	requireWellFormedXML(t, svg.Bytes())
}

func requireWellFormedXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
	}
}

// broken is a contender whose lock excludes nobody.
type broken struct{}

func (broken) Name() string                                            { return "broken" }
func (broken) Note() string                                            { return "" }
func (broken) LockUnlock(context.Context, string, time.Duration) error { return nil }
func (broken) NewHolder() Holder                                       { return brokenHolder{} }
func (broken) Close() error                                            { return nil }

type brokenHolder struct{}

func (brokenHolder) Lock(context.Context, string, time.Duration) error {
	time.Sleep(10 * time.Microsecond)
	return nil
}
func (brokenHolder) Unlock(context.Context) error { return nil }

// TestMutualExclusionCheck: the contended mode fails the run when two
// holders overlap.
func TestMutualExclusionCheck(t *testing.T) {
	holders := make([]Holder, 8)
	for i := range holders {
		holders[i] = brokenHolder{}
	}
	res := runContended(context.Background(), holders, "k", time.Second, 50*time.Microsecond, time.Now(), 100*time.Millisecond)
	require.Positive(t, res.violations)

	o := smokeOptions([]contenderDef{{"broken", func(Setup) (Contender, error) { return broken{}, nil }}})
	o.Modes = []string{modeContended}
	rep, err := NewRunner(o, Masters{Kind: kindExternal, Addrs: []string{"127.0.0.1:1"}}, nil).Run(context.Background())
	require.ErrorIs(t, err, ErrOverlap)
	require.Len(t, rep.Contended, 1)
	require.Positive(t, rep.Contended[0].Violations)
}

func TestParseModes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"all", allModes, false},
		{"skew,latency", []string{modeLatency, modeSkew}, false},
		{"latency,latency", []string{modeLatency}, false},
		{"fast", nil, true},
	} {
		got, err := parseModes(tc.in)
		if tc.err {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestStats(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 1000; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	l := summarize(s)
	assert.Equal(t, 500.0, l.P50)
	assert.Equal(t, 990.0, l.P99)
	assert.Equal(t, 1000.0, l.Max)
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	assert.Equal(t, time.Millisecond, skewProfiles(5)[2].quorumDelay())
	assert.True(t, strings.HasPrefix(ratio(1, 4), "0.25"))
}

// degradedFigures: rates per phase, the longest gap from the first fault
// on (edges included), and the recovery after the last fault.
func TestDegradedFigures(t *testing.T) {
	sched := degradedSchedule(2, time.Second, time.Second, 1) // faults 1s-3s
	require.Equal(t, []float64{1000, 2000}, []float64{sched[0].StartMs, sched[1].StartMs})
	require.Equal(t, "drip", sched[1].Kind)
	s := func(ms ...int) []time.Duration {
		var out []time.Duration
		for _, m := range ms {
			out = append(out, time.Duration(m)*time.Millisecond)
		}
		return out
	}
	f := degradedFigures(s(100, 200, 1500, 1600, 2800, 3400, 3500), sched, 4*time.Second)
	assert.Equal(t, 2.0, f.Warm)
	assert.Equal(t, 1.5, f.Fault)    // 3 in 2s
	assert.Equal(t, 2.0, f.After)    // 2 in 1s
	assert.Equal(t, 1200.0, f.GapMs) // 1600 -> 2800
	assert.True(t, f.Recovered)
	assert.Equal(t, 400.0, f.RecoveryMs)

	f = degradedFigures(s(100, 1200), sched, 4*time.Second)
	assert.False(t, f.Recovered)
	assert.Equal(t, 1000.0, f.RecoveryMs) // the whole tail
	assert.Equal(t, 2800.0, f.GapMs)      // 1200 -> end
}
