package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Handoff mode: one lock contended across processes. lockbench starts
// HandoffProcs child processes of its own binary (handoff_child.go) and,
// for every contender in two settings (its library's default retry
// settings, and the shared Setup), has each child run HandoffG goroutines
// on one key from one start time for Duration: Lock, hold for Hold,
// Unlock, again. Each child sends back every acquisition as wall-clock
// times (the processes share one machine, so their clocks agree), and the
// parent merges them (handoffFigures):
//
//   - acquisitions/s, all processes together;
//   - overlaps: holds (acquired -> release began) of different goroutines
//     that intersect; any fails the mode with ErrOverlap, but a peer's,
//     which is only reported (see peers);
//   - waiter hand-off: an acquisition whose Lock call began before the
//     latest release that preceded it was waiting for that release; its
//     hand-off is from that release's start to its acquisition. The
//     releaser retaking the lock, or anyone arriving after the release
//     and barging in, is not a hand-off;
//   - waits: from a Lock call's start to its acquisition (calls cut by the
//     end of the run are not counted).

// Settings of the handoff mode.
const (
	settingDefaults = "defaults" // each library's own retry settings (Setup.Defaults)
	settingEqual    = "equal"    // the shared Setup of every mode
)

var handoffSettings = []string{settingDefaults, settingEqual}

// HandoffResult is one contender in one setting, over the rounds:
// acquisitions/s, hand-off, share and wait figures are medians over the
// rounds that had samples; the longest wait is the worst round's; overlaps
// and errors are totals.
type HandoffResult struct {
	Name       string    `json:"name"`
	Setting    string    `json:"setting"`
	Note       string    `json:"note,omitempty"`
	Procs      int       `json:"procs"`
	Goroutines int       `json:"goroutines_per_proc"`
	AcqPerSec  float64   `json:"acquisitions_per_sec"`
	Rounds     []float64 `json:"rounds"`
	// Handoff: release began -> a waiting Lock call has the lock.
	Handoff Latency `json:"handoff"`
	// HandoffShare is the fraction of acquisitions after a release that
	// were hand-offs to a waiter (the rest: retakes and barging).
	HandoffShare  float64 `json:"handoff_share"`
	Wait          Latency `json:"wait"`
	LongestWaitMs float64 `json:"longest_wait_ms"`
	Overlaps      int     `json:"overlaps"`
	Errors        int     `json:"errors"` // Lock calls that failed before the end of the run
	UnlockErrors  int     `json:"unlock_errors,omitempty"`
	FirstError    string  `json:"first_error,omitempty"` // of a Lock or Unlock call, the first round's that had one
}

// holdEvent is one acquisition, in wall-clock Unix nanoseconds.
type holdEvent struct {
	Proc, G  int   // who: child process, goroutine in it
	Began    int64 // the Lock call began
	Acquired int64 // Lock returned with the lock
	Released int64 // release began: just before Unlock was called
}

// handoffFigure is one round of one contender in one setting.
type handoffFigure struct {
	Acquired    int     // acquisitions in [start, end)
	AcqPerSec   float64 //
	Handoff     Latency // hand-offs to a waiter
	Successions int     // acquisitions that followed a release
	Overlaps    int     // acquisitions that made more holders at once than permits
	MostHolders int     // the most holders at once
	Wait        Latency // Lock call began -> acquired, every acquisition
}

// handoffFigures merges every process's events of one round, run from
// start to end (Unix ns), of a lock that admits permits holders at once
// (1: a mutex; the semaphore mode's P). A hold is [acquired, release
// began): a release at the instant of an acquisition does not overlap it.
func handoffFigures(events []holdEvent, start, end int64, permits int) handoffFigure {
	byAcq := slices.Clone(events)
	slices.SortFunc(byAcq, func(a, b holdEvent) int { return cmp.Compare(a.Acquired, b.Acquired) })
	releases := make([]int64, len(events))
	for i, e := range events {
		releases[i] = e.Released
	}
	slices.Sort(releases)

	var f handoffFigure
	var handoffs, waits []time.Duration
	next := 0 // releases[:next] began before the current acquisition
	gone := 0 // releases[:gone] began before it or at its instant
	for i, a := range byAcq {
		if a.Acquired >= start && a.Acquired < end {
			f.Acquired++
		}
		waits = append(waits, time.Duration(a.Acquired-a.Began))
		for gone < len(releases) && releases[gone] <= a.Acquired {
			gone++
		}
		// Holders right after this acquisition: the holds acquired so far
		// (a release never precedes its own acquisition) less those released.
		holders := i + 1 - gone
		f.MostHolders = max(f.MostHolders, holders)
		if holders > permits {
			f.Overlaps++
		}
		for next < len(releases) && releases[next] < a.Acquired {
			next++
		}
		if next == 0 {
			continue // nobody released before: the first holder
		}
		f.Successions++
		if r := releases[next-1]; a.Began < r {
			handoffs = append(handoffs, time.Duration(a.Acquired-r))
		}
	}
	if end > start {
		f.AcqPerSec = float64(f.Acquired) / time.Duration(end-start).Seconds()
	}
	f.Handoff = summarize(handoffs)
	f.Wait = summarize(waits)
	return f
}

