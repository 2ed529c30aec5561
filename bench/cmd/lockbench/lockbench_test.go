package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// TestMain makes the test binary a child of the handoff and semaphore
// modes when they re-execute it, one that can also build the broken
// contender.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == handoffChildCmd {
		os.Exit(handoffChildMain(append(append(allContenders(), semaphoreDefs()...), brokenDef)))
	}
	os.Exit(m.Run())
}

// smokeOptions is a run short enough for go test: every mode, 1 round.
// The semaphore mode runs its Go contenders only: redis-semaphore's first
// run installs npm packages, which needs the network.
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
		HandoffProcs:    2,
		HandoffG:        2,
		FleetProcs:      []int{2},
		FleetG:          2,
		FleetHolds:      []time.Duration{0, time.Millisecond},
		ElectionTTL:     300 * time.Millisecond,
		ElectionRounds:  1,
		SemaphoreContenders: slices.DeleteFunc(slices.Clone(semaphoreContenders), func(c semaphoreContender) bool {
			return c.name == nameRedisSemaphore
		}),
		// Long enough for Volley (a quorum of primaries is still up), not
		// for a peer that waits for the promotion and longer.
		ClusterRecoveryBound: 5 * time.Second,
		Setup: Setup{
			MasterTimeout: 50 * time.Millisecond,
			TTL:           10 * time.Second,
			RetryDelay:    2 * time.Millisecond,
			Tries:         1000,
			PoolSize:      16,
		},
	}
}

