package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Figure formats of the ratio goals: v, ref, and v over ref.
const (
	msFigure  = "%.3fms vs %.3fms = %.2fx"
	opsFigure = "%.0f vs %.0f ops/s = %.2fx"
	acqFigure = "%.0f vs %.0f acq/s = %.2fx"
	// capacityFigure has Volley's p99 at that load after the ratio.
	capacityFigure = "%.0f vs %.0f/s = %.2fx, p99 %.3fms"
	cpuFigure      = "%.2f vs %.2f us = %.2fx"
)

// Why a goal is not measured on the in-process fake masters.
const (
	onFakeShare = "the in-process fake masters share this process"
	onFakeCPU   = "the in-process fake masters' work is in this process"
)

// volleyGoals are Volley's performance goals, in the order the report
// states them: a goal per cluster size and per spread measured, and the
// contended and handoff goals name the run's goroutines.
func volleyGoals(r *Report) []goal {
	gs := append(slices.Clone(speedGoals), clusterGoals(r)...)
	gs = append(gs, featureGoals...)
	return append(gs,
		goal{text: fmt.Sprintf("contended hand-off G=%d: acquisitions/s >= 2x redsync", r.Config.ContendedG), bound: atLeast, want: 2, figure: acqFigure,
			figures: func(r *Report) (goalFigures, bool) {
				return pair(r.contended(nameVolley), r.contended(baseline), func(c *ContendedResult) float64 { return c.AcqPerSec })
			}},
		// Handoff: across processes, with the library's defaults.
		goal{text: fmt.Sprintf("handoff P=%d G=%d defaults: waiter hand-off p50 <= 1 ms, p99 <= 10 ms, longest wait <= 1 s, acq/s >= %s, 0 overlaps",
			r.Config.HandoffProcs, r.Config.HandoffG, baseline), check: handoffCheck},
	)
}

