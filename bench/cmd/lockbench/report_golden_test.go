package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// updateGolden rewrites testdata/report-*.golden from the code under test.
var updateGolden = flag.Bool("update", false, "rewrite testdata/report-*.golden")

// goldenVariants are the reports TestReportGolden writes: testdata/report.json
// (a quick run on five redis-server masters, its per-round figures and CDFs
// dropped, native rows and 10,000-lock renewal rows added by hand, and the
// fleet rows of a run of the fleet mode alone, P=4 and 16, 2s windows,
// without their first errors, and floor-blocking's rows of a later quick
// run of the latency and throughput modes) as it is, and edits of it that
// take the branches that run did not.
var goldenVariants = []struct {
	name string
	edit func(*Report)
}{
	{"redis", func(*Report) {}},
	{"fake", func(r *Report) { r.Masters.Kind = kindFake }},
	{"edges", editEdges},
	{"empty", func(r *Report) {
		*r = Report{Started: r.Started, GoVersion: r.GoVersion, GOMAXPROCS: r.GOMAXPROCS,
			Masters: r.Masters, Config: r.Config, Contenders: r.Contenders,
			Skipped: append(r.Skipped, nameRedisSemaphore+": not measured: node not found")}
	}},
}

// editEdges gives the run missing results, errors, unmeasured figures and
// failed recoveries.
func editEdges(r *Report) {
	r.Config.LatencyRounds = 0
	r.Latency = slices.DeleteFunc(r.Latency, func(l LatencyResult) bool { return l.Name == nameFloorC })
	r.latency(nameVolley).Errors = 3
	r.throughput(nameVolley, 1).Latency.N = 0
	r.throughput(nameRedislock, 256).Cost.CPUUs = -1
	// The masters' CPU: measured for both at 256 goroutines, for Volley
	// alone at 64 (no ratio to the floor), not measured at all for the rest.
	r.throughput(nameVolley, 256).Cost.ClientPerMaster = 0.52
	r.throughput(nameFloorPipelined, 256).Cost.ClientPerMaster = 0.13
	r.throughput(nameVolley, 64).Cost.ClientPerMaster = 0.47
	// Volley's masters' CPU per op at 64 goroutines, beside floor-blocking's.
	r.throughput(nameVolley, 64).Cost.MasterCPUUs = 70
	r.Throughput = slices.DeleteFunc(r.Throughput, func(t ThroughputResult) bool {
		return t.Name == nameRedsyncRedigo && t.Goroutines == 16
	})
	r.Contended = slices.DeleteFunc(r.Contended, func(c ContendedResult) bool { return c.Name == baseline })
	r.Allocs = slices.DeleteFunc(r.Allocs, func(a AllocResult) bool { return a.Name == nameVolley })
	r.skew(skewOneSlow, nameVolley).Errors = 2
	r.degraded(nameVolley).Recovered = false
	h := r.handoff(nameVolley, settingDefaults)
	h.Handoff.N, h.UnlockErrors, h.FirstError = 0, 2, "first line\n\tsecond   line"
	// Fleet: a row whose masters' counters were not read, and one without
	// a grant, with an error and processes whose first lock failed.
	x := r.fleetOf(nameVolley, 4, 0)
	x.CommandsPerGrant, x.CommandsPerSec, x.Accepted, x.Closed = -1, -1, nil, nil
	x = r.fleetOf(nameVolley, 16, 0)
	x.GrantsPerSec, x.CommandsPerGrant, x.Wait = 0, 0, Latency{}
	x.ProcsWithout, x.LongestWithoutMs = 16, 2000
	x.FirstError = "process 3: redlock: lock \"k\": context deadline exceeded"
	x.ProbeFailures, x.FirstProbeError = 2, "process 5: first lock failed: redlock: lock not acquired"
	r.Semaphore[0].UnlockErrors = 1
	r.Semaphore[0].FirstError = strings.Repeat("a long error ", 20)
	r.ClusterRecovery[0].PromoteError = "no replica took over"
	r.ClusterLatency = slices.DeleteFunc(r.ClusterLatency, func(c ClusterLatency) bool { return c.Name == nameVolleyStandalone })
	r.renewalOf(nameVolley, 10000).CommandsPerSec = 0
	r.nativeOf(nameVolley, "extend").MasterCPUUs = -1
	r.Multi = slices.DeleteFunc(r.Multi, func(m MultiResult) bool { return m.Name == nameVolley && m.Keys == 16 })
}

// TestReportGolden writes each variant's tables and targets and compares
// them with testdata/report-<variant>.golden, byte for byte.
func TestReportGolden(t *testing.T) {
	for _, v := range goldenVariants {
		t.Run(v.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "report.json"))
			require.NoError(t, err)
			var r Report
			require.NoError(t, json.Unmarshal(b, &r))
			v.edit(&r)
			r.Targets = evaluateTargets(&r)
			var out bytes.Buffer
			r.WriteTables(&out)
			path := filepath.Join("testdata", "report-"+v.name+".golden")
			if *updateGolden {
				require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(want), out.String())
		})
	}
}