// startTestMasters starts three local masters (redis-server when
// installed, fakes otherwise) for the test.
func startTestMasters(t *testing.T) Masters {
	t.Helper()
	ms, stop, err := startMasters(3, false, "redis-server")
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
		defs = []contenderDef{{name: nameVolley, new: newVolley}}
	}
	if runtime.GOOS != "linux" {
		defs = slices.DeleteFunc(defs, func(d contenderDef) bool {
			return d.name == nameFloor || d.name == nameFloorBlocking || d.name == nameFloorC
		})
	}
	// The floor takes part in the latency, throughput, contended and allocs
	// modes, and adds the floor-pipelined row to the throughput mode.
	floors := 0
	if slices.ContainsFunc(defs, func(d contenderDef) bool { return d.name == nameFloor }) {
		floors = 1
	}
	opts := smokeOptions(defs)
	if ms.Kind == kindFake {
		// Nor the majority counter's script.
		opts.SemaphoreContenders = semaphoreContenders[:1]
	}
	rep, err := NewRunner(opts, ms, nil).Run(context.Background())
	require.NoError(t, err)
	// Every contender that takes part in some modes only is noted once,
	// as skipped in the others. floor-c without a C compiler is skipped,
	// as not measured (its own tests fail then).
	var skipped []string
	for _, d := range defs {
		if d.modes != nil {
			out := slices.DeleteFunc(slices.Clone(allModes), func(m string) bool { return m == modeElection || d.takesPart(m) })
			skipped = append(skipped, d.name+": not in the "+strings.Join(out, ", ")+" modes: takes part only in "+strings.Join(d.modes, ", "))
		}
	}
	if _, err := findCCompiler(); err != nil && slices.ContainsFunc(defs, func(d contenderDef) bool { return d.name == nameFloorC }) {
		skipped = append(skipped, nameFloorC+": "+errNoCCompiler.Error())
		defs = slices.DeleteFunc(defs, func(d contenderDef) bool { return d.name == nameFloorC })
	}
	if ms.Kind == kindFake {
		skipped = append(skipped, modeCluster+" mode: "+errClusterNeedsServers)
	}
	require.Equal(t, skipped, rep.Skipped)
	require.Len(t, rep.Contenders, len(defs)+floors)
	// in counts the contenders of defs that take part in mode.
	in := func(mode string) int {
		n := 0
		for _, d := range defs {
			if d.takesPart(mode) {
				n++
			}
		}
		return n
	}

	require.Len(t, rep.Latency, in(modeLatency))
	for _, l := range rep.Latency {
		assert.Positive(t, l.N, l.Name)
		assert.LessOrEqual(t, l.P50, l.P99, l.Name)
		assert.NotEmpty(t, l.CDF, l.Name)
	}
	require.Len(t, rep.Throughput, 2*(in(modeThroughput)+floors))
	for _, th := range rep.Throughput {
		assert.Positive(t, th.OpsPerSec, th.Name)
		if th.Name == nameFloorPipelined {
			assert.Zero(t, th.Latency.N, "the pipelined row times no operation of its own")
		} else {
			assert.Positive(t, th.Latency.N, th.Name)
			assert.LessOrEqual(t, th.Latency.P50, th.Latency.P99, th.Name)
		}
		if runtime.GOOS == "linux" {
			assert.Positive(t, th.Cost.CPUUs, th.Name)
			assert.Positive(t, th.Cost.IOCalls, th.Name, "a Lock+Unlock reads and writes sockets")
			assert.GreaterOrEqual(t, th.Cost.Switches, 0.0, th.Name)
		}
	}
	require.Len(t, rep.Contended, in(modeContended))
	for _, c := range rep.Contended {
		assert.Positive(t, c.AcqPerSec, c.Name)
		assertOverlapsHeld(t, rep, c.Name, c.Violations, c.Name)
	}
	require.Len(t, rep.Allocs, in(modeAllocs))
	require.Len(t, rep.Skew, 3*in(modeSkew))
	require.Len(t, rep.Degraded, in(modeDegraded))
	for _, d := range rep.Degraded {
		// Before the faults every contender of ours takes the lock. A peer
		// may take none in the smoke's 100 ms warm-up on a loaded machine
		// (redsync-goredis under make test-stress's hogs, whose pools were
		// still dialling): that is its figure, logged, not a failure.
		switch {
		case !peers[d.Name]:
			assert.Positive(t, d.AcqPerSecWarm, d.Name)
		case d.AcqPerSecWarm == 0:
			t.Logf("degraded: %s took no lock in the warm-up", d.Name)
		}
		assertOverlapsHeld(t, rep, d.Name, d.Violations, d.Name+" degraded")
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
	require.Len(t, rep.Multi, in(modeMulti)*len(multiKeyCounts))
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
		if d.name == nameVolley {
			renewing++ // volley-semaphore: permits held in Semaphore.Do
		}
	}
	require.Len(t, rep.Renewal, renewing)
	for _, x := range rep.Renewal {
		assert.Zero(t, x.Errors, x.Name)
		assert.Zero(t, x.Lost, x.Name)
		assert.Positive(t, x.CommandsPerSec, x.Name)
	}
	// Election: both elections, after a resignation and after a crash,
	// each with a takeover that a follower waiting for the lease (crash)
	// or for the release (resign) made.
	require.Len(t, rep.Election, 4)
	for _, x := range rep.Election {
		assert.Zero(t, x.Errors, x.Name, x.End)
		require.Len(t, x.Samples, 1, x.Name, x.End)
		assert.Positive(t, x.P50, x.Name, x.End)
	}
	// Handoff: every contender in both settings.
	require.Len(t, rep.Handoff, 2*in(modeHandoff))
	for _, h := range rep.Handoff {
		assert.Positive(t, h.AcqPerSec, "%s %s", h.Name, h.Setting)
		assertOverlapsHeld(t, rep, h.Name, h.Overlaps, h.Name+" "+h.Setting)
	}
	// Fleet: redsync-goredis and Volley, those of defs, at each hold; the
	// masters' counters on real servers only.
	fleet := 0
	for _, d := range defs {
		if slices.Contains(fleetContenders, d.name) {
			fleet++
		}
	}
	require.Len(t, rep.Fleet, 2*fleet)
	for _, x := range rep.Fleet {
		assert.Equal(t, 2, x.Procs, x.Name)
		assert.Positive(t, x.GrantsPerSec, "%s hold %vms", x.Name, x.HoldMs)
		assert.Positive(t, x.Wait.N, "%s hold %vms", x.Name, x.HoldMs)
		assertOverlapsHeld(t, rep, x.Name, x.Overlaps, fmt.Sprintf("%s hold %vms", x.Name, x.HoldMs))
		if x.Name == "volley" {
			assert.Len(t, x.Reconnects, len(ms.Addrs), "Volley's processes count their reconnects")
		} else {
			assert.Nil(t, x.Reconnects, x.Name)
		}
		if ms.Kind == kindFake {
			assert.Equal(t, -1.0, x.CommandsPerGrant, x.Name)
			assert.Nil(t, x.Accepted, x.Name)
		} else {
			assert.GreaterOrEqual(t, x.CommandsPerGrant, 2.0, "%s hold %vms: a grant takes a command on a quorum at least", x.Name, x.HoldMs)
			assert.Len(t, x.Accepted, len(ms.Addrs), x.Name)
		}
	}
	// Cluster: on real servers only, every cluster contender, and Volley
	// locks again after a primary's death while a quorum of primaries is up.
	if ms.Kind != kindFake {
		// One more Volley per further cluster size (volley-cluster-6p).
		require.Len(t, rep.ClusterLatency, len(clusterContenders)+1)
		for _, c := range rep.ClusterLatency {
			assert.Positive(t, c.Lat.N, c.Name)
			assert.Zero(t, c.Errors, c.Name)
		}
		// The spread per size: every primary took a share of the lock
		// commands, none failed.
		require.Len(t, rep.ClusterSpread, 2)
		for _, sp := range rep.ClusterSpread {
			assert.Len(t, sp.Commands, sp.Primaries)
			assert.Zero(t, sp.Errors, "%d primaries", sp.Primaries)
			assert.Greater(t, sp.MinShare, 0.8, "%d primaries: %v", sp.Primaries, sp.Commands)
			assert.Less(t, sp.MaxShare, 1.2, "%d primaries: %v", sp.Primaries, sp.Commands)
		}
		require.Len(t, rep.ClusterRecovery, len(clusterContenders)-1, "every contender on a cluster")
		v := rep.ClusterRecovery[slices.IndexFunc(rep.ClusterRecovery, func(c ClusterRecovery) bool { return c.Name == nameVolleyCluster })]
		assert.False(t, v.NeverLocked, "volley over a cluster that lost one of 3 primaries: %s", v.LastError)
		assert.Empty(t, v.PromoteError)
	} else {
		assert.Empty(t, rep.ClusterLatency)
	}
	// Semaphore: the mutex and the semaphore, each contender of the
	// contended part. Volley's never admits more than its permits; the
	// majority counter may (not asserted either way).
	// The attempts part: no TryAcquire refused while a permit was free.
	require.Len(t, rep.SemaphoreAttempts, semaphorePermits)
	for _, a := range rep.SemaphoreAttempts {
		assert.Zero(t, a.TryRefused, "%d of %d held", a.Held, a.Permits)
		assert.GreaterOrEqual(t, a.MeanAttempts, 1.0)
	}
	require.Len(t, rep.SemaphoreLatency, 2)
	for _, l := range rep.SemaphoreLatency {
		assert.Positive(t, l.Lat.N, l.Name)
		assert.Zero(t, l.Errors, l.Name)
	}
	assert.Equal(t, nameVolleySemaphore, rep.SemaphoreLatency[1].Name)
	assert.Positive(t, rep.SemaphoreLatency[1].P50XMutex)
	require.Len(t, rep.Semaphore, len(opts.SemaphoreContenders))
	for i, x := range rep.Semaphore {
		assert.Equal(t, opts.SemaphoreContenders[i].name, x.Name)
		assert.Positive(t, x.AcqPerSec, x.Name)
		assert.Positive(t, x.Wait.N, x.Name)
		assert.Positive(t, x.MostHolders, x.Name)
		assert.NotEmpty(t, x.Note, x.Name)
	}
	assert.Zero(t, rep.Semaphore[0].OverPermits)
	assert.LessOrEqual(t, rep.Semaphore[0].MostHolders, semaphorePermits)
	// 37 (nine of them against floor-blocking), and on real servers one
	// for the 6-primary p50 and one per cluster size's spread.
	targets := 37
	if ms.Kind != kindFake {
		targets += 3
	}
	require.Len(t, rep.Targets, targets)

	var out bytes.Buffer
	rep.WriteTables(&out)
	text := out.String()
	sections := []string{"LATENCY:", "THROUGHPUT:", "THROUGHPUT COST:", "CONTENDED:", "ALLOCS:", "SKEW:", "MULTI:", "RENEWAL:", "HANDOFF:", "SEMAPHORE LATENCY:", "SEMAPHORE ATTEMPTS:", "SEMAPHORE:", "TARGETS"}
	if ms.Kind != kindFake {
		sections = append(sections, "CLUSTER:", "CLUSTER SPREAD:", "CLUSTER RECOVERY:")
	}
	for _, section := range sections {
		assert.Contains(t, text, section)
	}
	for _, d := range defs {
		assert.Contains(t, text, d.name)
	}
	for _, c := range opts.SemaphoreContenders {
		assert.Contains(t, text, c.name)
	}
	assert.Contains(t, text, "G=4")
	if in(modeLatency) > 0 && slices.ContainsFunc(defs, func(d contenderDef) bool { return d.name == nameFloorC }) {
		assert.Contains(t, text, `"x floor-c" to floor-c`)
	}

	requireFigure(t, rep, 3)
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

