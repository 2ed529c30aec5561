package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteTables writes the human-readable tables of r: a header on the run,
// then each of reportTables that has anything to show.
func (r *Report) WriteTables(w io.Writer) {
	fmt.Fprintf(w, "lockbench: %s, GOMAXPROCS=%d, %d %s masters; %d rounds x %v per measurement, medians over rounds\n",
		r.GoVersion, r.GOMAXPROCS, len(r.Masters.Addrs), r.Masters.Kind, r.Config.Rounds, time.Duration(r.Config.DurationMs*float64(time.Millisecond)))
	fmt.Fprintf(w, "TTL %v, per-master timeout %v, retry delay uniform in [%v, %v], pool size %d; ratios are to %s, \"x floor\" to %s (throughput: %s)",
		dur(r.Config.TTLMs), dur(r.Config.MasterTimeoutMs), dur(r.Config.RetryDelayMs/2), dur(r.Config.RetryDelayMs), r.Config.PoolSize, baseline, nameFloor, nameFloorPipelined)
	if r.latency(nameFloorC) != nil {
		fmt.Fprintf(w, ", \"x floor-c\" to %s (latency)", nameFloorC)
	}
	fmt.Fprintln(w)
	for _, t := range reportTables {
		if s := t(r); !s.empty() {
			s.write(w)
		}
	}
}

// reportTables are the sections of the written report, in order; each
// builds its table from a report.
var reportTables = []func(r *Report) section{
	contenderTable, latencyTable, throughputTable, throughputCostTable,
	contendedTable, allocsTable, skewTable, degradedTable, adaptersTable,
	multiTable, nativeTable, renewalTable, electionTable, handoffTable, fleetTable,
	semaphoreLatencyTable, semaphoreTable, clusterTable,
	semaphoreAttemptsTable, clusterSpreadTable, clusterRecoveryTable,
	targetsTable,
}

// fakeNote is the line under a title whose figures are this process's,
// on the in-process fake masters: theirs are in it.
func fakeNote(r *Report, what string) string {
	if r.Masters.Kind != kindFake {
		return ""
	}
	return "\n(the in-process fake masters' own " + what + " included: not the client's figure)"
}

// contenderTable names each contender and its setup, and those skipped.
func contenderTable(r *Report) section {
	rows := make([][2]string, 0, len(r.Contenders)+len(r.Skipped)+len(r.PeerOverlaps))
	for _, c := range r.Contenders {
		rows = append(rows, [2]string{c.Name, c.Note})
	}
	for _, s := range r.Skipped {
		rows = append(rows, [2]string{"skipped", s})
	}
	for _, s := range r.PeerOverlaps {
		rows = append(rows, [2]string{"overlapped", s})
	}
	return table[[2]string]{left: true, rows: rows, columns: []column[[2]string]{
		{"contender", func(c [2]string) string { return c[0] }},
		{"setup", func(c [2]string) string { return c[1] }},
	}}
}

func latencyTable(r *Report) section {
	title := "LATENCY: Lock+Unlock, 1 goroutine, fresh key, ms"
	if lr := r.Config.LatencyRounds; lr > 0 && (lr != r.Config.Rounds || r.Config.LatencyDurationMs != r.Config.DurationMs) {
		title += fmt.Sprintf(" (%d rounds x %v)", lr, dur(r.Config.LatencyDurationMs))
	}
	cols := []column[*LatencyResult]{
		{"contender", func(l *LatencyResult) string { return l.Name }},
		{"p50", func(l *LatencyResult) string { return f3(l.P50) }},
		{"p90", func(l *LatencyResult) string { return f3(l.P90) }},
		{"p99", func(l *LatencyResult) string { return f3(l.P99) }},
		{"p99.9", func(l *LatencyResult) string { return f3(l.P999) }},
		{"max", func(l *LatencyResult) string { return f3(l.Max) }},
	}
	// The ratios of each quantile: to the baseline, the floor, and
	// floor-c when measured.
	refs := []*LatencyResult{r.latency(baseline), r.latency(nameFloor)}
	if fc := r.latency(nameFloorC); fc != nil {
		refs = append(refs, fc)
	}
	heads := []string{" ratio", "x floor", "x floor-c"}
	for _, q := range []struct {
		name string
		get  func(*LatencyResult) float64
	}{{"p50", func(l *LatencyResult) float64 { return l.P50 }}, {"p99", func(l *LatencyResult) float64 { return l.P99 }}} {
		for i, ref := range refs {
			head := heads[i]
			if i == 0 {
				head = q.name + head
			}
			cols = append(cols, column[*LatencyResult]{head, func(l *LatencyResult) string { return ratio(q.get(l), field(ref, q.get)) }})
		}
	}
	cols = append(cols,
		column[*LatencyResult]{"ops", func(l *LatencyResult) string { return itoa(l.N) }},
		column[*LatencyResult]{"", func(l *LatencyResult) string { return errNote(l.Errors) }})
	return table[*LatencyResult]{title: title, columns: cols, rows: byContender(r, r.latency)}
}