// share is the fraction of successions that were hand-offs to a waiter.
func (f handoffFigure) share() float64 {
	if f.Successions == 0 {
		return 0
	}
	return float64(f.Handoff.N) / float64(f.Successions)
}

// handoffResult sums one contender's rounds in one setting.
func handoffResult(name, setting, note string, procs, g int, figs []handoffFigure, errs, unlockErrs int) HandoffResult {
	res := HandoffResult{Name: name, Setting: setting, Note: note, Procs: procs, Goroutines: g, Errors: errs, UnlockErrors: unlockErrs}
	var hand, wait []Latency
	var shares []float64
	for _, f := range figs {
		res.Rounds = append(res.Rounds, f.AcqPerSec)
		res.Overlaps += f.Overlaps
		res.LongestWaitMs = max(res.LongestWaitMs, f.Wait.Max)
		if f.Handoff.N > 0 {
			hand = append(hand, f.Handoff)
		}
		if f.Wait.N > 0 {
			wait = append(wait, f.Wait)
		}
		if f.Successions > 0 {
			shares = append(shares, f.share())
		}
	}
	// No NaN: a round without samples is left out, none at all leaves zeros
	// with N = 0 (JSON has no NaN).
	if len(res.Rounds) > 0 {
		res.AcqPerSec = median(res.Rounds)
	}
	if len(hand) > 0 {
		res.Handoff = medianLatency(hand)
	}
	if len(wait) > 0 {
		res.Wait = medianLatency(wait)
	}
	if len(shares) > 0 {
		res.HandoffShare = median(shares)
	}
	return res
}

// handoffCase is one contender in one setting: the unit the rounds rotate.
type handoffCase struct {
	def     contenderDef
	setting string
}

func (c handoffCase) Name() string { return c.def.name + " " + c.setting }

// handoffStartDelay is how far ahead of now the parent sets the common
// start time: long enough for every child to read it first.
const handoffStartDelay = 20 * time.Millisecond

func (r *Runner) handoff(ctx context.Context) error {
	procs, g := r.opts.HandoffProcs, r.opts.HandoffG
	defs := r.defsFor(modeHandoff)
	var cases []handoffCase
	for _, d := range defs {
		for _, s := range handoffSettings {
			cases = append(cases, handoffCase{d, s})
		}
	}
	r.progress.phase("handoff P=%d G=%d: %d rounds x %d contenders x %d settings x %v", procs, g, r.opts.Rounds, len(defs), len(handoffSettings), r.opts.Duration)
	argv, err := lockbenchChild()
	if err != nil {
		return fmt.Errorf("lockbench: handoff: %w", err)
	}
	ws, err := startHandoffWorkers(ctx, modeHandoff, argv, procs)
	if err != nil {
		return err
	}
	defer ws.kill() // a no-op after a clean close

	type slot struct{ name, setting string }
	figs := map[slot][]handoffFigure{}
	notes := map[slot]string{}
	errs := map[slot]int{}
	unlockErrs := map[slot]int{}
	firstErr := map[slot]string{}
	skipped := map[string]bool{} // by case: a setting that cannot be set up
	err = eachRound(ctx, r, fmt.Sprintf("handoff P=%d G=%d", procs, g), cases, func(round int, c handoffCase) error {
		if skipped[c.Name()] {
			return nil
		}
		s := r.opts.Setup
		s.Defaults = c.setting == settingDefaults
		job := handoffJob{
			Contender: c.def.name,
			Setup:     s,
			Key:       "lb:" + r.run + ":" + c.def.name + ":handoff:" + c.setting + ":" + strconv.Itoa(round),
			Probe:     "lb:" + r.run + ":probe:" + c.def.name + ":handoff:",
			G:         g,
			Hold:      r.opts.Hold,
			Duration:  r.opts.Duration,
		}
		out, err := ws.run(job, handoffStartDelay, nil)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if out.setupErr != "" {
			skipped[c.Name()] = true
			r.skip(c.def.name, "handoff "+c.setting+": "+out.setupErr)
			return nil
		}
		k := slot{c.def.name, c.setting}
		figs[k] = append(figs[k], handoffFigures(out.events, out.start, out.end, 1))
		notes[k] = out.note
		errs[k] += out.lockErrors
		unlockErrs[k] += out.unlockErrors
		if firstErr[k] == "" {
			firstErr[k] = out.firstError
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := ws.close(); err != nil {
		return fmt.Errorf("lockbench: handoff: %w", err)
	}
	ov := overlaps{report: r.report}
	for _, c := range cases {
		k := slot{c.def.name, c.setting}
		if len(figs[k]) == 0 {
			continue
		}
		if c.setting == settingEqual && !slices.ContainsFunc(r.report.Contenders, func(i ContenderInfo) bool { return i.Name == c.def.name }) {
			r.report.Contenders = append(r.report.Contenders, ContenderInfo{Name: c.def.name, Note: notes[k]})
		}
		res := handoffResult(c.def.name, c.setting, notes[k], procs, g, figs[k], errs[k], unlockErrs[k])
		res.FirstError = firstErr[k]
		r.report.Handoff = append(r.report.Handoff, res)
		ov.add(c.def.name, res.Overlaps, "handoff "+c.def.name+" "+c.setting)
	}
	return ov.err()
}