// speedGoals are the goals on latency and throughput: to the peers, to
// the floors, fenced to unfenced, and on Redis Cluster.
var speedGoals = []goal{
	// Latency, lower is better: ratio = volley / other.
	{text: "Lock+Unlock latency, 1 goroutine, p50 <= 0.4x redsync", bound: atMost, want: 0.4, figure: msFigure,
		figures: latencies(nameVolley, baseline, latencyP50)},
	{text: "Lock+Unlock latency, 1 goroutine, p99 <= 0.4x redsync", bound: atMost, want: 0.4, figure: msFigure,
		figures: latencies(nameVolley, baseline, latencyP99)},
	// Distance to the floor, the machine's own limit.
	{text: "Lock+Unlock latency, 1 goroutine, p50 <= 1.05x " + nameFloor + " p50", bound: atMost, want: 1.05, figure: msFigure,
		figures: latencies(nameVolley, nameFloor, latencyP50)},
	{text: "Lock+Unlock latency, 1 goroutine, p99 <= 1.2x " + nameFloor + " p99", bound: atMost, want: 1.2, figure: msFigure,
		figures: latencies(nameVolley, nameFloor, latencyP99)},
	// Throughput, higher is better.
	{text: "throughput G=64 >= 8x " + baseline, bound: atLeast, want: 8, figure: opsFigure,
		figures: throughputs(nameVolley, baseline, 64, opsPerSec)},
	{text: "throughput G=64 >= 2x " + nameRueidislock, bound: atLeast, want: 2, figure: opsFigure,
		figures: throughputs(nameVolley, nameRueidislock, 64, opsPerSec)},
	{text: "throughput G=256 >= 8x " + baseline, bound: atLeast, want: 8, figure: opsFigure,
		figures: throughputs(nameVolley, baseline, 256, opsPerSec)},
	{text: "throughput G=256 >= 2x " + nameRueidislock, bound: atLeast, want: 2, figure: opsFigure,
		figures: throughputs(nameVolley, nameRueidislock, 256, opsPerSec)},
	// To the masters' capacity, with the tail at that load.
	{text: "throughput G=64 >= 0.6x " + nameFloorPipelined, bound: atLeast, want: 0.6, figure: capacityFigure,
		figures: toCapacity(64), onFake: onFakeShare},
	{text: "throughput G=256 >= 0.7x " + nameFloorPipelined, bound: atLeast, want: 0.7, figure: capacityFigure,
		figures: toCapacity(256), onFake: onFakeShare},
	// Client CPU per operation at the largest load, to the masters'
	// capacity's; a negative CPU figure was not measured.
	{text: "client CPU per Lock+Unlock G=256 <= 1.5x " + nameFloorPipelined, bound: atMost, want: 1.5, figure: cpuFigure,
		figures: throughputs(nameVolley, nameFloorPipelined, 256, cpuUs), onFake: onFakeCPU},
	// To a blocking call on the floor's sockets: callers park, one driver
	// goroutine writes and reads every master. What a Lock that blocks
	// can cost the client, the masters and the tail.
	{text: "client CPU per Lock+Unlock G=16 <= 1.05x " + nameFloorBlocking, bound: atMost, want: 1.05, figure: cpuFigure,
		figures: throughputs(nameVolley, nameFloorBlocking, 16, cpuUs), onFake: onFakeCPU},
	{text: "client CPU per Lock+Unlock G=64 <= 1.15x " + nameFloorBlocking, bound: atMost, want: 1.15, figure: cpuFigure,
		figures: throughputs(nameVolley, nameFloorBlocking, 64, cpuUs), onFake: onFakeCPU},
	{text: "client CPU per Lock+Unlock G=256 <= 1.25x " + nameFloorBlocking, bound: atMost, want: 1.25, figure: cpuFigure,
		figures: throughputs(nameVolley, nameFloorBlocking, 256, cpuUs), onFake: onFakeCPU},
	{text: "throughput G=64 >= 0.9x " + nameFloorBlocking, bound: atLeast, want: 0.9, figure: opsFigure,
		figures: throughputs(nameVolley, nameFloorBlocking, 64, opsPerSec), onFake: onFakeShare},
	{text: "throughput G=256 >= 0.9x " + nameFloorBlocking, bound: atLeast, want: 0.9, figure: opsFigure,
		figures: throughputs(nameVolley, nameFloorBlocking, 256, opsPerSec), onFake: onFakeShare},
	{text: "latency p99 at G=256 <= 1.2x " + nameFloorBlocking, bound: atMost, want: 1.2, figure: msFigure,
		figures: throughputs(nameVolley, nameFloorBlocking, 256, loadP99), onFake: onFakeShare},
	{text: "masters' CPU per Lock+Unlock G=64 <= 1.2x " + nameFloorBlocking, bound: atMost, want: 1.2, figure: cpuFigure,
		figures: throughputs(nameVolley, nameFloorBlocking, 64, mastersCPUUs)},
	{text: "masters' CPU per Lock+Unlock G=256 <= 1.2x " + nameFloorBlocking, bound: atMost, want: 1.2, figure: cpuFigure,
		figures: throughputs(nameVolley, nameFloorBlocking, 256, mastersCPUUs)},
	{text: "reads+writes per Lock+Unlock G=256 <= " + nameFloorBlocking, bound: atMost, want: 1, figure: "%.2f vs %.2f calls = %.2fx",
		figures: throughputs(nameVolley, nameFloorBlocking, 256, ioCallsPerOp), onFake: onFakeCPU},
	// Fencing: a token in one round in the common case costs little.
	{text: "fenced Lock+Unlock p50 <= 1.15x unfenced", bound: atMost, want: 1.15, figure: msFigure,
		figures: latencies(nameVolleyFenced, nameVolley, latencyP50)},
	{text: "fenced throughput G=64 >= 0.8x unfenced", bound: atLeast, want: 0.8, figure: opsFigure,
		figures: throughputs(nameVolleyFenced, nameVolley, 64, opsPerSec)},
	{text: "fenced throughput G=256 >= 0.8x unfenced", bound: atLeast, want: 0.8, figure: opsFigure,
		figures: throughputs(nameVolleyFenced, nameVolley, 256, opsPerSec)},
	// Cluster: a cluster's primaries cost little more than as many
	// standalone masters, and Volley stays ahead of the cluster-native
	// peers.
	{text: "cluster Lock+Unlock p50 <= 1.2x " + nameVolleyStandalone, bound: atMost, want: 1.2, figure: msFigure,
		figures: clusterLatencies(nameVolleyCluster, nameVolleyStandalone)},
	{text: "cluster Lock+Unlock p50 below " + nameRueidislockCluster, bound: below, want: 1, figure: msFigure,
		figures: clusterLatencies(nameVolleyCluster, nameRueidislockCluster)},
	{text: "cluster Lock+Unlock p50 below " + nameRedsyncCluster, bound: below, want: 1, figure: msFigure,
		figures: clusterLatencies(nameVolleyCluster, nameRedsyncCluster)},
}