// throughputRows are the contenders measured at one of the run's
// goroutine counts at least (floor-c, say, runs in the latency mode only).
func throughputRows(r *Report) []string {
	var names []string
	for _, c := range r.Contenders {
		for _, g := range r.Config.Goroutines {
			if r.throughput(c.Name, g) != nil {
				names = append(names, c.Name)
				break
			}
		}
	}
	return names
}

// atG is a cell of a contender's throughput at g goroutines: "-" when not
// measured.
func atG(r *Report, g int, cell func(t *ThroughputResult) string) func(name string) string {
	return func(name string) string {
		if t := r.throughput(name, g); t != nil {
			return cell(t)
		}
		return "-"
	}
}

func throughputTable(r *Report) section {
	cols := []column[string]{{"contender", func(n string) string { return n }}}
	ops := func(t *ThroughputResult) float64 { return t.OpsPerSec }
	for _, g := range r.Config.Goroutines {
		b, fl := r.throughput(baseline, g), r.throughput(nameFloorPipelined, g)
		cols = append(cols,
			column[string]{fmt.Sprintf("G=%d", g), atG(r, g, func(t *ThroughputResult) string { return f0(t.OpsPerSec) })},
			column[string]{"ratio", atG(r, g, func(t *ThroughputResult) string { return ratio(t.OpsPerSec, field(b, ops)) })},
			column[string]{"x floor", atG(r, g, func(t *ThroughputResult) string { return ratio(t.OpsPerSec, field(fl, ops)) })},
			column[string]{"p99 ms", atG(r, g, func(t *ThroughputResult) string {
				if t.Latency.N == 0 {
					return "-"
				}
				return f3(t.Latency.P99)
			})})
	}
	cols = append(cols, column[string]{"", func(n string) string {
		errs := 0
		for _, g := range r.Config.Goroutines {
			if t := r.throughput(n, g); t != nil {
				errs += t.Errors
			}
		}
		return errNote(errs)
	}})
	return table[string]{
		title:   "THROUGHPUT: Lock+Unlock ops/s, G goroutines on distinct keys (ratio to " + baseline + ", x floor to " + nameFloorPipelined + "), and the latency p99 at that load",
		columns: cols, rows: throughputRows(r),
	}
}

func throughputCostTable(r *Report) section {
	cols := []column[string]{{"contender", func(n string) string { return n }}}
	cpu := func(t *ThroughputResult) float64 { return t.Cost.CPUUs }
	for _, g := range r.Config.Goroutines {
		fl := r.throughput(nameFloorPipelined, g)
		cols = append(cols,
			column[string]{fmt.Sprintf("G=%d CPU us", g), atG(r, g, func(t *ThroughputResult) string { return costFigure(t.Cost.CPUUs) })},
			column[string]{"x floor", atG(r, g, func(t *ThroughputResult) string { return ratio(t.Cost.CPUUs, field(fl, cpu)) })},
			column[string]{"calls", atG(r, g, func(t *ThroughputResult) string { return costFigure(t.Cost.IOCalls) })},
			column[string]{"switches", atG(r, g, func(t *ThroughputResult) string { return costFigure(t.Cost.Switches) })},
			column[string]{"/masters", atG(r, g, func(t *ThroughputResult) string { return measuredFigure(t.Cost.ClientPerMaster) })},
			column[string]{"x floor", atG(r, g, func(t *ThroughputResult) string {
				return measuredRatio(t.Cost.ClientPerMaster, field(fl, func(t *ThroughputResult) float64 { return t.Cost.ClientPerMaster }))
			})})
	}
	return table[string]{
		title: "THROUGHPUT COST: this process per Lock+Unlock, same rounds: CPU us (user + system), read+write system calls, context switches; " +
			"/masters = this process's CPU over the masters' (INFO cpu) in the same windows, steadier than CPU us when the machine the client shares with the masters runs slower or faster" + fakeNote(r, "work is"),
		columns: cols, rows: throughputRows(r),
	}
}

