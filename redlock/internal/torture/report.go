package torture

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a Run found. Durations are nanoseconds in JSON.
type Report struct {
	Seed         uint64  `json:"seed"`
	RestartGuard bool    `json:"restart_guard"`
	Fencing      bool    `json:"fencing"`
	Faults       []Fault `json:"faults"`
	Masters      int     `json:"masters"`
	Clients      int     `json:"clients"`
	Goroutines   int     `json:"goroutines_per_client"`
	Keys         int     `json:"keys"`
	// Permits and ReadShare are Config's: the keys' kind of lock.
	Permits       int           `json:"permits,omitempty"`
	ReadShare     float64       `json:"read_share,omitempty"`
	TTL           time.Duration `json:"ttl_ns"`
	MaxTTL        time.Duration `json:"max_ttl_ns"`
	MasterTimeout time.Duration `json:"master_timeout_ns"`
	Elapsed       time.Duration `json:"elapsed_ns"`
	Interrupted   bool          `json:"interrupted"`

	Acquisitions   uint64            `json:"acquisitions"`
	PerSecond      float64           `json:"acquisitions_per_second"`
	LockFailures   map[string]uint64 `json:"lock_failures"`
	MasterOutcomes map[string]uint64 `json:"master_outcomes_in_failed_locks"`
	Unlocks        map[string]uint64 `json:"unlocks"`
	Extends        map[string]uint64 `json:"extends"`
	LatencyP50     time.Duration     `json:"lock_latency_p50_ns"`
	LatencyP99     time.Duration     `json:"lock_latency_p99_ns"`
	LatencyMax     time.Duration     `json:"lock_latency_max_ns"`

	Stuck          int       `json:"stuck"`
	StuckOps       []StuckOp `json:"stuck_ops,omitempty"`
	Panics         int       `json:"panics"`
	PanicStacks    []string  `json:"panic_stacks,omitempty"`
	MajorityGrants int       `json:"majority_grants"`
	// DoHolds counts the Do rounds whose fn ran (Config.DoShare), DoLost
	// those whose context was cancelled before their hold was over.
	DoHolds           int             `json:"do_holds,omitempty"`
	DoLost            int             `json:"do_lost,omitempty"`
	MajorityGrantList []MajorityGrant `json:"majority_grant_list,omitempty"`
	Unrecovered       int             `json:"unrecovered_faults"`
	// AskingsInSlotMoves counts the ASKING commands the importing nodes
	// ran while the move-slot faults moved a slot: the ASKs the clients
	// followed (one ASKING before each command sent again).
	AskingsInSlotMoves uint64   `json:"askings_in_slot_moves"`
	Errors             []string `json:"errors,omitempty"`

	GoroutinesBefore int    `json:"goroutines_before"`
	GoroutinesAfter  int    `json:"goroutines_after"`
	HeapBefore       uint64 `json:"heap_before"`
	HeapAfter        uint64 `json:"heap_after"`

	// Config.Election's: the leaderships, the leaders that acted past
	// their lease, the takeovers outside faults by how the leadership
	// before ended (resign, crash, lost), and those slower than their
	// bound.
	Election bool `json:"election,omitempty"`
	// LeadFor is the longest a leader leads on purpose: the slow
	// rotation's liveness bounds, counted in leaderships begun, grow by it.
	LeadFor     time.Duration `json:"lead_for_ns,omitempty"`
	Leaderships int           `json:"leaderships,omitempty"`
	// LostLeaderships are those that ended lost (their renewal failed,
	// Done closed under the leader), not resigned or crashed.
	LostLeaderships  int                      `json:"lost_leaderships,omitempty"`
	PastLease        int                      `json:"past_lease,omitempty"`
	PastLeaseList    []PastLease              `json:"past_lease_list,omitempty"`
	Takeovers        map[string]TakeoverStats `json:"takeovers,omitempty"`
	SlowTakeovers    int                      `json:"slow_takeovers,omitempty"`
	SlowTakeoverList []SlowTakeover           `json:"slow_takeover_list,omitempty"`

	Checker CheckerStats `json:"checker"`
	Phases  []Phase      `json:"phases"`
	// ClockSteps are the wall-clock jumps seen during the run (see
	// ClockStep).
	ClockSteps []ClockStep `json:"clock_steps,omitempty"`
}

// Liveness bounds of FaultSlowRotation, where one master at a time is slow
// and a quorum stays healthy: locks must keep coming.
const (
	// MaxSlowGap bounds the longest time with no lock granted, from the
	// fault's start to the first grant after its heal.
	MaxSlowGap = 2 * time.Second
	// MaxSlowRecovery bounds the time from the heal to the next grant.
	MaxSlowRecovery = time.Second
)