// featureGoals are the goals of each feature's own mode: multi-key
// locks, semaphores, renewal, allocations, skew and slow masters.
var featureGoals = []goal{
	// Multi-key: 16 keys in one lock cost at most half again one key's.
	{text: "multi-key Lock+Unlock, 16 keys, p50 <= 1.5x 1 key", bound: atMost, want: 1.5, figure: "%.3[1]fms = %.2[3]fx",
		figures: func(r *Report) (goalFigures, bool) {
			return pair(r.multiOf(nameVolley, 16), r.multiOf(nameVolley, 1), func(m *MultiResult) float64 { return m.Lat.P50 })
		}},
	// Semaphore: a permit costs little more than a lock.
	{text: fmt.Sprintf("semaphore Acquire+Release p50 (%d permits) <= 1.3x mutex Lock+Unlock p50", semaphorePermits),
		bound: atMost, want: 1.3, figure: msFigure,
		figures: func(r *Report) (goalFigures, bool) {
			return pair(r.semaphoreLatencyOf(nameVolleySemaphore), r.semaphoreLatencyOf(nameVolley), func(s *SemaphoreLatency) float64 { return s.Lat.P50 })
		}},
	// Renewal: batched renewals send far fewer commands, and cost the
	// client about as much per lock at 10,000 locks as at 1,000.
	{text: "renewal of 10000 locks: >= 20x fewer commands/s than redsync per-lock", bound: fewer, want: 20,
		figure: "%.0f vs %.0f commands/s = %.1fx",
		figures: func(r *Report) (goalFigures, bool) {
			f, ok := pair(r.renewalOf(nameVolley, 10000), r.renewalOf(nameRedsyncGoredis, 10000), func(x *RenewalResult) float64 { return x.CommandsPerSec })
			return f, ok && f.ref > 0 // none: no renewal came in the window
		}},
	{text: "renewal CPU per lock flat: 10000 locks <= 1.5x 1000 locks", bound: atMost, want: 1.5, figure: "%.2f vs %.2f us/lock/s = %.2fx",
		figures: func(r *Report) (goalFigures, bool) {
			return pair(r.renewalOf(nameVolley, 10000), r.renewalOf(nameVolley, 1000), func(x *RenewalResult) float64 { return x.CPUUsPerLockS })
		}},
	// Allocations: as go test reports allocs/op, truncated to an
	// integer.
	{text: "0 allocs/op (Lock+Unlock, truncated as go test does)", onFake: "the in-process fake masters allocate in this process",
		check: func(r *Report) (bool, string, bool) {
			a := r.allocs(nameVolley)
			if a == nil {
				return false, "", false
			}
			return math.Floor(a.AllocsPerOp) == 0, fmt.Sprintf("%.3f allocs/op, %.1f B/op (raw %.3f)", a.AllocsPerOp, a.BytesPerOp, a.RawAllocsPerOp), true
		}},
	{text: "skew: one master +20ms, p50 <= 1.2x no-skew p50", bound: atMost, want: 1.2, figure: msFigure,
		figures: func(r *Report) (goalFigures, bool) {
			return pair(r.skew(skewOneSlow, nameVolley), r.skew(skewNone, nameVolley), func(s *SkewResult) float64 { return s.P50 })
		}},
	// Degraded: availability with one master at a time slow.
	{text: "degraded: acquisitions/s while masters are slowed >= 1.5x redsync", bound: atLeast, want: 1.5, figure: "%.1f vs %.1f acq/s = %.2fx",
		figures: func(r *Report) (goalFigures, bool) {
			return pair(r.degraded(nameVolley), r.degraded(baseline), func(d *DegradedResult) float64 { return d.AcqPerSecFault })
		}},
	{text: "degraded: longest gap <= 2s", check: degradedCheck(func(v, b *DegradedResult) (bool, string) {
		return v.LongestGapMs <= 2000, fmt.Sprintf("%.2fs (redsync %.2fs)", v.LongestGapMs/1000, b.LongestGapMs/1000)
	})},
	{text: "degraded: last fault's end -> next acquisition <= 1s", check: degradedCheck(func(v, b *DegradedResult) (bool, string) {
		return v.Recovered && v.RecoveryMs <= 1000, fmt.Sprintf("%.2fs (redsync %.2fs)", v.RecoveryMs/1000, b.RecoveryMs/1000)
	})},
}

// clusterGoals: a larger cluster's locks cost what the first size's do
// (three copies each), and every primary takes its share.
func clusterGoals(r *Report) []goal {
	var gs []goal
	if r.clusterLatencyOf(nameVolleyCluster) != nil {
		for _, c := range r.ClusterLatency {
			size, ok := strings.CutPrefix(c.Name, nameVolleyCluster+"-")
			if !ok {
				continue
			}
			gs = append(gs, goal{text: "cluster Lock+Unlock p50, " + strings.TrimSuffix(size, "p") + " primaries <= 1.1x the first size",
				bound: atMost, want: 1.1, figure: msFigure, figures: clusterLatencies(c.Name, nameVolleyCluster)})
		}
	}
	for _, sp := range r.ClusterSpread {
		gs = append(gs, goal{text: fmt.Sprintf("cluster spread, %d primaries: every primary's share of lock commands in 0.8-1.2x the mean", sp.Primaries),
			check: func(*Report) (bool, string, bool) {
				return sp.MinShare >= 0.8 && sp.MaxShare <= 1.2, fmt.Sprintf("%.2f-%.2fx, %.0f locks/s", sp.MinShare, sp.MaxShare, sp.LocksPerSec), true
			}})
	}
	return gs
}