func contendedTable(r *Report) section {
	acq := func(c *ContendedResult) float64 { return c.AcqPerSec }
	b, fl := r.contended(baseline), r.contended(nameFloor)
	return table[*ContendedResult]{
		title: fmt.Sprintf("CONTENDED: %d goroutines on one key, hold %v; hand-off = release started -> next holder has it; %s retries after the retry delay (no wake-ups)",
			r.Config.ContendedG, dur(r.Config.HoldMs), nameFloor),
		rows: byContender(r, r.contended),
		columns: []column[*ContendedResult]{
			{"contender", func(c *ContendedResult) string { return c.Name }},
			{"acq/s", func(c *ContendedResult) string { return f0(c.AcqPerSec) }},
			{"ratio", func(c *ContendedResult) string { return ratio(c.AcqPerSec, field(b, acq)) }},
			{"x floor", func(c *ContendedResult) string { return ratio(c.AcqPerSec, field(fl, acq)) }},
			{"hand-off p50 ms", func(c *ContendedResult) string { return f3(c.Handoff.P50) }},
			{"p99 ms", func(c *ContendedResult) string { return f3(c.Handoff.P99) }},
			{"overlaps", func(c *ContendedResult) string { return itoa(c.Violations) }},
			{"", func(c *ContendedResult) string { return errNote(c.Errors) }},
		},
	}
}

func allocsTable(r *Report) section {
	b := r.allocs(baseline)
	return table[*AllocResult]{
		title: "ALLOCS: Lock+Unlock, 1 goroutine, runtime.MemStats deltas less the idle process's over an equal window (raw: before)" + fakeNote(r, "allocations are"),
		rows:  byContender(r, r.allocs),
		columns: []column[*AllocResult]{
			{"contender", func(a *AllocResult) string { return a.Name }},
			{"allocs/op", func(a *AllocResult) string { return f2(a.AllocsPerOp) }},
			{"B/op", func(a *AllocResult) string { return f0(a.BytesPerOp) }},
			{"raw allocs/op", func(a *AllocResult) string { return f2(a.RawAllocsPerOp) }},
			{"ratio", func(a *AllocResult) string {
				return ratio(a.AllocsPerOp, field(b, func(b *AllocResult) float64 { return b.AllocsPerOp }))
			}},
		},
	}
}

func skewTable(r *Report) section {
	title := "SKEW: Lock+Unlock p50 (p99) ms, 1 goroutine, every master behind a proxy; reply delays:"
	cols := []column[string]{{"contender", func(n string) string { return n }}}
	for _, p := range r.SkewProfiles {
		title += " " + p.Name + "=" + delays(p.Delays)
		cols = append(cols, column[string]{p.Name, func(n string) string {
			s := r.skew(p.Name, n)
			return f3(s.P50) + " (" + f3(s.P99) + ")"
		}})
		if p.Name != skewNone {
			cols = append(cols, column[string]{"vs none", func(n string) string { return ratio(r.skew(p.Name, n).P50, r.skew(skewNone, n).P50) }})
		}
	}
	cols = append(cols, column[string]{"", func(n string) string {
		errs := 0
		for _, p := range r.SkewProfiles {
			errs += r.skew(p.Name, n).Errors
		}
		return errNote(errs)
	}})
	var rows []string
	for _, c := range r.Contenders {
		if r.skew(skewNone, c.Name) != nil {
			rows = append(rows, c.Name)
		}
	}
	return table[string]{title: title, columns: cols, rows: rows}
}

func degradedTable(r *Report) section {
	if len(r.Degraded) == 0 {
		return table[*DegradedResult]{}
	}
	var sched []string
	for _, win := range r.DegradedSchedule {
		sched = append(sched, win.String())
	}
	b := r.degraded(baseline)
	return table[*DegradedResult]{
		title: fmt.Sprintf("DEGRADED: %d clients x %d goroutines on one key, TTL %v, per-master timeout %v, %d tries, retry [%v, %v]; one master at a time slow for %v: %s",
			degradedClients, degradedPerClient, degradedTTL, degradedMasterTimeout, degradedTries, degradedRetryDelay/2, degradedRetryDelay,
			dur(r.DegradedSchedule[0].EndMs-r.DegradedSchedule[0].StartMs), strings.Join(sched, ", ")),
		rows: byContender(r, r.degraded),
		columns: []column[*DegradedResult]{
			{"contender", func(d *DegradedResult) string { return d.Name }},
			{"acq/s healthy", func(d *DegradedResult) string { return f1(d.AcqPerSecWarm) }},
			{"acq/s slowed", func(d *DegradedResult) string { return f1(d.AcqPerSecFault) }},
			{"ratio", func(d *DegradedResult) string {
				return ratio(d.AcqPerSecFault, field(b, func(b *DegradedResult) float64 { return b.AcqPerSecFault }))
			}},
			{"acq/s after", func(d *DegradedResult) string { return f1(d.AcqPerSecAfter) }},
			{"longest gap s", func(d *DegradedResult) string { return f2(d.LongestGapMs / 1000) }},
			{"recovery s", func(d *DegradedResult) string {
				if !d.Recovered {
					return ">" + f2(d.RecoveryMs/1000)
				}
				return f2(d.RecoveryMs / 1000)
			}},
			{"overlaps", func(d *DegradedResult) string { return itoa(d.Violations) }},
			{"", func(d *DegradedResult) string { return errNote(d.Errors) }},
		},
	}
}

