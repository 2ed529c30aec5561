package main

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"
)

// Report is everything one run measured; it is what -json writes.
type Report struct {
	Started    time.Time       `json:"started"`
	GoVersion  string          `json:"go_version"`
	GOMAXPROCS int             `json:"gomaxprocs"`
	Masters    Masters         `json:"masters"`
	Config     ReportConfig    `json:"config"`
	Contenders []ContenderInfo `json:"contenders"`
	Skipped    []string        `json:"skipped,omitempty"`

	Latency      []LatencyResult    `json:"latency,omitempty"`
	Throughput   []ThroughputResult `json:"throughput,omitempty"`
	Contended    []ContendedResult  `json:"contended,omitempty"`
	Allocs       []AllocResult      `json:"allocs,omitempty"`
	SkewProfiles []SkewProfile      `json:"skew_profiles,omitempty"`
	Skew         []SkewResult       `json:"skew,omitempty"`
	// DegradedSchedule is the slow-master schedule every contender ran.
	DegradedSchedule []SlowWindow      `json:"degraded_schedule,omitempty"`
	Degraded         []DegradedResult  `json:"degraded,omitempty"`
	Adapters         []AdapterResult   `json:"adapters,omitempty"`
	Multi            []MultiResult     `json:"multi,omitempty"`
	Renewal          []RenewalResult   `json:"renewal,omitempty"`
	RenewalTTL       time.Duration     `json:"renewal_ttl_ns,omitempty"`
	Handoff          []HandoffResult   `json:"handoff,omitempty"`
	ClusterLatency   []ClusterLatency  `json:"cluster_latency,omitempty"`
	ClusterRecovery  []ClusterRecovery `json:"cluster_recovery,omitempty"`
	ClusterSpread    []ClusterSpread   `json:"cluster_spread,omitempty"`
	Native           []NativeResult    `json:"native,omitempty"`
	Targets          []Target          `json:"targets"`

	// The semaphore mode's two parts: latency, and contended.
	SemaphoreLatency  []SemaphoreLatency  `json:"semaphore_latency,omitempty"`
	SemaphoreAttempts []SemaphoreAttempts `json:"semaphore_attempts,omitempty"`
	Semaphore         []SemaphoreResult   `json:"semaphore,omitempty"`
}

// ReportConfig records the knobs of the run.
type ReportConfig struct {
	Modes           []string `json:"modes"`
	DurationMs      float64  `json:"duration_ms"`
	Rounds          int      `json:"rounds"`
	Goroutines      []int    `json:"goroutines"`
	ContendedG      int      `json:"contended_goroutines"`
	HoldMs          float64  `json:"hold_ms"`
	TTLMs           float64  `json:"ttl_ms"`
	MasterTimeoutMs float64  `json:"master_timeout_ms"`
	RetryDelayMs    float64  `json:"retry_delay_ms"`
	Tries           int      `json:"tries"`
	PoolSize        int      `json:"pool_size"`
	HandoffProcs    int      `json:"handoff_procs"`
	HandoffG        int      `json:"handoff_goroutines"`
	// The latency mode's own rounds and measurement length, when they
	// differ from Rounds and DurationMs (0 in reports that predate them).
	LatencyRounds     int     `json:"latency_rounds,omitempty"`
	LatencyDurationMs float64 `json:"latency_duration_ms,omitempty"`
	// SemaphoreHoldMs is how long a semaphore mode holder kept its permit.
	SemaphoreHoldMs float64 `json:"semaphore_hold_ms,omitempty"`
}

// ContenderInfo names a contender and how it was set up.
type ContenderInfo struct {
	Name string `json:"name"`
	Note string `json:"note,omitempty"`
}

type LatencyResult struct {
	Name string `json:"name"`
	Latency
	Rounds []Latency    `json:"rounds"`
	Errors int          `json:"errors"`
	CDF    [][2]float64 `json:"cdf"` // (ms, fraction), every round's samples
}

type ThroughputResult struct {
	Name       string    `json:"name"`
	Goroutines int       `json:"goroutines"`
	OpsPerSec  float64   `json:"ops_per_sec"`
	Rounds     []float64 `json:"rounds"`
	Errors     int       `json:"errors"`
	// Cost is this process's cost per operation, medians over rounds.
	Cost OpCost `json:"cost"`
	// Latency is the successful operations' latency at this load, field-wise
	// medians over rounds; zero for a pipelined row, which times no
	// operation of its own.
	Latency Latency `json:"latency"`
}

