package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/volleylock/volley/internal/redistest"
)

// Fleet mode: many processes, one lock (#53). For each process count P of
// FleetProcs, lockbench starts P child processes of its own binary (the
// handoff mode's, handoff_child.go and handoff_workers.go), each with a
// Client of its own; for every contender of fleetContenders and every
// hold of FleetHolds, each child runs FleetG goroutines on one key from
// one start time for FleetDuration: Lock, hold, Unlock, again. Every
// contender runs with its library's own retry settings (Setup.Defaults),
// Volley with MaxTTL set to the TTL. The parent merges every process's
// acquisitions (fleetFigures), and reads the masters' counters (INFO
// stats, clients and commandstats) as the start is sent and again a
// little before the window's end (fleetCountLead: the Lock calls that the
// end cuts close connections of their own, which would count as
// reconnects):
//
//   - grants/s: acquisitions in the window, all processes together;
//   - commands per grant: every command the masters ran from the first
//     read to the second, a script's inner calls included (INFO itself
//     left out), over the grants of the window until the second;
//   - wait: from a Lock call's start to its acquisition (calls cut by the
//     end of the window are not counted);
//   - the longest any goroutine went without the lock: from the window's
//     start or its last release to its next acquisition or the window's
//     end (a goroutine, or a process, that had no grant at all counts the
//     whole window);
//   - the processes that had no grant in the window;
//   - per master, the connections it accepted between the two reads
//     (reconnects, and a Client's first connection of a kind: Volley's
//     pub/sub connection, opened at its first wait; a pool that grows)
//     and those that closed, from total_connections_received and
//     connected_clients;
//   - overlaps, which fail the mode with ErrOverlap (a peer's are only
//     reported: see peers), as in the handoff mode.
//
// A process whose first lock (on a key of its own, before the window)
// failed runs all the same (handoffJob.ProbeMayFail): with dozens of
// processes setting up at once, a contender that cannot lock then is
// measured, and the table says how many processes failed it.

const modeFleet = "fleet"

// fleetContenders are the contenders of the fleet mode, of those the run
// has (-contenders narrows them).
var fleetContenders = []string{nameRedsyncGoredis, nameVolley}

// fleetStartDelay is the fleet mode's lead from the moment every child is
// ready to the common start: the masters' counters are read in it, and
// dozens of children must read the start first.
const fleetStartDelay = 100 * time.Millisecond

// fleetCountMargin is how long before the window's end the masters'
// counters are read the second time, or a tenth of the window if that is
// shorter (fleetCountLead).
const fleetCountMargin = 50 * time.Millisecond

// fleetCountLead is how long before the end of a window of d the
// masters' counters are read the second time.
func fleetCountLead(d time.Duration) time.Duration { return min(fleetCountMargin, d/10) }

