package main

import (
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
	// PeerOverlaps are the peers' overlaps, which do not fail the run
	// (see peers).
	PeerOverlaps []string `json:"peer_overlaps,omitempty"`

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
	Election         []*ElectionResult `json:"election,omitempty"`
	ElectionTTL      time.Duration     `json:"election_ttl_ns,omitempty"`
	Handoff          []HandoffResult   `json:"handoff,omitempty"`
	Fleet            []FleetResult     `json:"fleet,omitempty"`
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
	// The fleet mode's rounds and window.
	FleetRounds     int     `json:"fleet_rounds,omitempty"`
	FleetDurationMs float64 `json:"fleet_duration_ms,omitempty"`
	// The fleet mode's stall (-fleet-stall): how long, and how many
	// masters; 0 for none.
	FleetStallMs      float64 `json:"fleet_stall_ms,omitempty"`
	FleetStallMasters int     `json:"fleet_stall_masters,omitempty"`
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
			FleetRounds:     o.FleetRounds, FleetDurationMs: ms(o.FleetDuration),
			FleetStallMs: ms(o.FleetStall.For), FleetStallMasters: o.FleetStall.Masters,
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

func (r *Report) fleetOf(name string, procs int, holdMs float64) *FleetResult {
	for i := range r.Fleet {
		if x := &r.Fleet[i]; x.Name == name && x.Procs == procs && x.HoldMs == holdMs {
			return x
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