// pair returns the figures get reads from v and ref; ok is false when
// either is missing.
func pair[T any](v, ref *T, get func(*T) float64) (goalFigures, bool) {
	if v == nil || ref == nil {
		return goalFigures{}, false
	}
	return goalFigures{v: get(v), ref: get(ref)}, true
}

func latencyP50(l *LatencyResult) float64   { return l.P50 }
func latencyP99(l *LatencyResult) float64   { return l.P99 }
func opsPerSec(t *ThroughputResult) float64 { return t.OpsPerSec }
func cpuUs(t *ThroughputResult) float64     { return t.Cost.CPUUs }

// mastersCPUUs is the masters' CPU per operation; -1 when not measured
// (0 in a report older than the field).
func mastersCPUUs(t *ThroughputResult) float64 {
	if t.Cost.MasterCPUUs <= 0 {
		return -1
	}
	return t.Cost.MasterCPUUs
}

// ioCallsPerOp is the read and write system calls per operation.
func ioCallsPerOp(t *ThroughputResult) float64 { return t.Cost.IOCalls }

// loadP99 is the p99 latency of the operations at that load; -1 when
// none was timed (a pipelined row).
func loadP99(t *ThroughputResult) float64 {
	if t.Latency.N == 0 {
		return -1
	}
	return t.Latency.P99
}

// latencies compares a quantile of two contenders' Lock+Unlock latency.
func latencies(v, ref string, q func(*LatencyResult) float64) func(*Report) (goalFigures, bool) {
	return func(r *Report) (goalFigures, bool) { return pair(r.latency(v), r.latency(ref), q) }
}

// throughputs compares a figure of two contenders' throughput rows at g
// goroutines.
func throughputs(v, ref string, g int, get func(*ThroughputResult) float64) func(*Report) (goalFigures, bool) {
	return func(r *Report) (goalFigures, bool) { return pair(r.throughput(v, g), r.throughput(ref, g), get) }
}

// toCapacity compares Volley's throughput at g goroutines with the
// masters' capacity, and adds Volley's p99 at that load.
func toCapacity(g int) func(*Report) (goalFigures, bool) {
	return func(r *Report) (goalFigures, bool) {
		f, ok := throughputs(nameVolley, nameFloorPipelined, g, opsPerSec)(r)
		if ok {
			f.more = []any{r.throughput(nameVolley, g).Latency.P99}
		}
		return f, ok
	}
}

// clusterLatencies compares two cluster contenders' p50.
func clusterLatencies(v, ref string) func(*Report) (goalFigures, bool) {
	return func(r *Report) (goalFigures, bool) {
		return pair(r.clusterLatencyOf(v), r.clusterLatencyOf(ref), func(c *ClusterLatency) float64 { return c.Lat.P50 })
	}
}

// degradedCheck checks a degraded goal on Volley's result and the
// baseline's.
func degradedCheck(check func(v, b *DegradedResult) (bool, string)) func(*Report) (bool, string, bool) {
	return func(r *Report) (bool, string, bool) {
		v, b := r.degraded(nameVolley), r.degraded(baseline)
		if v == nil || b == nil {
			return false, "", false
		}
		met, figure := check(v, b)
		return met, figure, true
	}
}

// handoffCheck checks the handoff goal on the defaults rows.
func handoffCheck(r *Report) (bool, string, bool) {
	v, b := r.handoff(nameVolley, settingDefaults), r.handoff(baseline, settingDefaults)
	if v == nil || b == nil {
		return false, "", false
	}
	met := v.Handoff.N > 0 && v.Handoff.P50 <= 1 && v.Handoff.P99 <= 10 && v.LongestWaitMs <= 1000 &&
		v.AcqPerSec >= b.AcqPerSec && v.Overlaps == 0
	hand := "no hand-offs"
	if v.Handoff.N > 0 {
		hand = fmt.Sprintf("p50 %.3fms, p99 %.3fms", v.Handoff.P50, v.Handoff.P99)
	}
	return met, fmt.Sprintf("%s, longest wait %.3fs, %.0f vs %.0f acq/s = %.2fx, %d overlaps",
		hand, v.LongestWaitMs/1000, v.AcqPerSec, b.AcqPerSec, v.AcqPerSec/b.AcqPerSec, v.Overlaps), true
}