func adaptersTable(r *Report) section {
	return table[AdapterResult]{
		title: "ADAPTERS: Lock+Unlock, 1 goroutine, without hooks and with each telemetry adapter (otel: SDK, every span sampled, none exported)",
		rows:  r.Adapters,
		columns: []column[AdapterResult]{
			{"way", func(a AdapterResult) string { return a.Name }},
			{"p50 ms", func(a AdapterResult) string { return f3(a.P50Ms) }},
			{"p99 ms", func(a AdapterResult) string { return f3(a.P99Ms) }},
			{"allocs/op", func(a AdapterResult) string { return f1(a.AllocsPerOp) }},
			{"B/op", func(a AdapterResult) string { return f0(a.BytesPerOp) }},
			{"p50 cost us", func(a AdapterResult) string { dp, _ := r.adapterCost(a); return fmt.Sprintf("%+.1f", dp) }},
			{"allocs cost", func(a AdapterResult) string { _, da := r.adapterCost(a); return fmt.Sprintf("%+.1f", da) }},
		},
	}
}

func multiTable(r *Report) section {
	return table[MultiResult]{
		title: "MULTI: one lock over k keys, Lock+Unlock, 1 goroutine (x1: the same contender with 1 key)",
		rows:  r.Multi,
		columns: []column[MultiResult]{
			{"contender", func(m MultiResult) string { return m.Name }},
			{"keys", func(m MultiResult) string { return itoa(m.Keys) }},
			{"p50 ms", func(m MultiResult) string { return f3(m.Lat.P50) }},
			{"p99 ms", func(m MultiResult) string { return f3(m.Lat.P99) }},
			{"x1", func(m MultiResult) string { return f2(r.multiRatio(m)) }},
			{"errors", func(m MultiResult) string { return itoa(m.Errors) }},
			{"how", func(m MultiResult) string { return m.Note }},
		},
	}
}

func nativeTable(r *Report) section {
	if len(r.Native) == 0 {
		return table[NativeResult]{}
	}
	// vsLua is a row's figure over the Lua scripts' in the same operation:
	// "" when either is not measured.
	vsLua := func(get func(*NativeResult) float64) func(NativeResult) string {
		return func(x NativeResult) string {
			if b := r.nativeOf(nameVolleyLua, x.Op); x.MasterCPUUs >= 0 && b != nil && b.MasterCPUUs > 0 {
				return f2(get(&x)/get(b)) + "x"
			}
			return ""
		}
	}
	// measured is a row's figure, "-" when the masters' CPU was not
	// measured.
	measured := func(get func(*NativeResult) float64) func(NativeResult) string {
		return func(x NativeResult) string {
			if x.MasterCPUUs < 0 {
				return "-"
			}
			return f2(get(&x))
		}
	}
	cpu := func(x *NativeResult) float64 { return x.MasterCPUUs }
	cmd := func(x *NativeResult) float64 { return x.CommandUs }
	return table[NativeResult]{
		title: fmt.Sprintf("NATIVE: the masters' CPU per operation (INFO cpu, and INFO commandstats usec of the commands sent), native commands (volley) against the Lua scripts (volley-lua), on %s; G=%d; throughput at G=%d against floor-pipelined", r.Native[0].Server, nativeG, nativeThroughputG),
		rows:  r.Native,
		columns: []column[NativeResult]{
			{"contender", func(x NativeResult) string { return x.Name }},
			{"op", func(x NativeResult) string { return x.Op }},
			{"G", func(x NativeResult) string { return itoa(x.Goroutines) }},
			{"ops/s", func(x NativeResult) string { return f0(x.OpsPerSec) }},
			{"x floor-pipelined", func(x NativeResult) string {
				if f := r.nativeOf(nameFloorPipelined, x.Op); x.Op == "throughput" && f != nil && f.OpsPerSec > 0 {
					return f2(x.OpsPerSec/f.OpsPerSec) + "x"
				}
				return ""
			}},
			{"masters' CPU us/op", measured(cpu)},
			{"x lua", vsLua(cpu)},
			{"commands us/op", measured(cmd)},
			{"x lua", vsLua(cmd)},
			{"errors", func(x NativeResult) string { return itoa(x.Errors) }},
		},
	}
}