var brokenDef = contenderDef{name: "broken", new: func(Setup) (Contender, error) { return broken{}, nil }}

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

// assertOverlapsHeld checks one row's overlaps against the harness's
// rule: none for Volley, a floor or any contender not a peer; a peer's
// (another library's, see peers) are its own bug, which a run under CPU
// hogs can meet, and must be listed in the report's PeerOverlaps.
func assertOverlapsHeld(t *testing.T, rep *Report, name string, n int, what string) {
	t.Helper()
	if !peers[name] || n == 0 {
		assert.Zero(t, n, what)
		return
	}
	listed := slices.ContainsFunc(rep.PeerOverlaps, func(line string) bool {
		return strings.HasPrefix(line, name+" ") || strings.Contains(line, " "+name+" ")
	})
	assert.True(t, listed, "%s: %d overlaps, not in the report's PeerOverlaps %q", what, n, rep.PeerOverlaps)
}

// TestMutualExclusionCheck: the contended mode fails the run when two
// holders of a contender not a peer's overlap; a peer's overlaps are
// reported without failing it.
func TestMutualExclusionCheck(t *testing.T) {
	holders := make([]Holder, 8)
	for i := range holders {
		holders[i] = brokenHolder{}
	}
	res := runContended(context.Background(), holders, "k", time.Second, 50*time.Microsecond, time.Now(), 100*time.Millisecond)
	require.Positive(t, res.violations)

	o := smokeOptions([]contenderDef{brokenDef})
	o.Modes = []string{modeContended}
	rep, err := NewRunner(o, Masters{Kind: kindExternal, Addrs: []string{"127.0.0.1:1"}}, nil).Run(context.Background())
	require.ErrorIs(t, err, ErrOverlap)
	require.Len(t, rep.Contended, 1)
	require.Positive(t, rep.Contended[0].Violations)
	require.Empty(t, rep.PeerOverlaps)

	// A peer's overlaps are reported, and do not fail the run.
	peers[brokenDef.name] = true
	t.Cleanup(func() { delete(peers, brokenDef.name) })
	rep, err = NewRunner(o, Masters{Kind: kindExternal, Addrs: []string{"127.0.0.1:1"}}, nil).Run(context.Background())
	require.NoError(t, err)
	require.Len(t, rep.Contended, 1)
	require.Positive(t, rep.Contended[0].Violations)
	require.Len(t, rep.PeerOverlaps, 1)
	assert.Contains(t, rep.PeerOverlaps[0], "broken contended G=")
	var out bytes.Buffer
	rep.WriteTables(&out)
	assert.Contains(t, out.String(), "overlapped")
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

// hold is a synthetic acquisition, times in ms.
func hold(proc, g int, began, acquired, released float64) holdEvent {
	ns := func(msec float64) int64 { return int64(msec * float64(time.Millisecond)) }
	return holdEvent{Proc: proc, G: g, Began: ns(began), Acquired: ns(acquired), Released: ns(released)}
}

// TestHandoffFigures: the merge of every process's events into
// hand-offs, waits and overlaps.
func TestHandoffFigures(t *testing.T) {
	for _, tc := range []struct {
		name        string
		events      []holdEvent
		handoffs    []float64 // ms
		successions int
		overlaps    int
		longestWait float64
	}{
		{
			name: "waiters served in turn",
			events: []holdEvent{
				hold(0, 0, 0, 10, 20),
				hold(1, 0, 5, 25, 30), // waiting since 5 for the release at 20
				hold(1, 1, 12, 40, 50),
				hold(0, 1, 1, 51, 52),
			},
			handoffs:    []float64{1, 5, 10},
			successions: 3,
			longestWait: 50,
		},
		{
			name: "barging and retakes are not hand-offs",
			events: []holdEvent{
				hold(0, 0, 0, 10, 20),
				hold(0, 0, 21, 22, 24), // the releaser retakes
				hold(0, 1, 25, 26, 30), // arrived after the release at 24: barged in
				hold(1, 0, 2, 35, 40),  // waiting since 2: a hand-off, 5 after the release at 30
			},
			handoffs:    []float64{5},
			successions: 3,
			longestWait: 33,
		},
		{
			name: "overlapping holds of different goroutines",
			events: []holdEvent{
				hold(0, 0, 0, 10, 30),
				hold(1, 0, 0, 12, 14), // inside the first
				hold(1, 1, 0, 20, 40), // inside the first too
				hold(0, 1, 0, 40, 41), // from the release at 40 on: not an overlap
			},
			handoffs:    []float64{6, 10},
			successions: 2,
			overlaps:    2,
			longestWait: 40,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Order must not matter: events come process by process.
			rev := slices.Clone(tc.events)
			slices.Reverse(rev)
			f := handoffFigures(rev, 0, int64(100*time.Millisecond), 1)
			assert.Equal(t, len(tc.events), f.Acquired)
			assert.InDelta(t, float64(len(tc.events))/0.1, f.AcqPerSec, 1e-9)
			assert.Equal(t, tc.successions, f.Successions)
			assert.Equal(t, tc.overlaps, f.Overlaps)
			assert.Equal(t, tc.longestWait, f.Wait.Max)
			var want []time.Duration
			for _, h := range tc.handoffs {
				want = append(want, time.Duration(h*float64(time.Millisecond)))
			}
			assert.Equal(t, summarize(want), f.Handoff)
			assert.InDelta(t, float64(len(tc.handoffs))/float64(tc.successions), f.share(), 1e-9)
		})
	}

	// Acquisitions outside [start, end) are merged but not counted in the
	// rate; rounds without samples leave zeros, never NaN.
	f := handoffFigures([]holdEvent{hold(0, 0, 0, 5, 6), hold(0, 1, 7, 150, 151)}, 0, int64(100*time.Millisecond), 1)
	assert.Equal(t, 1, f.Acquired)
	assert.Equal(t, 1, f.Successions)
	assert.Zero(t, f.Handoff.N)
	res := handoffResult("x", settingEqual, "", 1, 2, []handoffFigure{f, {}}, 0, 0)
	assert.Zero(t, res.Handoff.P50)
	assert.Zero(t, res.HandoffShare)
	assert.Equal(t, 143.0, res.LongestWaitMs)
	_, err := json.Marshal(res)
	require.NoError(t, err)
}