// FleetResult is one contender at one process count and hold, over the
// rounds: grants/s, commands and the wait's figures are medians over the
// rounds that had them; the longest time without the lock, the processes
// without a grant and each master's connections the worst round's;
// overlaps and errors totals.
type FleetResult struct {
	Name         string    `json:"name"`
	Note         string    `json:"note,omitempty"`
	Procs        int       `json:"procs"`
	Goroutines   int       `json:"goroutines_per_proc"`
	HoldMs       float64   `json:"hold_ms"`
	GrantsPerSec float64   `json:"grants_per_sec"`
	Rounds       []float64 `json:"rounds"`
	// CommandsPerGrant is the masters' commands in the window over its
	// grants (rounds with a grant), CommandsPerSec those commands over
	// the window; -1: not measured (masters without INFO commandstats).
	// CommandsPerGrant is 0 when no round had a grant.
	CommandsPerGrant float64 `json:"commands_per_grant"`
	CommandsPerSec   float64 `json:"commands_per_sec"`
	Wait             Latency `json:"wait"` // Lock call began -> acquired
	// LongestWithoutMs is the longest any goroutine went without the lock.
	LongestWithoutMs float64 `json:"longest_without_ms"`
	ProcsWithout     int     `json:"procs_without_grant"`
	// Accepted and Closed are, per master, the connections it accepted in
	// the window and those that closed; nil: not measured.
	Accepted []int64 `json:"accepted,omitempty"`
	Closed   []int64 `json:"closed,omitempty"`
	// Reconnects is, per master, the reconnects of the processes' lock
	// connections in the window, summed over the processes (the worst
	// round's); nil: the contender does not count them (Volley does).
	Reconnects   []int64 `json:"reconnects,omitempty"`
	Overlaps     int     `json:"overlaps"`
	Errors       int     `json:"errors"` // Lock calls that failed before the end of the window
	UnlockErrors int     `json:"unlock_errors,omitempty"`
	FirstError   string  `json:"first_error,omitempty"`
	// ProbeFailures is the processes whose first lock, before the window,
	// failed (the worst round's); FirstProbeError the first one's error.
	ProbeFailures   int    `json:"probe_failures,omitempty"`
	FirstProbeError string `json:"first_probe_error,omitempty"`
	// StallResumeMs and StallGapMs are, with -fleet-stall, the worst
	// round's time from the stall's end to the next grant (-1: none came
	// in the window) and the fleet's gap between grants around it; 0
	// without a stall.
	StallResumeMs float64 `json:"stall_resume_ms,omitempty"`
	StallGapMs    float64 `json:"stall_gap_ms,omitempty"`
}

// masterCount is what one master counted up to a moment.
type masterCount struct {
	// Commands is every command's calls and rejected calls but INFO's (a
	// script's inner calls are counted under their own commands).
	Commands int64
	Accepted int64 // total_connections_received
	Open     int64 // connected_clients
}

// readMasterCounts reads every master's counters, over one connection to
// each (which accepted and open count); nil when a master does not report
// them all (the in-process fakes).
func readMasterCounts(addrs []string) []masterCount {
	counts := make([]masterCount, len(addrs))
	for i, a := range addrs {
		vals, err := redistest.Do(a, "INFO", "stats", "clients", "commandstats")
		if err != nil {
			return nil
		}
		text := string(vals[0].Bytes)
		stats, err := commandStats(text)
		if err != nil {
			return nil
		}
		for name, st := range stats {
			if name != "info" {
				counts[i].Commands += st.Calls + st.Rejected
			}
		}
		fields := infoFields(text)
		accepted, err1 := strconv.ParseInt(fields["total_connections_received"], 10, 64)
		open, err2 := strconv.ParseInt(fields["connected_clients"], 10, 64)
		if err1 != nil || err2 != nil {
			return nil
		}
		counts[i].Accepted, counts[i].Open = accepted, open
	}
	return counts
}

// masterWindow is the masters' counters over one window: read before its
// start, and again at until (Unix ns), before its end. Nil counts: not
// measured.
type masterWindow struct {
	before, after []masterCount
	until         int64
	stallEnd      int64 // when the window's stall ended (Unix ns); 0: none
}

// fleetFigure is one round of one contender at one process count and
// hold.
type fleetFigure struct {
	handoffFigure                // Acquired: the grants; AcqPerSec, Wait, Overlaps
	LongestWithout time.Duration // the longest any goroutine went without the lock
	ProcsWithout   int           // processes without a grant
	// Commands is the masters' commands between the two reads, all
	// masters together, -1 when not measured; Counted the grants from
	// the start to the second read, Seconds that time. Accepted and
	// Closed are per master, nil when not measured.
	Commands         int64
	Counted          int
	Seconds          float64
	Accepted, Closed []int64
	Reconnects       []int64 // per master, the processes' reconnects (see FleetResult.Reconnects)
	// Stalled: masters were paused in the window (see fleetStall);
	// StallResume is then from the pause's end to the first grant after
	// it (-1: none in the window), StallGap the fleet's gap between the
	// grants around that end (-1: none before or after it).
	Stalled               bool
	StallResume, StallGap time.Duration
}

// fleetStall is a pause of the first Masters masters (CLIENT PAUSE ALL)
// for For, sent at the middle of a fleet window: a master that stops
// answering for a moment (a fork, a slow command), as every process of a
// fleet meets it. Its end is when the pause was sent plus For.
type fleetStall struct {
	Masters int
	For     time.Duration
}