// Problems lists what makes a run with the restart guard on (a safe
// schedule) fail: violations, locks granted under a majority partition,
// panics, stuck operations, leaked goroutines, faults never recovered from,
// a slow-rotation fault beyond its liveness bounds (MaxSlowGap,
// MaxSlowRecovery), nemesis errors. Empty means the run passed.
func (r *Report) Problems() []string {
	var out []string
	add := func(cond bool, format string, args ...any) {
		if cond {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	add(r.Checker.Violations > 0, "%d mutual-exclusion violations", r.Checker.Violations)
	add(r.Checker.FenceRegressions > 0, "%d fencing tokens not greater than an earlier holder's", r.Checker.FenceRegressions)
	add(r.Fencing && r.Checker.Fenced == 0 && r.Acquisitions > 0, "fencing on, but no holder had a token")
	add(r.MajorityGrants > 0, "%d locks granted during a majority partition", r.MajorityGrants)
	add(r.PastLease > 0, "%d leaders acted past their lease's end", r.PastLease)
	add(r.SlowTakeovers > 0, "%d takeovers slower than their bound outside faults", r.SlowTakeovers)
	add(r.Panics > 0, "%d panics", r.Panics)
	add(r.Stuck > 0, "%d operations stuck past their deadline", r.Stuck)
	add(r.GoroutinesAfter > r.GoroutinesBefore, "goroutines leaked: %d before, %d after", r.GoroutinesBefore, r.GoroutinesAfter)
	add(r.Unrecovered > 0, "%d faults not recovered from (no lock granted after the heal)", r.Unrecovered)
	for _, p := range r.Phases {
		if p.Fault != FaultSlowRotation {
			continue
		}
		gap, recovery := MaxSlowGap+r.LeadFor, MaxSlowRecovery+r.LeadFor
		add(p.LongestGap > gap, "%s: %v with no lock granted (bound %v)", p, p.LongestGap.Round(time.Millisecond), gap)
		add(p.Recovered && p.Recovery > recovery, "%s: first lock %v after the heal (bound %v)", p, p.Recovery.Round(time.Millisecond), recovery)
	}
	add(len(r.Errors) > 0, "nemesis errors: %s", strings.Join(r.Errors, "; "))
	add(r.Acquisitions == 0, "no lock was ever granted")
	return out
}

// WriteTable prints the report for people.
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...)
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }
	guard := "on"
	if !r.RestartGuard {
		guard = "OFF"
	}
	row("seed", "%d", r.Seed)
	fencing := "off"
	if r.Fencing {
		fencing = "on"
	}
	kind := "locks"
	switch {
	case r.Election:
		kind = "one election"
	case r.Permits > 0:
		kind = fmt.Sprintf("semaphores of %d permits", r.Permits)
	case r.ReadShare > 0:
		kind = fmt.Sprintf("read-write locks, %.0f%% of rounds reading", 100*r.ReadShare)
	}
	row("setup", "%d masters, %d clients x %d goroutines, %d keys (%s), TTL %v, MaxTTL %v, MasterTimeout %v, restart guard %s, fencing %s",
		r.Masters, r.Clients, r.Goroutines, r.Keys, kind, r.TTL, r.MaxTTL, r.MasterTimeout, guard, fencing)
	row("elapsed", "%v%s", r.Elapsed.Round(time.Millisecond), map[bool]string{true: " (interrupted)"}[r.Interrupted])
	row("acquisitions", "%d (%.1f/s)", r.Acquisitions, r.PerSecond)
	row("lock latency", "p50 %s  p99 %s  max %s", ms(r.LatencyP50), ms(r.LatencyP99), ms(r.LatencyMax))
	for _, k := range slices.Sorted(maps.Keys(r.LockFailures)) {
		row("lock failure", "%-32s %d", k, r.LockFailures[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.MasterOutcomes)) {
		row("  master outcome", "%-32s %d", k, r.MasterOutcomes[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.Unlocks)) {
		row("unlock", "%-32s %d", k, r.Unlocks[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.Extends)) {
		row("extend", "%-32s %d", k, r.Extends[k])
	}
	row("intervals checked", "%d (%d empty: validity gone on return; %d recorded late)", r.Checker.Intervals, r.Checker.Empty, r.Checker.Late)
	row("VIOLATIONS", "%d", r.Checker.Violations)
	if r.Fencing || r.Checker.Fenced > 0 {
		row("fencing tokens", "%d holders had one; %d REGRESSIONS (not greater than an earlier holder's)", r.Checker.Fenced, r.Checker.FenceRegressions)
	}
	row("majority grants", "%d", r.MajorityGrants)
	if slices.Contains(r.Faults, FaultMoveSlot) {
		row("ASKs followed", "%d (ASKINGs the importing nodes ran during slot moves)", r.AskingsInSlotMoves)
	}
	if r.DoHolds > 0 {
		row("Do holds", "%d (%d LOST: context cancelled before the hold was over)", r.DoHolds, r.DoLost)
	}
	if r.Election {
		row("leaderships", "%d (%d lost); %d PAST THEIR LEASE; %d SLOW TAKEOVERS", r.Leaderships, r.LostLeaderships, r.PastLease, r.SlowTakeovers)
		for _, k := range slices.Sorted(maps.Keys(r.Takeovers)) {
			t := r.Takeovers[k]
			row("  takeover after "+k, "%d outside faults: p50 %s  max %s", t.Count, ms(t.P50), ms(t.Max))
		}
	}
	row("wall clock steps", "%d (each beyond %v; Redis expires keys by the wall clock)", len(r.ClockSteps), minClockStep)
	row("stuck operations", "%d", r.Stuck)
	row("panics", "%d", r.Panics)
	row("goroutines", "%d before, %d after", r.GoroutinesBefore, r.GoroutinesAfter)
	row("heap", "%.1f MiB before, %.1f MiB after", float64(r.HeapBefore)/(1<<20), float64(r.HeapAfter)/(1<<20))
	tw.Flush()

	if len(r.Phases) > 0 {
		fmt.Fprintln(w, "\nfaults:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  start\tfault\tmasters\tlocks during\tper second\tlongest gap\trecovery\tdetail")
		for _, p := range r.Phases {
			rec := "NOT RECOVERED"
			if p.Recovered {
				rec = p.Recovery.Round(time.Millisecond).String()
			}
			fmt.Fprintf(tw, "  %.1fs\t%s\t%v\t%d\t%.1f\t%v\t%s\t%s\n", p.Start.Seconds(), p.Fault, p.Targets, p.Acquisitions,
				p.PerSecond, p.LongestGap.Round(time.Millisecond), rec, p.Detail)
		}
		tw.Flush()
	}
	for i, v := range r.Checker.Details {
		if i == 10 {
			fmt.Fprintf(w, "... %d more violations in the JSON report\n", len(r.Checker.Details)-10)
			break
		}
		fmt.Fprintf(w, "\nVIOLATION on %s, overlap %v:\n", v.Key, v.Overlap)
		for _, h := range []Interval{v.First, v.Second} {
			unlock := "never (left to expire)"
			if h.Unlock >= 0 {
				unlock = fmt.Sprintf("%.4fs (%s)", h.Unlock.Seconds(), h.UnlockResult)
			}
			fmt.Fprintf(w, "  %-16s held [%.4fs, %.4fs], validity until %.4fs, unlock called %s\n",
				h.Holder, h.Start.Seconds(), h.End.Seconds(), h.Until.Seconds(), unlock)
			if h.Votes != "" {
				fmt.Fprintf(w, "  %-16s %s\n", "", h.Votes)
			}
		}
		for _, f := range v.Faults {
			fmt.Fprintf(w, "  fault: %s\n", f)
		}
	}
	for i, f := range r.Checker.FenceDetails {
		if i == 10 {
			fmt.Fprintf(w, "... %d more fencing regressions in the JSON report\n", len(r.Checker.FenceDetails)-10)
			break
		}
		fmt.Fprintf(w, "\nFENCING REGRESSION on %s: %s (token %d, acquired %.4fs) after %s (token %d, acquired %.4fs)\n",
			f.Key, f.Later.Holder, f.Later.Fence, f.Later.Start.Seconds(), f.Earlier.Holder, f.Earlier.Fence, f.Earlier.Start.Seconds())
	}
	for _, p := range r.PastLeaseList {
		fmt.Fprintf(w, "PAST LEASE: %s acted until %.4fs, its validity ended at %.4fs\n", p.Holder, p.End.Seconds(), p.Until.Seconds())
	}
	for _, s := range r.SlowTakeoverList {
		fmt.Fprintf(w, "SLOW TAKEOVER: %s led at %.4fs, %v after %s's %s (bound %v)\n", s.Next.Holder, s.Next.Start.Seconds(), s.Took, s.Previous.Holder, s.Previous.End, s.Bound)
	}
	for _, g := range r.MajorityGrantList {
		fmt.Fprintf(w, "MAJORITY GRANT: %s got %s, first vote asked at %.4fs, partition from %.4fs\n", g.Holder, g.Key, g.Started.Seconds(), g.PartitionAt.Seconds())
	}
	for _, s := range r.StuckOps {
		fmt.Fprintf(w, "STUCK: %s %s at %.3fs took %v (limit %v)\n", s.Holder, s.Op, s.At.Seconds(), s.Took, s.Limit)
	}
	for _, s := range r.PanicStacks {
		fmt.Fprintf(w, "PANIC: %s\n", s)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "ERROR: %s\n", e)
	}
}