// TestFleetFigures: the merge of every process's events and the
// masters' counters into one round's fleet figures, and the rounds into
// a result.
func TestFleetFigures(t *testing.T) {
	msNs := func(msec float64) int64 { return int64(msec * float64(time.Millisecond)) }
	start, end := int64(0), msNs(100)
	granted := []holdEvent{
		hold(0, 0, 0, 10, 12),
		hold(0, 0, 12, 40, 41),
		hold(0, 0, 41, 95, 97), // without it 41 -> 95: 54
		hold(0, 1, 0, 20, 30),  // and nothing after 30: 70, the longest
		hold(1, 0, 0, 60, 61),
		hold(1, 1, 0, 65, 66),
		hold(1, 0, 61, 120, 121), // after the end: no grant; without it 61 -> 100
	}
	w := masterWindow{
		before: []masterCount{{Commands: 100, Accepted: 10, Open: 4}, {Commands: 200, Accepted: 20, Open: 5}},
		// Master 0: two new connections that stayed; master 1: one
		// closed and one accepted, a reconnect. Each also accepted the
		// connection that read it.
		after: []masterCount{{Commands: 160, Accepted: 13, Open: 6}, {Commands: 250, Accepted: 22, Open: 5}},
		until: msNs(80),
	}
	rev := slices.Clone(granted)
	slices.Reverse(rev) // order must not matter
	f := fleetFigures(rev, start, end, 2, 2, w)
	assert.Equal(t, 6, f.Acquired)
	assert.InDelta(t, 60.0, f.AcqPerSec, 1e-9)
	assert.Zero(t, f.Overlaps)
	assert.Equal(t, 7, f.Wait.N, "every acquisition's wait, the one after the end too")
	assert.Equal(t, 70*time.Millisecond, f.LongestWithout)
	assert.Zero(t, f.ProcsWithout)
	assert.Equal(t, int64(110), f.Commands)
	assert.Equal(t, 5, f.Counted, "grants before the second read")
	assert.InDelta(t, 0.08, f.Seconds, 1e-9)
	assert.Equal(t, []int64{2, 1}, f.Accepted)
	assert.Equal(t, []int64{0, 1}, f.Closed)

	// A stall that ended at 50 ms: the next grant came at 60 (10 ms
	// later), the one before at 40 (a gap of 20); one that ended at 99
	// had no grant after it in the window.
	w.stallEnd = msNs(50)
	st := fleetFigures(rev, start, end, 2, 2, w)
	assert.True(t, st.Stalled)
	assert.Equal(t, 10*time.Millisecond, st.StallResume)
	assert.Equal(t, 20*time.Millisecond, st.StallGap)
	w.stallEnd = msNs(99)
	st2 := fleetFigures(rev, start, end, 2, 2, w)
	assert.Equal(t, time.Duration(-1), st2.StallResume)
	x := fleetResult("c", "", 2, 2, 0, []fleetFigure{st, f}, 0, 0)
	assert.Equal(t, 10.0, x.StallResumeMs, "the stalled round's; an unstalled one counts for nothing")
	assert.Equal(t, 20.0, x.StallGapMs)
	x = fleetResult("c", "", 2, 2, 0, []fleetFigure{st, st2}, 0, 0)
	assert.Equal(t, -1.0, x.StallResumeMs, "no grant after a stall is the worst")
	w.stallEnd = 0

	// A process whose only acquisition came after the end had no grant:
	// its goroutines went the whole window without the lock, as did a
	// goroutine of a process that never got one; counters not measured.
	late := append(slices.Clone(granted), hold(2, 0, 0, 101, 102))
	g := fleetFigures(late, start, end, 4, 2, masterWindow{})
	assert.Equal(t, 2, g.ProcsWithout)
	assert.Equal(t, 100*time.Millisecond, g.LongestWithout)
	assert.Equal(t, int64(-1), g.Commands)
	assert.Zero(t, g.Counted)
	assert.Nil(t, g.Accepted)

	// Rounds: rates and commands are medians over the rounds that have
	// them, the longest time without, the processes without and each
	// master's connections the worst round's.
	none := fleetFigures(nil, start, end, 2, 2, masterWindow{
		before: []masterCount{{Commands: 0, Accepted: 1}, {Accepted: 1}},
		after:  []masterCount{{Commands: 90, Accepted: 5}, {Commands: 10, Accepted: 2}},
		until:  msNs(90),
	})
	assert.Equal(t, 2, none.ProcsWithout)
	res := fleetResult("x", "note", 2, 2, time.Millisecond, []fleetFigure{f, none, g}, 3, 1)
	assert.Equal(t, []float64{60, 0, 60}, res.Rounds)
	assert.Equal(t, 60.0, res.GrantsPerSec)
	assert.Equal(t, 1.0, res.HoldMs)
	assert.InDelta(t, 22.0, res.CommandsPerGrant, 1e-9, "110 commands over 5 grants; the round without a grant left out")
	assert.InDelta(t, (110/0.08+100/0.09)/2, res.CommandsPerSec, 1e-9)
	assert.Equal(t, 100.0, res.LongestWithoutMs)
	assert.Equal(t, 2, res.ProcsWithout)
	assert.Equal(t, []int64{3, 1}, res.Accepted)
	assert.Equal(t, []int64{3, 1}, res.Closed)
	assert.Equal(t, 3, res.Errors)
	assert.Equal(t, 1, res.UnlockErrors)

	// No grant in any round: no commands per grant (0), the rate still;
	// nothing measured: -1 for both. Never NaN.
	res = fleetResult("x", "", 2, 2, 0, []fleetFigure{none}, 0, 0)
	assert.Zero(t, res.CommandsPerGrant)
	assert.InDelta(t, 100/0.09, res.CommandsPerSec, 1e-9)
	assert.Zero(t, res.Wait.N)
	res = fleetResult("x", "", 2, 2, 0, []fleetFigure{g}, 0, 0)
	assert.Equal(t, -1.0, res.CommandsPerGrant)
	assert.Equal(t, -1.0, res.CommandsPerSec)
	_, err := json.Marshal(res)
	require.NoError(t, err)
}