// pauseMasters pauses the first n of addrs for d (CLIENT PAUSE ALL) and
// returns when the pauses end (Unix ns), or an error.
func pauseMasters(addrs []string, n int, d time.Duration) (int64, error) {
	end := time.Now().Add(d).UnixNano()
	for _, a := range addrs[:min(n, len(addrs))] {
		if _, err := redistest.Do(a, "CLIENT", "PAUSE", strconv.FormatInt(d.Milliseconds(), 10), "ALL"); err != nil {
			return 0, fmt.Errorf("CLIENT PAUSE %s: %w", a, err)
		}
	}
	return end, nil
}

// stallFigures returns, for a pause that ended at end (Unix ns), the time
// from its end to the first grant after it (-1 when none came before
// the window's end) and the gap between the grants around it.
func stallFigures(events []holdEvent, end, windowEnd int64) (resume, gap time.Duration) {
	last, next := int64(0), int64(0)
	for _, e := range events {
		switch {
		case e.Acquired < end && e.Acquired > last:
			last = e.Acquired
		case e.Acquired >= end && e.Acquired < windowEnd && (next == 0 || e.Acquired < next):
			next = e.Acquired
		}
	}
	if next == 0 {
		return -1, -1
	}
	if last == 0 {
		return time.Duration(next - end), -1
	}
	return time.Duration(next - end), time.Duration(next - last)
}

// fleetOwnConns is the connections of the parent's own in a window, per
// master: the one that reads the counters at its end.
const fleetOwnConns = 1

// fleetFigures merges every process's events of one round, run from start
// to end (Unix ns) by procs processes of g goroutines each, with the
// masters' counters of the window.
func fleetFigures(events []holdEvent, start, end int64, procs, g int, w masterWindow) fleetFigure {
	f := fleetFigure{handoffFigure: handoffFigures(events, start, end, 1), Commands: -1, StallResume: -1, StallGap: -1}
	if w.stallEnd > 0 {
		f.Stalled = true
		f.StallResume, f.StallGap = stallFigures(events, w.stallEnd, end)
	}
	type who struct{ proc, g int }
	byG := map[who][]holdEvent{}
	granted := make([]bool, procs)
	for _, e := range events {
		byG[who{e.Proc, e.G}] = append(byG[who{e.Proc, e.G}], e)
		if e.Acquired >= start && e.Acquired < end && e.Proc < procs {
			granted[e.Proc] = true
		}
		if e.Acquired >= start && e.Acquired < w.until {
			f.Counted++
		}
	}
	for p := range procs {
		if !granted[p] {
			f.ProcsWithout++
		}
		for i := range g {
			es := byG[who{p, i}]
			slices.SortFunc(es, func(a, b holdEvent) int { return cmp.Compare(a.Acquired, b.Acquired) })
			free := start // since when it has been without the lock
			for _, e := range es {
				if e.Acquired >= end {
					break
				}
				f.LongestWithout = max(f.LongestWithout, time.Duration(e.Acquired-free))
				free = max(free, e.Released)
			}
			f.LongestWithout = max(f.LongestWithout, time.Duration(end-free))
		}
	}
	if len(w.before) == 0 || len(w.before) != len(w.after) || w.until <= start {
		f.Counted = 0
		return f
	}
	f.Commands, f.Seconds = 0, time.Duration(w.until-start).Seconds()
	for i, b := range w.before {
		a := w.after[i]
		accepted := a.Accepted - b.Accepted - fleetOwnConns
		f.Commands += a.Commands - b.Commands
		f.Accepted = append(f.Accepted, accepted)
		f.Closed = append(f.Closed, accepted-(a.Open-b.Open))
	}
	return f
}