func renewalTable(r *Report) section {
	return table[RenewalResult]{
		title: fmt.Sprintf("RENEWAL: locks held and kept extended (TTL %v, renewed about every third), commands the clients sent, this process's CPU and heap", r.RenewalTTL),
		rows:  r.Renewal,
		columns: []column[RenewalResult]{
			{"contender", func(x RenewalResult) string { return x.Name }},
			{"locks", func(x RenewalResult) string { return itoa(x.Locks) }},
			{"commands/s", func(x RenewalResult) string { return f0(x.CommandsPerSec) }},
			{"x redsync", func(x RenewalResult) string {
				switch b := r.renewalOf(nameRedsyncGoredis, x.Locks); {
				case x.CommandsPerSec == 0:
					return "not measured" // no renewal came in the window
				case b != nil && b.CommandsPerSec > 0:
					return fmt.Sprintf("%.3gx", x.CommandsPerSec/b.CommandsPerSec)
				}
				return ""
			}},
			{"CPU %", func(x RenewalResult) string { return f1(x.CPUPercent) }},
			{"CPU us/lock/s", func(x RenewalResult) string { return f2(x.CPUUsPerLockS) }},
			{"heap MiB", func(x RenewalResult) string { return f1(x.HeapMiB) }},
			{"lost", func(x RenewalResult) string { return strconv.FormatInt(x.Lost, 10) }},
			{"not taken", func(x RenewalResult) string { return itoa(x.Errors) }},
		},
	}
}

func electionTable(r *Report) section {
	return table[*ElectionResult]{
		title: fmt.Sprintf("ELECTION: time without a leader, from the leader's Resign (or crash: it stops renewing, releases nothing) to the next leader; TTL %v, %d followers waiting;\n"+
			"%s: SET NX PX on the first master, renewal every TTL/3, followers polling every %v", r.ElectionTTL, electionFollowers, nameHandRolled, handRolledPoll),
		rows: r.Election,
		columns: []column[*ElectionResult]{
			{"election", func(x *ElectionResult) string { return x.Name }},
			{"after", func(x *ElectionResult) string { return x.End }},
			{"rounds", func(x *ElectionResult) string { return itoa(len(x.Samples)) }},
			{"p50 ms", func(x *ElectionResult) string { return f1(ms(x.P50)) }},
			{"max ms", func(x *ElectionResult) string { return f1(ms(x.Max)) }},
			{"errors", func(x *ElectionResult) string { return itoa(x.Errors) }},
		},
	}
}

func handoffTable(r *Report) section {
	if len(r.Handoff) == 0 {
		return table[HandoffResult]{}
	}
	after := []string{"setup in the defaults rows:"}
	for _, h := range r.Handoff {
		if h.Setting == settingDefaults {
			after = append(after, "  "+h.Name+": "+h.Note)
		}
	}
	for _, h := range r.Handoff {
		if h.FirstError != "" {
			after = append(after, "first error, "+h.Name+" "+h.Setting+": "+oneLine(h.FirstError))
		}
	}
	// handoffFigure is a hand-off quantile, "-" without hand-offs.
	handoffFigure := func(get func(*Latency) float64) func(HandoffResult) string {
		return func(h HandoffResult) string {
			if h.Handoff.N == 0 {
				return "-"
			}
			return f3(get(&h.Handoff))
		}
	}
	return table[HandoffResult]{
		title: fmt.Sprintf("HANDOFF: %d processes x %d goroutines on one key, hold %v; defaults: each library's own retry settings, equal: the shared ones above;\n"+
			"hand-off = release began -> a Lock call already waiting has it (retakes and barging are not hand-offs); wait = Lock call began -> acquired",
			r.Config.HandoffProcs, r.Config.HandoffG, dur(r.Config.HoldMs)),
		rows: r.Handoff, after: after,
		columns: []column[HandoffResult]{
			{"contender", func(h HandoffResult) string { return h.Name }},
			{"setting", func(h HandoffResult) string { return h.Setting }},
			{"acq/s", func(h HandoffResult) string { return f0(h.AcqPerSec) }},
			{"ratio", func(h HandoffResult) string {
				return ratio(h.AcqPerSec, field(r.handoff(baseline, h.Setting), func(b *HandoffResult) float64 { return b.AcqPerSec }))
			}},
			{"hand-off p50 ms", handoffFigure(func(l *Latency) float64 { return l.P50 })},
			{"p99 ms", handoffFigure(func(l *Latency) float64 { return l.P99 })},
			{"hand-offs %", func(h HandoffResult) string { return f1(100 * h.HandoffShare) }},
			{"longest wait ms", func(h HandoffResult) string { return f3(h.LongestWaitMs) }},
			{"wait p99 ms", func(h HandoffResult) string { return f3(h.Wait.P99) }},
			{"overlaps", func(h HandoffResult) string { return itoa(h.Overlaps) }},
			{"errors", func(h HandoffResult) string { return itoa(h.Errors) }},
			{"", func(h HandoffResult) string { return countNote(h.UnlockErrors, "unlock errors") }},
		},
	}
}