// TestSemaphoreFigures: with P permits, an acquisition is over P when it
// makes more than P holders at once; a release at the instant of an
// acquisition does not hold with it.
func TestSemaphoreFigures(t *testing.T) {
	events := []holdEvent{
		hold(0, 0, 0, 10, 30),
		hold(1, 0, 0, 12, 20), // 2 holders
		hold(1, 1, 0, 15, 25), // 3: over 2
		hold(0, 1, 0, 16, 40), // 4: over 2
		hold(2, 0, 0, 25, 26), // the release at 25 first: 3, over 2
		hold(2, 1, 0, 30, 50), // 30 and 25, 26 released: 2
	}
	f := handoffFigures(events, 0, int64(100*time.Millisecond), 2)
	assert.Equal(t, 4, f.MostHolders)
	assert.Equal(t, 3, f.Overlaps)
	f = handoffFigures(events, 0, int64(100*time.Millisecond), 4)
	assert.Equal(t, 4, f.MostHolders)
	assert.Zero(t, f.Overlaps)
}

// TestSemaphoreWithoutNode: without node, redis-semaphore is reported not
// measured, and the mode goes on with the others.
func TestSemaphoreWithoutNode(t *testing.T) {
	ms := startTestMasters(t)
	t.Setenv("PATH", t.TempDir())
	_, err := redisSemaphoreChild(context.Background(), newProgress(nil))
	require.EqualError(t, err, "node not found")

	// 8 holders for 4 permits: the semaphore admits several, never more
	// than 4.
	o := smokeOptions(nil)
	o.Modes = []string{modeSemaphore}
	o.HandoffG = 4
	o.SemaphoreContenders = []semaphoreContender{semaphoreContenders[0], semaphoreContenders[2]}
	require.Equal(t, nameRedisSemaphore, o.SemaphoreContenders[1].name)
	rep, err := NewRunner(o, ms, nil).Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"redis-semaphore: not measured: node not found"}, rep.Skipped)
	require.Len(t, rep.Semaphore, 1)
	v := rep.Semaphore[0]
	assert.Equal(t, nameVolleySemaphore, v.Name)
	assert.Positive(t, v.AcqPerSec)
	assert.GreaterOrEqual(t, v.MostHolders, 2)
	assert.LessOrEqual(t, v.MostHolders, semaphorePermits)
	assert.Zero(t, v.OverPermits)
	var out bytes.Buffer
	rep.WriteTables(&out)
	assert.Contains(t, out.String(), "SEMAPHORE: one semaphore of 4 permits, 2 processes x 4 goroutines, hold 5ms")
	assert.Contains(t, out.String(), "\nredis-semaphore: not measured: node not found\n")
}