// fleetResult sums one contender's rounds at one process count and hold.
func fleetResult(name, note string, procs, g int, hold time.Duration, figs []fleetFigure, errs, unlockErrs int) FleetResult {
	res := FleetResult{Name: name, Note: note, Procs: procs, Goroutines: g, HoldMs: ms(hold),
		Errors: errs, UnlockErrors: unlockErrs, CommandsPerGrant: -1, CommandsPerSec: -1}
	var perGrant, perSec []float64
	var waits []Latency
	for _, f := range figs {
		res.Rounds = append(res.Rounds, f.AcqPerSec)
		res.Overlaps += f.Overlaps
		res.LongestWithoutMs = max(res.LongestWithoutMs, ms(f.LongestWithout))
		res.ProcsWithout = max(res.ProcsWithout, f.ProcsWithout)
		if f.Wait.N > 0 {
			waits = append(waits, f.Wait)
		}
		if f.Commands < 0 {
			continue
		}
		perSec = append(perSec, float64(f.Commands)/f.Seconds)
		if f.Counted > 0 {
			perGrant = append(perGrant, float64(f.Commands)/float64(f.Counted))
		}
		res.Accepted = mostEach(res.Accepted, f.Accepted)
		res.Closed = mostEach(res.Closed, f.Closed)
		res.Reconnects = mostEach(res.Reconnects, f.Reconnects)
	}
	for _, f := range figs {
		// The worst round's: no grant after the stall is worse than any.
		if !f.Stalled {
			continue
		}
		if f.StallResume < 0 {
			res.StallResumeMs = -1
		} else if res.StallResumeMs >= 0 {
			res.StallResumeMs = max(res.StallResumeMs, ms(f.StallResume))
		}
		res.StallGapMs = max(res.StallGapMs, ms(f.StallGap))
	}
	// No NaN: JSON has none.
	if len(res.Rounds) > 0 {
		res.GrantsPerSec = median(res.Rounds)
	}
	if len(waits) > 0 {
		res.Wait = medianLatency(waits)
	}
	if len(perSec) > 0 {
		res.CommandsPerSec = median(perSec)
		res.CommandsPerGrant = 0
	}
	if len(perGrant) > 0 {
		res.CommandsPerGrant = median(perGrant)
	}
	return res
}

// mostEach is the element-wise maximum of a and b (b when a is nil).
func mostEach(a, b []int64) []int64 {
	if a == nil {
		return slices.Clone(b)
	}
	for i := range min(len(a), len(b)) {
		a[i] = max(a[i], b[i])
	}
	return a
}

// fleetCase is one contender at one hold: the unit the rounds rotate.
type fleetCase struct {
	def  contenderDef
	hold time.Duration
}

func (c fleetCase) Name() string { return c.def.name + " hold " + c.hold.String() }

// fleet runs the fleet mode: for each process count, children started
// once, and every case over the rounds.
func (r *Runner) fleet(ctx context.Context) error {
	defs := slices.DeleteFunc(r.defsFor(modeFleet), func(d contenderDef) bool { return !slices.Contains(fleetContenders, d.name) })
	if len(defs) == 0 {
		return nil
	}
	var cases []fleetCase
	for _, h := range r.opts.FleetHolds {
		for _, d := range defs {
			cases = append(cases, fleetCase{d, h})
		}
	}
	saved := r.opts.Rounds
	r.opts.Rounds = r.opts.FleetRounds
	defer func() { r.opts.Rounds = saved }()
	argv, err := lockbenchChild()
	if err != nil {
		return fmt.Errorf("lockbench: fleet: %w", err)
	}
	ov := overlaps{report: r.report}
	for _, procs := range r.opts.FleetProcs {
		res, err := r.fleetProcs(ctx, argv, procs, cases)
		if err != nil {
			return err
		}
		for _, x := range res {
			if !slices.ContainsFunc(r.report.Contenders, func(i ContenderInfo) bool { return i.Name == x.Name }) {
				r.report.Contenders = append(r.report.Contenders, ContenderInfo{Name: x.Name, Note: x.Note})
			}
			r.report.Fleet = append(r.report.Fleet, x)
			ov.add(x.Name, x.Overlaps, fmt.Sprintf("fleet %s P=%d hold %v", x.Name, x.Procs, dur(x.HoldMs)))
		}
	}
	return ov.err()
}