func fleetTable(r *Report) section {
	if len(r.Fleet) == 0 {
		return table[FleetResult]{}
	}
	after := []string{"setup:"}
	var noted []string
	for _, x := range r.Fleet {
		if !slices.Contains(noted, x.Name) {
			noted = append(noted, x.Name)
			after = append(after, "  "+x.Name+": "+x.Note)
		}
	}
	for _, x := range r.Fleet {
		if x.ProbeFailures > 0 {
			after = append(after, fmt.Sprintf("first lock before the window failed, %s P=%d hold %v: in %d processes (ran all the same); %s",
				x.Name, x.Procs, dur(x.HoldMs), x.ProbeFailures, oneLine(x.FirstProbeError)))
		}
		if x.FirstError != "" {
			after = append(after, fmt.Sprintf("first error, %s P=%d hold %v: %s", x.Name, x.Procs, dur(x.HoldMs), oneLine(x.FirstError)))
		}
		if r.Config.FleetStallMs > 0 {
			resume := "no grant after it in the window"
			if x.StallResumeMs >= 0 {
				resume = fmt.Sprintf("first grant %.1f ms after its end", x.StallResumeMs)
			}
			after = append(after, fmt.Sprintf("stall, %s P=%d hold %v: %d master(s) paused %v mid-window: %s, the fleet's gap between grants around it %.1f ms (worst round)",
				x.Name, x.Procs, dur(x.HoldMs), r.Config.FleetStallMasters, dur(r.Config.FleetStallMs), resume, x.StallGapMs))
		}
	}
	wait := func(get func(*Latency) float64) func(FleetResult) string {
		return func(x FleetResult) string {
			if x.Wait.N == 0 {
				return "-"
			}
			return f3(get(&x.Wait))
		}
	}
	return table[FleetResult]{
		title: fmt.Sprintf("FLEET: P processes of G=%d on one key, each process a Client of its own with its library's own retry settings; %d rounds x %v windows;\n"+
			"cmds: every command the masters ran from just before the start to %v before the end, a script's inner calls included (INFO commandstats);\n"+
			"wait = Lock call began -> acquired; longest without: the longest any goroutine went without the lock (no grant: the whole window);\n"+
			"conns accepted, closed: per master over the same span (accepted: a reconnect, a Client's first pub/sub connection, a pool that grows; closed: also processes that exit);\n"+
			"reconnects: per master, the reconnects of the processes' lock connections in the window, as the processes counted them (Volley; - for the others)",
			r.Fleet[0].Goroutines, r.Config.FleetRounds, dur(r.Config.FleetDurationMs), fleetCountLead(dur(r.Config.FleetDurationMs))),
		rows: r.Fleet, after: after,
		columns: []column[FleetResult]{
			{"contender", func(x FleetResult) string { return x.Name }},
			{"P", func(x FleetResult) string { return itoa(x.Procs) }},
			{"hold", func(x FleetResult) string { return dur(x.HoldMs).String() }},
			{"grants/s", func(x FleetResult) string { return f0(x.GrantsPerSec) }},
			{"ratio", func(x FleetResult) string {
				return ratio(x.GrantsPerSec, field(r.fleetOf(baseline, x.Procs, x.HoldMs), func(b *FleetResult) float64 { return b.GrantsPerSec }))
			}},
			{"cmds/grant", func(x FleetResult) string { return measuredFigure(x.CommandsPerGrant) }},
			{"cmds/s", func(x FleetResult) string {
				if x.CommandsPerSec < 0 {
					return "-"
				}
				return f0(x.CommandsPerSec)
			}},
			{"wait p50 ms", wait(func(l *Latency) float64 { return l.P50 })},
			{"wait p99 ms", wait(func(l *Latency) float64 { return l.P99 })},
			{"longest without ms", func(x FleetResult) string { return f1(x.LongestWithoutMs) }},
			{"procs without", func(x FleetResult) string { return itoa(x.ProcsWithout) }},
			{"conns accepted", func(x FleetResult) string { return perMaster(x.Accepted) }},
			{"closed", func(x FleetResult) string { return perMaster(x.Closed) }},
			{"reconnects", func(x FleetResult) string { return perMaster(x.Reconnects) }},
			{"overlaps", func(x FleetResult) string { return itoa(x.Overlaps) }},
			{"errors", func(x FleetResult) string { return itoa(x.Errors) }},
			{"", func(x FleetResult) string { return countNote(x.UnlockErrors, "unlock errors") }},
		},
	}
}