// TestRedisSemaphoreChild runs the node child where a lockbench run has
// installed its packages (then it needs no network).
func TestRedisSemaphoreChild(t *testing.T) {
	dir, err := nodeCacheDir()
	require.NoError(t, err)
	if _, err := exec.LookPath("node"); err != nil || !nodeInstalled(dir) {
		t.Skip("needs node, and the npm packages a lockbench run of the semaphore mode installs into " + dir)
	}
	ms := startTestMasters(t)
	o := smokeOptions(nil)
	o.Modes = []string{modeSemaphore}
	o.HandoffG = 4
	o.SemaphoreContenders = []semaphoreContender{semaphoreContenders[2]}
	require.Equal(t, nameRedisSemaphore, o.SemaphoreContenders[0].name)
	rep, err := NewRunner(o, ms, nil).Run(context.Background())
	require.NoError(t, err)
	require.Empty(t, rep.Skipped)
	require.Len(t, rep.Semaphore, 1)
	x := rep.Semaphore[0]
	assert.Positive(t, x.AcqPerSec)
	assert.Positive(t, x.Wait.N)
	assert.GreaterOrEqual(t, x.MostHolders, 2)
	assert.Zero(t, x.Errors)
	assert.Zero(t, x.UnlockErrors)
	assert.Contains(t, x.Note, "RedlockSemaphore")
}