// fleetProcs runs every case with procs children and returns a result per
// case that ran.
func (r *Runner) fleetProcs(ctx context.Context, argv []string, procs int, cases []fleetCase) ([]FleetResult, error) {
	g, d := r.opts.FleetG, r.opts.FleetDuration
	label := fmt.Sprintf("fleet P=%d G=%d", procs, g)
	r.progress.phase("%s: %d rounds x %d contenders and holds x %v", label, r.opts.Rounds, len(cases), d)
	ws, err := startHandoffWorkers(ctx, modeFleet, argv, procs)
	if err != nil {
		return nil, err
	}
	defer ws.kill() // a no-op after a clean close

	figs := map[string][]fleetFigure{}
	notes := map[string]string{}
	errs := map[string]int{}
	unlockErrs := map[string]int{}
	firstErr := map[string]string{}
	probeErrs := map[string]int{}
	firstProbeErr := map[string]string{}
	skipped := map[string]bool{}
	err = eachRound(ctx, r, label, cases, func(round int, c fleetCase) error {
		if skipped[c.def.name] {
			return nil
		}
		s := r.opts.Setup
		s.Defaults = true
		s.MaxTTL = s.TTL
		// Keys of this job alone: a first lock whose release did not
		// reach the masters leaves no key for the next job's.
		id := c.def.name + ":fleet:" + strconv.Itoa(procs) + ":" + c.hold.String() + ":" + strconv.Itoa(round)
		job := handoffJob{
			Contender:    c.def.name,
			Setup:        s,
			Key:          "lb:" + r.run + ":" + id,
			Probe:        "lb:" + r.run + ":probe:" + id + ":",
			G:            g,
			Hold:         c.hold,
			Duration:     d,
			ProbeMayFail: true,
		}
		var before []masterCount
		after := make(chan masterWindow, 1) // its timer may fire after a failed run
		stalled := make(chan int64, 1)      // the stall's end, 0 for none (or a failed pause)
		out, err := ws.run(job, fleetStartDelay, func(start, end time.Time) {
			before = readMasterCounts(s.Addrs)
			until := end.Add(-fleetCountLead(end.Sub(start)))
			if st := r.opts.FleetStall; st.For > 0 {
				time.AfterFunc(time.Until(start.Add(end.Sub(start)/2)), func() {
					at, err := pauseMasters(s.Addrs, st.Masters, st.For)
					if err != nil {
						r.progress.phase("%s: %v", label, err)
					}
					stalled <- at
				})
			} else {
				stalled <- 0
			}
			time.AfterFunc(time.Until(until), func() {
				at := time.Now().UnixNano()
				after <- masterWindow{after: readMasterCounts(s.Addrs), until: at}
			})
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if out.setupErr != "" {
			skipped[c.def.name] = true
			r.skip(c.def.name, "fleet: "+out.setupErr)
			return nil
		}
		k := c.Name()
		w := <-after
		w.before = before
		w.stallEnd = <-stalled
		fig := fleetFigures(out.events, out.start, out.end, procs, g, w)
		fig.Reconnects = out.reconnects
		figs[k] = append(figs[k], fig)
		notes[k] = out.note
		errs[k] += out.lockErrors
		unlockErrs[k] += out.unlockErrors
		if firstErr[k] == "" {
			firstErr[k] = out.firstError
		}
		probeErrs[k] = max(probeErrs[k], out.probeErrs)
		if firstProbeErr[k] == "" {
			firstProbeErr[k] = out.probeErr
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := ws.close(); err != nil {
		return nil, fmt.Errorf("lockbench: fleet: %w", err)
	}
	var res []FleetResult
	for _, c := range cases {
		k := c.Name()
		if len(figs[k]) == 0 {
			continue
		}
		x := fleetResult(c.def.name, notes[k], procs, g, c.hold, figs[k], errs[k], unlockErrs[k])
		x.FirstError = firstErr[k]
		x.ProbeFailures, x.FirstProbeError = probeErrs[k], firstProbeErr[k]
		res = append(res, x)
	}
	return res, nil
}