func semaphoreLatencyTable(r *Report) section {
	title := fmt.Sprintf("SEMAPHORE LATENCY: Volley, 1 goroutine, uncontended, one Client, a ring of %d names per operation, ms", semaphoreRing)
	if lr := r.Config.LatencyRounds; lr > 0 {
		title += fmt.Sprintf(" (%d rounds x %v)", lr, dur(r.Config.LatencyDurationMs))
	}
	return table[SemaphoreLatency]{
		title: title + "; x mutex: p50 over the mutex's p50",
		rows:  r.SemaphoreLatency,
		columns: []column[SemaphoreLatency]{
			{"contender", func(l SemaphoreLatency) string { return l.Name }},
			{"operation", func(l SemaphoreLatency) string {
				if l.Permits > 0 {
					return fmt.Sprintf("%s, %d permits", l.Op, l.Permits)
				}
				return l.Op
			}},
			{"p50", func(l SemaphoreLatency) string { return f3(l.Lat.P50) }},
			{"p90", func(l SemaphoreLatency) string { return f3(l.Lat.P90) }},
			{"p99", func(l SemaphoreLatency) string { return f3(l.Lat.P99) }},
			{"max", func(l SemaphoreLatency) string { return f3(l.Lat.Max) }},
			{"x mutex", func(l SemaphoreLatency) string {
				if l.Permits > 0 {
					return f2(l.P50XMutex) + "x"
				}
				return "-"
			}},
			{"ops", func(l SemaphoreLatency) string { return itoa(l.Lat.N) }},
			{"", func(l SemaphoreLatency) string { return errNote(l.Errors) }},
		},
	}
}

func semaphoreTable(r *Report) section {
	after := r.notMeasured(semaphoreContenders)
	if len(r.Semaphore) > 0 {
		after = append(after, "setup:")
	}
	for _, x := range r.Semaphore {
		after = append(after, "  "+x.Name+": "+x.Note)
	}
	for _, x := range r.Semaphore {
		if x.FirstError != "" {
			after = append(after, "first error, "+x.Name+": "+oneLine(x.FirstError))
		}
	}
	return table[SemaphoreResult]{
		title: fmt.Sprintf("SEMAPHORE: one semaphore of %d permits, %d processes x %d goroutines, hold %v; wait = Acquire call began -> acquired;\n"+
			"most holders: at once, more than %d is over-admission; over %d: acquisitions that made more holders than permits",
			semaphorePermits, r.Config.HandoffProcs, r.Config.HandoffG, dur(r.Config.SemaphoreHoldMs), semaphorePermits, semaphorePermits),
		rows: r.Semaphore, after: after,
		columns: []column[SemaphoreResult]{
			{"contender", func(x SemaphoreResult) string { return x.Name }},
			{"acq/s", func(x SemaphoreResult) string { return f0(x.AcqPerSec) }},
			{"wait p50 ms", func(x SemaphoreResult) string { return f3(x.Wait.P50) }},
			{"wait p99 ms", func(x SemaphoreResult) string { return f3(x.Wait.P99) }},
			{"longest wait ms", func(x SemaphoreResult) string { return f3(x.LongestWaitMs) }},
			{"most holders", func(x SemaphoreResult) string { return itoa(x.MostHolders) }},
			{fmt.Sprintf("over %d", semaphorePermits), func(x SemaphoreResult) string { return itoa(x.OverPermits) }},
			{"errors", func(x SemaphoreResult) string { return itoa(x.Errors) }},
			{"", func(x SemaphoreResult) string { return countNote(x.UnlockErrors, "release errors") }},
		},
	}
}