func TestNPMError(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{"npm error code ENOTFOUND\nnpm error syscall getaddrinfo\nnpm error errno ENOTFOUND\nnpm error network request failed\n", "npm error code ENOTFOUND npm error syscall getaddrinfo npm error errno ENOTFOUND"},
		{"npm WARN config x\nnpm ERR! code E404\n\n", "npm ERR! code E404"},
		{"Segmentation fault\n", "Segmentation fault"},
	} {
		assert.Equal(t, tc.want, npmError(tc.out))
	}
}

// handoffOptions is a short handoff run: 2 processes x 2 goroutines.
func handoffOptions(defs ...contenderDef) Options {
	o := smokeOptions(defs)
	o.Modes = []string{modeHandoff}
	o.Duration = 150 * time.Millisecond
	return o
}

// TestHandoffMode runs the mode for a moment: child processes of the test
// binary, on three local masters.
func TestHandoffMode(t *testing.T) {
	ms := startTestMasters(t)
	rep, err := NewRunner(handoffOptions(contenderDef{name: nameVolley, new: newVolley}), ms, nil).Run(context.Background())
	require.NoError(t, err)
	require.Empty(t, rep.Skipped)
	require.Len(t, rep.Handoff, 2)
	for i, setting := range handoffSettings {
		h := rep.Handoff[i]
		assert.Equal(t, setting, h.Setting)
		assert.Equal(t, 2, h.Procs)
		assert.Positive(t, h.AcqPerSec, setting)
		assert.Positive(t, h.Wait.N, setting)
		assert.Zero(t, h.Overlaps, setting)
		assert.Zero(t, h.Errors, setting)
	}
	assert.Contains(t, rep.Handoff[0].Note, "defaults")
	var out bytes.Buffer
	rep.WriteTables(&out)
	assert.Contains(t, out.String(), "HANDOFF: 2 processes x 2 goroutines")
	assert.Contains(t, out.String(), "handoff P=2 G=2 defaults")
}

// TestHandoffOverlapCheck: a lock that excludes nobody fails the mode
// across processes, and a contender the children cannot build is skipped.
func TestHandoffOverlapCheck(t *testing.T) {
	o := handoffOptions(brokenDef, contenderDef{name: "nosuch", new: func(Setup) (Contender, error) { return broken{}, nil }})
	o.Hold = 50 * time.Microsecond
	rep, err := NewRunner(o, Masters{Kind: kindExternal, Addrs: []string{"127.0.0.1:1"}}, nil).Run(context.Background())
	require.ErrorIs(t, err, ErrOverlap)
	require.Len(t, rep.Handoff, 2)
	for _, h := range rep.Handoff {
		assert.Equal(t, "broken", h.Name)
		assert.Positive(t, h.Overlaps, h.Setting)
	}
	require.Len(t, rep.Skipped, 2) // in each setting
	for _, s := range rep.Skipped {
		assert.Contains(t, s, `unknown contender "nosuch"`)
	}
}

// TestHandoffChildEndsWithStdin: a child whose stdin ends, parent done or
// gone, exits.
func TestHandoffChildEndsWithStdin(t *testing.T) {
	pr, pw := io.Pipe()
	code := make(chan int)
	go func() { code <- handoffChild(nil, pr, io.Discard, io.Discard) }()
	require.NoError(t, pw.Close())
	require.Equal(t, 0, <-code)
}

// probeFails is broken, but its first lock fails.
type probeFails struct{ broken }

func (probeFails) LockUnlock(context.Context, string, time.Duration) error {
	return errors.New("no quorum")
}

// TestHandoffChildProbeMayFail: a child whose first lock failed refuses
// the job (the run is skipped), unless the job says the first lock may
// fail: then it says so and runs.
func TestHandoffChildProbeMayFail(t *testing.T) {
	defs := []contenderDef{{name: "probe-fails", new: func(Setup) (Contender, error) { return probeFails{}, nil }}}
	for _, mayFail := range []bool{false, true} {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		code := make(chan int, 1)
		go func() { code <- handoffChild(defs, inR, outW, io.Discard) }()
		enc, dec := json.NewEncoder(inW), json.NewDecoder(outR)
		job := handoffJob{Contender: "probe-fails", Key: "k", Probe: "p", G: 2, Duration: 20 * time.Millisecond, ProbeMayFail: mayFail}
		require.NoError(t, enc.Encode(handoffMsg{Job: &job}))
		var ready handoffReady
		require.NoError(t, dec.Decode(&ready))
		require.NoError(t, enc.Encode(handoffMsg{Go: &handoffGo{StartNs: time.Now().UnixNano()}}))
		var out handoffOut
		require.NoError(t, dec.Decode(&out))
		require.NoError(t, inW.Close())
		require.Equal(t, 0, <-code)
		if mayFail {
			assert.Empty(t, ready.Err)
			assert.Equal(t, "first lock failed: no quorum", ready.ProbeErr)
			assert.NotEmpty(t, out.Events, "it ran")
		} else {
			assert.Equal(t, "first lock failed: no quorum", ready.Err)
			assert.Empty(t, ready.ProbeErr)
			assert.Empty(t, out.Events, "it did not run")
		}
	}
}