type ContendedResult struct {
	Name       string    `json:"name"`
	Goroutines int       `json:"goroutines"`
	AcqPerSec  float64   `json:"acquisitions_per_sec"`
	Rounds     []float64 `json:"rounds"`
	Handoff    Latency   `json:"handoff"`
	Errors     int       `json:"errors"`
	Violations int       `json:"violations"`
}

type AllocResult struct {
	Name        string  `json:"name"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	// RawAllocsPerOp is before the idle background is subtracted.
	RawAllocsPerOp float64   `json:"raw_allocs_per_op"`
	Rounds         []float64 `json:"rounds"`
}

type SkewResult struct {
	Profile       string  `json:"profile"`
	Name          string  `json:"name"`
	QuorumDelayMs float64 `json:"quorum_delay_ms"`
	Latency
	Errors int `json:"errors"`
}

// Target is one of Volley's performance goals, checked against this run.
type Target struct {
	Goal     string `json:"goal"`
	Figure   string `json:"figure"`
	Met      bool   `json:"met"`
	Measured bool   `json:"measured"`
}

func newReport(o Options, m Masters) *Report {
	return &Report{
		Started:    time.Now(),
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Masters:    m,
		Config: ReportConfig{
			Modes: o.Modes, DurationMs: ms(o.Duration), Rounds: o.Rounds,
			Goroutines: o.Goroutines, ContendedG: o.ContendedG, HoldMs: ms(o.Hold),
			TTLMs: ms(o.Setup.TTL), MasterTimeoutMs: ms(o.Setup.MasterTimeout),
			RetryDelayMs: ms(o.Setup.RetryDelay), Tries: o.Setup.Tries, PoolSize: o.Setup.PoolSize,
			HandoffProcs: o.HandoffProcs, HandoffG: o.HandoffG,
			LatencyRounds: o.LatencyRounds, LatencyDurationMs: ms(o.LatencyDuration),
			SemaphoreHoldMs: ms(o.SemaphoreHold),
		},
	}
}

// Lookups by contender name (nil when not measured).

func (r *Report) latency(name string) *LatencyResult {
	for i := range r.Latency {
		if r.Latency[i].Name == name {
			return &r.Latency[i]
		}
	}
	return nil
}

func (r *Report) throughput(name string, g int) *ThroughputResult {
	for i := range r.Throughput {
		if t := &r.Throughput[i]; t.Name == name && t.Goroutines == g {
			return t
		}
	}
	return nil
}

func (r *Report) contended(name string) *ContendedResult {
	for i := range r.Contended {
		if r.Contended[i].Name == name {
			return &r.Contended[i]
		}
	}
	return nil
}

func (r *Report) allocs(name string) *AllocResult {
	for i := range r.Allocs {
		if r.Allocs[i].Name == name {
			return &r.Allocs[i]
		}
	}
	return nil
}

func (r *Report) handoff(name, setting string) *HandoffResult {
	for i := range r.Handoff {
		if h := &r.Handoff[i]; h.Name == name && h.Setting == setting {
			return h
		}
	}
	return nil
}

func (r *Report) degraded(name string) *DegradedResult {
	for i := range r.Degraded {
		if r.Degraded[i].Name == name {
			return &r.Degraded[i]
		}
	}
	return nil
}

func (r *Report) skew(profile, name string) *SkewResult {
	for i := range r.Skew {
		if s := &r.Skew[i]; s.Profile == profile && s.Name == name {
			return s
		}
	}
	return nil
}

// evaluateTargets checks Volley's goals against the figures of the run.
func evaluateTargets(r *Report) []Target {
	var ts []Target
	notMeasured := func(goal string) {
		ts = append(ts, Target{Goal: goal, Figure: "not measured"})
	}
	// Latency, lower is better: ratio = volley / other.
	for _, q := range []struct {
		name string
		get  func(*LatencyResult) float64
	}{{"p50", func(l *LatencyResult) float64 { return l.P50 }}, {"p99", func(l *LatencyResult) float64 { return l.P99 }}} {
		goal := "Lock+Unlock latency, 1 goroutine, " + q.name + " <= 0.4x redsync"
		v, b := r.latency(nameVolley), r.latency(baseline)
		if v == nil || b == nil {
			notMeasured(goal)
			continue
		}
		ratio := q.get(v) / q.get(b)
		ts = append(ts, Target{Goal: goal, Measured: true, Met: ratio <= 0.4,
			Figure: fmt.Sprintf("%.3fms vs %.3fms = %.2fx", q.get(v), q.get(b), ratio)})
	}
	// Distance to the floor, the machine's own limit: ratio = volley / floor.
	for _, q := range []struct {
		name string
		want float64
		get  func(*LatencyResult) float64
	}{
		{"p50", 1.1, func(l *LatencyResult) float64 { return l.P50 }},
		{"p99", 1.2, func(l *LatencyResult) float64 { return l.P99 }},
	} {
		goal := fmt.Sprintf("Lock+Unlock latency, 1 goroutine, %s <= %gx %s %s", q.name, q.want, nameFloor, q.name)
		v, f := r.latency(nameVolley), r.latency(nameFloor)
		if v == nil || f == nil || q.get(f) <= 0 {
			notMeasured(goal)
			continue
		}
		ratio := q.get(v) / q.get(f)
		ts = append(ts, Target{Goal: goal, Measured: true, Met: ratio <= q.want,
			Figure: fmt.Sprintf("%.3fms vs %.3fms = %.2fx", q.get(v), q.get(f), ratio)})
	}
	// Throughput, higher is better.
	for _, g := range []int{64, 256} {
		for _, peer := range []struct {
			name string
			want float64
		}{{baseline, 8}, {nameRueidislock, 2}} {
			goal := fmt.Sprintf("throughput G=%d >= %gx %s", g, peer.want, peer.name)
			v, b := r.throughput(nameVolley, g), r.throughput(peer.name, g)
			if v == nil || b == nil {
				notMeasured(goal)
				continue
			}
			ratio := v.OpsPerSec / b.OpsPerSec
			ts = append(ts, Target{Goal: goal, Measured: true, Met: ratio >= peer.want,
				Figure: fmt.Sprintf("%.0f vs %.0f ops/s = %.2fx", v.OpsPerSec, b.OpsPerSec, ratio)})
		}
	}
	// Throughput, to the masters' capacity, with the tail at that load.
	for _, tg := range []struct {
		g    int
		goal float64
	}{{64, 0.6}, {256, 0.7}} {
		goal := fmt.Sprintf("throughput G=%d >= %.1fx %s", tg.g, tg.goal, nameFloorPipelined)
		v, f := r.throughput(nameVolley, tg.g), r.throughput(nameFloorPipelined, tg.g)
		switch {
		case v == nil || f == nil || f.OpsPerSec <= 0:
			notMeasured(goal)
		case r.Masters.Kind == kindFake:
			ts = append(ts, Target{Goal: goal, Figure: "not measured: the in-process fake masters share this process"})
		default:
			x := v.OpsPerSec / f.OpsPerSec
			ts = append(ts, Target{Goal: goal, Measured: true, Met: x >= tg.goal,
				Figure: fmt.Sprintf("%.0f vs %.0f/s = %.2fx, p99 %.3fms", v.OpsPerSec, f.OpsPerSec, x, v.Latency.P99)})
		}
	}
	// Client CPU per operation at the largest load, to the masters'
	// capacity's.
	{
		goal := "client CPU per Lock+Unlock G=256 <= 1.5x " + nameFloorPipelined
		v, f := r.throughput(nameVolley, 256), r.throughput(nameFloorPipelined, 256)
		switch {
		case v == nil || f == nil || v.Cost.CPUUs < 0 || f.Cost.CPUUs <= 0:
			notMeasured(goal)
		case r.Masters.Kind == kindFake:
			ts = append(ts, Target{Goal: goal, Figure: "not measured: the in-process fake masters' work is in this process"})
		default:
			x := v.Cost.CPUUs / f.Cost.CPUUs
			ts = append(ts, Target{Goal: goal, Measured: true, Met: x <= 1.5,
				Figure: fmt.Sprintf("%.2f vs %.2f us = %.2fx", v.Cost.CPUUs, f.Cost.CPUUs, x)})
		}
	}
	// Fencing: a token in one round in the common case costs little.
	{
		goal := "fenced Lock+Unlock p50 <= 1.15x unfenced"
		f, v := r.latency(nameVolleyFenced), r.latency(nameVolley)
		if f != nil && v != nil && v.P50 > 0 {
			x := f.P50 / v.P50
			ts = append(ts, Target{Goal: goal, Measured: true, Met: x <= 1.15,
				Figure: fmt.Sprintf("%.3fms vs %.3fms = %.2fx", f.P50, v.P50, x)})
		} else {
			notMeasured(goal)
		}
		for _, g := range []int{64, 256} {
			goal := fmt.Sprintf("fenced throughput G=%d >= 0.8x unfenced", g)
			f, v := r.throughput(nameVolleyFenced, g), r.throughput(nameVolley, g)
			if f == nil || v == nil || v.OpsPerSec <= 0 {
				notMeasured(goal)
				continue
			}
			x := f.OpsPerSec / v.OpsPerSec
			ts = append(ts, Target{Goal: goal, Measured: true, Met: x >= 0.8,
				Figure: fmt.Sprintf("%.0f vs %.0f ops/s = %.2fx", f.OpsPerSec, v.OpsPerSec, x)})
		}
	}
	// Cluster: a cluster's primaries cost little more than as many
	// standalone masters, and Volley stays ahead of the cluster-native peers.
	{
		v := r.clusterLatencyOf(nameVolleyCluster)
		for _, o := range []struct {
			name string
			want float64
		}{{nameVolleyStandalone, 1.2}, {nameRueidislockCluster, 1}, {nameRedsyncCluster, 1}} {
			goal := fmt.Sprintf("cluster Lock+Unlock p50 <= %gx %s", o.want, o.name)
			if o.want == 1 {
				goal = "cluster Lock+Unlock p50 below " + o.name
			}
			b := r.clusterLatencyOf(o.name)
			if v == nil || b == nil || b.Lat.P50 <= 0 {
				notMeasured(goal)
				continue
			}
			x := v.Lat.P50 / b.Lat.P50
			met := x <= o.want
			if o.want == 1 {
				met = x < 1
			}
			ts = append(ts, Target{Goal: goal, Measured: true, Met: met,
				Figure: fmt.Sprintf("%.3fms vs %.3fms = %.2fx", v.Lat.P50, b.Lat.P50, x)})
		}
	}
	// Cluster growth: a larger cluster's locks cost what a smaller one's
	// do (three copies each), and every primary takes its share.
	if v := r.clusterLatencyOf(nameVolleyCluster); v != nil {
		for _, c := range r.ClusterLatency {
			if !strings.HasPrefix(c.Name, nameVolleyCluster+"-") {
				continue
			}
			goal := "cluster Lock+Unlock p50, " + strings.TrimSuffix(strings.TrimPrefix(c.Name, nameVolleyCluster+"-"), "p") + " primaries <= 1.1x the first size"
			if v.Lat.P50 <= 0 {
				notMeasured(goal)
				continue
			}
			x := c.Lat.P50 / v.Lat.P50
			ts = append(ts, Target{Goal: goal, Measured: true, Met: x <= 1.1,
				Figure: fmt.Sprintf("%.3fms vs %.3fms = %.2fx", c.Lat.P50, v.Lat.P50, x)})
		}
	}
	for _, sp := range r.ClusterSpread {
		goal := fmt.Sprintf("cluster spread, %d primaries: every primary's share of lock commands in 0.8-1.2x the mean", sp.Primaries)
		ts = append(ts, Target{Goal: goal, Measured: true, Met: sp.MinShare >= 0.8 && sp.MaxShare <= 1.2,
			Figure: fmt.Sprintf("%.2f-%.2fx, %.0f locks/s", sp.MinShare, sp.MaxShare, sp.LocksPerSec)})
	}
	// Multi-key: 16 keys in one lock cost at most half again one key's.
	{
		goal := "multi-key Lock+Unlock, 16 keys, p50 <= 1.5x 1 key"
		var m16 *MultiResult
		for i := range r.Multi {
			if r.Multi[i].Name == nameVolley && r.Multi[i].Keys == 16 {
				m16 = &r.Multi[i]
			}
		}
		if m16 != nil {
			x := r.multiRatio(*m16)
			ts = append(ts, Target{Goal: goal, Measured: x > 0, Met: x > 0 && x <= 1.5,
				Figure: fmt.Sprintf("%.3fms = %.2fx", m16.Lat.P50, x)})
		} else {
			notMeasured(goal)
		}
	}
	// Semaphore: a permit costs little more than a lock.
	{
		goal := fmt.Sprintf("semaphore Acquire+Release p50 (%d permits) <= 1.3x mutex Lock+Unlock p50", semaphorePermits)
		sem, mutex := r.semaphoreLatencyOf(nameVolleySemaphore), r.semaphoreLatencyOf(nameVolley)
		if sem != nil && mutex != nil && sem.P50XMutex > 0 {
			ts = append(ts, Target{Goal: goal, Measured: true, Met: sem.P50XMutex <= 1.3,
				Figure: fmt.Sprintf("%.3fms vs %.3fms = %.2fx", sem.Lat.P50, mutex.Lat.P50, sem.P50XMutex)})
		} else {
			notMeasured(goal)
		}
	}
	// Renewal: batched renewals send far fewer commands, and cost the
	// client about as much per lock at 10,000 locks as at 1,000.
	{
		goal := "renewal of 10000 locks: >= 20x fewer commands/s than redsync per-lock"
		v, b := r.renewalOf(nameVolley, 10000), r.renewalOf(nameRedsyncGoredis, 10000)
		if v != nil && b != nil && v.CommandsPerSec > 0 && b.CommandsPerSec > 0 {
			x := b.CommandsPerSec / v.CommandsPerSec
			ts = append(ts, Target{Goal: goal, Measured: true, Met: x >= 20,
				Figure: fmt.Sprintf("%.0f vs %.0f commands/s = %.1fx", v.CommandsPerSec, b.CommandsPerSec, x)})
		} else {
			notMeasured(goal)
		}
		goal = "renewal CPU per lock flat: 10000 locks <= 1.5x 1000 locks"
		v1, v10 := r.renewalOf(nameVolley, 1000), r.renewalOf(nameVolley, 10000)
		if v1 != nil && v10 != nil && v1.CPUUsPerLockS > 0 {
			x := v10.CPUUsPerLockS / v1.CPUUsPerLockS
			ts = append(ts, Target{Goal: goal, Measured: true, Met: x <= 1.5,
				Figure: fmt.Sprintf("%.2f vs %.2f us/lock/s = %.2fx", v10.CPUUsPerLockS, v1.CPUUsPerLockS, x)})
		} else {
			notMeasured(goal)
		}
	}
	// Allocations: as go test reports allocs/op, truncated to an integer.
	if a := r.allocs(nameVolley); a != nil && r.Masters.Kind == kindFake {
		ts = append(ts, Target{Goal: "0 allocs/op", Figure: "not measured: the in-process fake masters allocate in this process"})
	} else if a != nil {
		ts = append(ts, Target{Goal: "0 allocs/op (Lock+Unlock, truncated as go test does)", Measured: true,
			Met:    math.Floor(a.AllocsPerOp) == 0,
			Figure: fmt.Sprintf("%.3f allocs/op, %.1f B/op (raw %.3f)", a.AllocsPerOp, a.BytesPerOp, a.RawAllocsPerOp)})
	} else {
		notMeasured("0 allocs/op")
	}
	// Skew.
	goal := "skew: one master +20ms, p50 <= 1.2x no-skew p50"
	if n, s := r.skew(skewNone, nameVolley), r.skew(skewOneSlow, nameVolley); n != nil && s != nil {
		ratio := s.P50 / n.P50
		ts = append(ts, Target{Goal: goal, Measured: true, Met: ratio <= 1.2,
			Figure: fmt.Sprintf("%.3fms vs %.3fms = %.2fx", s.P50, n.P50, ratio)})
	} else {
		notMeasured(goal)
	}
	// Degraded: availability with one master at a time slow.
	v, b := r.degraded(nameVolley), r.degraded(baseline)
	for _, t := range []struct {
		goal string
		met  func() (bool, string)
	}{
		{"degraded: acquisitions/s while masters are slowed >= 1.5x redsync", func() (bool, string) {
			ratio := v.AcqPerSecFault / b.AcqPerSecFault
			return ratio >= 1.5, fmt.Sprintf("%.1f vs %.1f acq/s = %.2fx", v.AcqPerSecFault, b.AcqPerSecFault, ratio)
		}},
		{"degraded: longest gap <= 2s", func() (bool, string) {
			return v.LongestGapMs <= 2000, fmt.Sprintf("%.2fs (redsync %.2fs)", v.LongestGapMs/1000, b.LongestGapMs/1000)
		}},
		{"degraded: last fault's end -> next acquisition <= 1s", func() (bool, string) {
			return v.Recovered && v.RecoveryMs <= 1000, fmt.Sprintf("%.2fs (redsync %.2fs)", v.RecoveryMs/1000, b.RecoveryMs/1000)
		}},
	} {
		if v == nil || b == nil {
			notMeasured(t.goal)
			continue
		}
		met, fig := t.met()
		ts = append(ts, Target{Goal: t.goal, Measured: true, Met: met, Figure: fig})
	}
	// Contended.
	goal = "contended hand-off G=8: acquisitions/s >= 2x redsync"
	if v, b := r.contended(nameVolley), r.contended(baseline); v != nil && b != nil {
		goal = fmt.Sprintf("contended hand-off G=%d: acquisitions/s >= 2x redsync", v.Goroutines)
		ratio := v.AcqPerSec / b.AcqPerSec
		ts = append(ts, Target{Goal: goal, Measured: true, Met: ratio >= 2,
			Figure: fmt.Sprintf("%.0f vs %.0f acq/s = %.2fx", v.AcqPerSec, b.AcqPerSec, ratio)})
	} else {
		notMeasured(goal)
	}
	// Handoff: across processes, with the library's defaults.
	goal = fmt.Sprintf("handoff P=%d G=%d defaults: waiter hand-off p50 <= 1 ms, p99 <= 10 ms, longest wait <= 1 s, acq/s >= %s, 0 overlaps",
		r.Config.HandoffProcs, r.Config.HandoffG, baseline)
	if v, b := r.handoff(nameVolley, settingDefaults), r.handoff(baseline, settingDefaults); v != nil && b != nil {
		met := v.Handoff.N > 0 && v.Handoff.P50 <= 1 && v.Handoff.P99 <= 10 && v.LongestWaitMs <= 1000 &&
			v.AcqPerSec >= b.AcqPerSec && v.Overlaps == 0
		hand := "no hand-offs"
		if v.Handoff.N > 0 {
			hand = fmt.Sprintf("p50 %.3fms, p99 %.3fms", v.Handoff.P50, v.Handoff.P99)
		}
		ts = append(ts, Target{Goal: goal, Measured: true, Met: met,
			Figure: fmt.Sprintf("%s, longest wait %.3fs, %.0f vs %.0f acq/s = %.2fx, %d overlaps",
				hand, v.LongestWaitMs/1000, v.AcqPerSec, b.AcqPerSec, v.AcqPerSec/b.AcqPerSec, v.Overlaps)})
	} else {
		notMeasured(goal)
	}
	return ts
}

// notMeasured returns the Skipped lines of the contenders of cs.
func (r *Report) notMeasured(cs []semaphoreContender) []string {
	var out []string
	for _, s := range r.Skipped {
		for _, c := range cs {
			if strings.HasPrefix(s, c.name+": ") {
				out = append(out, s)
			}
		}
	}
	return out
}

// nativeOf returns a contender's native-mode result for an operation, or
// nil.
func (r *Report) nativeOf(name, op string) *NativeResult {
	for i := range r.Native {
		if r.Native[i].Name == name && r.Native[i].Op == op {
			return &r.Native[i]
		}
	}
	return nil
}

// renewalOf returns a contender's renewal result for a lock count, or nil.
func (r *Report) renewalOf(name string, locks int) *RenewalResult {
	for i := range r.Renewal {
		if r.Renewal[i].Name == name && r.Renewal[i].Locks == locks {
			return &r.Renewal[i]
		}
	}
	return nil
}