func clusterTable(r *Report) section {
	ref := field(r.clusterLatencyOf(nameVolleyStandalone), func(c *ClusterLatency) float64 { return c.Lat.P50 })
	return table[ClusterLatency]{
		title: fmt.Sprintf("CLUSTER: Lock+Unlock, 1 goroutine, fresh key, on local Redis Clusters (no replicas; %s: the first size); x standalone: to %s's p50", nameVolleyCluster, nameVolleyStandalone),
		rows:  r.ClusterLatency,
		columns: []column[ClusterLatency]{
			{"contender", func(c ClusterLatency) string { return c.Name }},
			{"p50 ms", func(c ClusterLatency) string { return f3(c.Lat.P50) }},
			{"p99 ms", func(c ClusterLatency) string { return f3(c.Lat.P99) }},
			{"x standalone", func(c ClusterLatency) string { return ratio(c.Lat.P50, ref) }},
			{"errors", func(c ClusterLatency) string { return itoa(c.Errors) }},
			{"setup", func(c ClusterLatency) string { return c.Note }},
		},
	}
}

func semaphoreAttemptsTable(r *Report) section {
	return table[SemaphoreAttempts]{
		title: fmt.Sprintf("SEMAPHORE ATTEMPTS: Volley, one goroutine, %d calls each, some of the permits held by others; TryAcquire refused: failed while a permit was free", attemptsCalls),
		rows:  r.SemaphoreAttempts,
		columns: []column[SemaphoreAttempts]{
			{"permits", func(a SemaphoreAttempts) string { return itoa(a.Permits) }},
			{"held", func(a SemaphoreAttempts) string { return itoa(a.Held) }},
			{"Acquire attempts per grant, mean", func(a SemaphoreAttempts) string { return f2(a.MeanAttempts) }},
			{"most", func(a SemaphoreAttempts) string { return itoa(a.MaxAttempts) }},
			{"TryAcquire refused", func(a SemaphoreAttempts) string { return fmt.Sprintf("%d of %d", a.TryRefused, a.Calls) }},
		},
	}
}

func clusterSpreadTable(r *Report) section {
	return table[ClusterSpread]{
		title: fmt.Sprintf("CLUSTER SPREAD: %d distinct names, Lock+Unlock from %d goroutines, fresh Client; share: a primary's SET+EVAL+EVALSHA calls against the mean (INFO commandstats)", spreadNames, spreadG),
		rows:  r.ClusterSpread,
		columns: []column[ClusterSpread]{
			{"primaries", func(c ClusterSpread) string { return itoa(c.Primaries) }},
			{"copies", func(c ClusterSpread) string { return itoa(c.Copies) }},
			{"locks/s", func(c ClusterSpread) string { return f0(c.LocksPerSec) }},
			{"least share", func(c ClusterSpread) string { return f2(c.MinShare) }},
			{"most share", func(c ClusterSpread) string { return f2(c.MaxShare) }},
			{"commands per primary", func(c ClusterSpread) string { return fmt.Sprint(c.Commands) }},
			{"errors", func(c ClusterSpread) string { return itoa(c.Errors) }},
		},
	}
}

func clusterRecoveryTable(r *Report) section {
	return table[ClusterRecovery]{
		title: "CLUSTER RECOVERY: the primary of the lock key's slot killed (SIGKILL; cluster-node-timeout 1s), fresh cluster (a replica per primary) per contender, attempts bounded by " + clusterAttempt.String(),
		rows:  r.ClusterRecovery,
		columns: []column[ClusterRecovery]{
			{"contender", func(c ClusterRecovery) string { return c.Name }},
			{"first lock after ms", func(c ClusterRecovery) string {
				if c.NeverLocked {
					return "none in " + dur(c.BoundMs).String()
				}
				return f3(c.FirstLockMs)
			}},
			{"replica promoted after ms", func(c ClusterRecovery) string {
				if c.PromoteError != "" {
					return "not promoted"
				}
				return f3(c.PromotedMs)
			}},
			{"failed attempts", func(c ClusterRecovery) string { return itoa(c.FailedTries) }},
			{"last error", func(c ClusterRecovery) string { return c.LastError }},
		},
	}
}

// targetsTable states each of Volley's goals, the figure it was checked
// on, and the verdict.
func targetsTable(r *Report) section {
	return table[Target]{
		title: "TARGETS (volley)", left: true, rows: r.Targets,
		columns: []column[Target]{
			{"", func(t Target) string { return t.Goal }},
			{"", func(t Target) string { return t.Figure }},
			{"", func(t Target) string {
				switch {
				case !t.Measured:
					return "-"
				case t.Met:
					return "met"
				}
				return "not met"
			}},
		},
	}
}