// reconnecting counts connects per master, master 1 reconnecting twice
// between two reads.
type reconnecting struct {
	broken
	reads int
}

func (r *reconnecting) Connects() []uint64 {
	r.reads++
	if r.reads == 1 {
		return []uint64{1, 1, 1}
	}
	return []uint64{1, 3, 1}
}

// TestHandoffChildCountsReconnects: a child reports, per master, the
// growth of its contender's connects over the run, and nothing for a
// contender that does not count them.
func TestHandoffChildCountsReconnects(t *testing.T) {
	defs := []contenderDef{
		{name: "reconnecting", new: func(Setup) (Contender, error) { return &reconnecting{}, nil }},
		brokenDef,
	}
	for _, name := range []string{"reconnecting", "broken"} {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		code := make(chan int, 1)
		go func() { code <- handoffChild(defs, inR, outW, io.Discard) }()
		enc, dec := json.NewEncoder(inW), json.NewDecoder(outR)
		job := handoffJob{Contender: name, Key: "k", Probe: "p", G: 1, Duration: 20 * time.Millisecond}
		require.NoError(t, enc.Encode(handoffMsg{Job: &job}))
		var ready handoffReady
		require.NoError(t, dec.Decode(&ready))
		require.Empty(t, ready.Err)
		require.NoError(t, enc.Encode(handoffMsg{Go: &handoffGo{StartNs: time.Now().UnixNano()}}))
		var out handoffOut
		require.NoError(t, dec.Decode(&out))
		require.NoError(t, inW.Close())
		require.Equal(t, 0, <-code)
		if name == "reconnecting" {
			assert.Equal(t, []int64{0, 2, 0}, out.Reconnects)
		} else {
			assert.Nil(t, out.Reconnects)
		}
	}
}

// TestVolleyConnectsCountReconnects: the Volley contender's count grows
// when a master drops its connection and the Client reconnects.
func TestVolleyConnectsCountReconnects(t *testing.T) {
	ms := startTestMasters(t)
	require.NotEqual(t, kindFake, ms.Kind, "CLIENT KILL needs redis-server (make test installs it)")
	c, err := newVolley(Setup{Addrs: ms.Addrs, TTL: 10 * time.Second, MasterTimeout: 50 * time.Millisecond, RetryDelay: 2 * time.Millisecond, Tries: 1000})
	require.NoError(t, err)
	defer c.Close()
	rc := c.(reconnectCounter)
	require.Equal(t, []uint64{1, 1, 1}, rc.Connects())
	_, err = redistest.Do(ms.Addrs[0], "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_ = c.LockUnlock(context.Background(), "reconnects", 10*time.Second)
		return rc.Connects()[0] == 2
	}, 5*time.Second, 10*time.Millisecond, "the Client's reconnect to master 0 was not counted")
	assert.Equal(t, []uint64{2, 1, 1}, rc.Connects())
}

// The renewal window covers whole renewal periods, at least one (#29: a
// 3s window under a 10s TTL saw no renewal).
func TestRenewalWindow(t *testing.T) {
	for _, tt := range []struct{ d, ttl, want time.Duration }{
		{3 * time.Second, 10 * time.Second, 10 * time.Second / 3},
		{30 * time.Second, 10 * time.Second, 10 * (10 * time.Second / 3)}, // 9 truncated periods fall short of 30s
		{time.Second, 9 * time.Second, 3 * time.Second},
		{7 * time.Second, 9 * time.Second, 9 * time.Second},
	} {
		if got := renewalWindow(tt.d, tt.ttl); got != tt.want {
			t.Errorf("renewalWindow(%v, %v) = %v, want %v", tt.d, tt.ttl, got, tt.want)
		}
	}
}

// TestCommandStats: the commandstats lines of an INFO reply, by command;
// other sections' fields are left out, a bad number is an error.
func TestCommandStats(t *testing.T) {
	info := "# Stats\r\ntotal_connections_received:12\r\n\r\n# Commandstats\r\n" +
		"cmdstat_evalsha:calls=10,usec=55,usec_per_call=5.50,rejected_calls=2,failed_calls=1\r\n" +
		"cmdstat_set:calls=7,usec=14.5,usec_per_call=2.07,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_del:calls=3,usec=3,usec_per_call=1.00\r\n"
	stats, err := commandStats(info)
	require.NoError(t, err)
	assert.Equal(t, map[string]commandStat{
		"evalsha": {Calls: 10, Rejected: 2, Usec: 55},
		"set":     {Calls: 7, Usec: 14.5},
		"del":     {Calls: 3, Usec: 3},
	}, stats)
	assert.Equal(t, "12", infoFields(info)["total_connections_received"])

	stats, err = commandStats("# Server\r\nredis_version:7.0.15\r\n")
	require.NoError(t, err)
	assert.Empty(t, stats)

	_, err = commandStats("cmdstat_set:calls=x7,usec=1\r\n")
	require.ErrorContains(t, err, "cmdstat_set")
}
