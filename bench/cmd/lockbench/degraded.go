package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Degraded mode: availability while one master at a time is slow but
// alive. Every contender runs, in turn, the same contended workload through
// the same schedule of slow masters, each on fresh fault proxies so that no
// backlog carries over from one contender to the next:
//
//   - degradedClients independent clients x degradedPerClient goroutines
//     contend for one key, TTL 500ms, per-master timeout 100ms, 3 tries per
//     Lock call, retry pause uniform in [19ms, 38ms] (the user's loop calls
//     Lock again after a failure);
//   - a healthy warm-up, then one window per master, in turn: its replies
//     delayed by 20-200ms (latency windows) or dripped at 1-5ms per byte
//     (drip windows: a master slower than its request rate, whose backlog
//     outlives the window), then a healthy tail.
//
// It reports acquisitions/s before, during and after the faults, the
// longest time with no acquisition from the first fault on, and the time
// from the last fault's end to the next acquisition.
const (
	degradedClients       = 8
	degradedPerClient     = 2
	degradedTTL           = 500 * time.Millisecond
	degradedMasterTimeout = 100 * time.Millisecond
	degradedTries         = 3
	degradedRetryDelay    = 38 * time.Millisecond
)

// SlowWindow is one fault of the degraded schedule.
type SlowWindow struct {
	Master int    `json:"master"` // index into the masters
	Kind   string `json:"kind"`   // "latency" or "drip"
	// Delay is the delay added to each reply (latency) or to each byte of
	// the replies (drip).
	Delay   time.Duration `json:"delay_ns"`
	StartMs float64       `json:"start_ms"` // from the start of the run
	EndMs   float64       `json:"end_ms"`
}

func (w SlowWindow) String() string {
	if w.Kind == "drip" {
		return "m" + strconv.Itoa(w.Master) + " drip " + w.Delay.String() + "/B"
	}
	return "m" + strconv.Itoa(w.Master) + " +" + w.Delay.String()
}

// degradedSchedule returns one window per master, in turn, alternating
// latency and drip, magnitudes drawn from seed.
func degradedSchedule(n int, warm, window time.Duration, seed uint64) []SlowWindow {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	out := make([]SlowWindow, n)
	for i := range out {
		w := SlowWindow{Master: i, Kind: "latency", StartMs: ms(warm + time.Duration(i)*window)}
		w.EndMs = w.StartMs + ms(window)
		if i%2 == 0 {
			w.Delay = (20 + time.Duration(rng.IntN(181))) * time.Millisecond
		} else {
			w.Kind = "drip"
			w.Delay = (1 + time.Duration(rng.IntN(5))) * time.Millisecond
		}
		out[i] = w
	}
	return out
}

// DegradedResult is one contender's figures, over the rounds: acquisitions/s
// are medians, the longest gap and the recovery the worst round's.
type DegradedResult struct {
	Name           string  `json:"name"`
	AcqPerSecWarm  float64 `json:"acquisitions_per_sec_healthy"`
	AcqPerSecFault float64 `json:"acquisitions_per_sec_faults"`
	AcqPerSecAfter float64 `json:"acquisitions_per_sec_after"`
	LongestGapMs   float64 `json:"longest_gap_ms"`
	// RecoveryMs is from the last fault's end to the next acquisition; the
	// whole tail when none came (Recovered false).
	RecoveryMs float64          `json:"recovery_ms"`
	Recovered  bool             `json:"recovered"`
	Rounds     []degradedFigure `json:"rounds"`
	Errors     int              `json:"errors"`
	Violations int              `json:"violations"`
}

// degradedFigure is one round of one contender.
type degradedFigure struct {
	Warm, Fault, After float64   // acquisitions/s
	PerWindow          []float64 // acquisitions/s in each window of the schedule
	GapMs, RecoveryMs  float64
	Recovered          bool
}

// degradedTiming returns the warm-up and tail around windows of length w.
func degradedTiming(w time.Duration) (warm, tail time.Duration) {
	return w / 2, w
}

func (r *Runner) degraded(ctx context.Context) error {
	if r.opts.StartProxy == nil {
		return errors.New("lockbench: degraded mode needs a proxy")
	}
	window := r.opts.DegradedWindow
	warm, tail := degradedTiming(window)
	n := len(r.masters.Addrs)
	sched := degradedSchedule(n, warm, window, r.opts.Seed)
	total := warm + time.Duration(n)*window + tail
	r.report.DegradedSchedule = sched
	defs := r.defsFor(modeDegraded)
	r.progress.phase("degraded: %d rounds x %d contenders x %v", r.opts.DegradedRounds, len(defs), total)
	rounds := map[string][]degradedFigure{}
	errs := map[string]int{}
	viol := map[string]int{}
	saved := r.opts.Rounds
	r.opts.Rounds = r.opts.DegradedRounds
	defer func() { r.opts.Rounds = saved }()
	err := eachRound(ctx, r, "degraded", defs, func(round int, d contenderDef) error {
		res, err := r.degradedRun(ctx, d, sched, round, total)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.skip(d.name, "degraded: "+err.Error())
			return nil
		}
		if !slices.ContainsFunc(r.report.Contenders, func(i ContenderInfo) bool { return i.Name == d.name }) {
			r.report.Contenders = append(r.report.Contenders, ContenderInfo{Name: d.name, Note: res.note})
		}
		fig := degradedFigures(res.times, sched, total)
		rounds[d.name] = append(rounds[d.name], fig)
		errs[d.name] += res.errs
		viol[d.name] += res.violations
		return nil
	})
	if err != nil {
		return err
	}
	ov := overlaps{report: r.report}
	for _, d := range defs {
		figs := rounds[d.name]
		if len(figs) == 0 {
			continue
		}
		res := DegradedResult{Name: d.name, Rounds: figs, Errors: errs[d.name], Violations: viol[d.name], Recovered: true}
		var warmS, faultS, afterS []float64
		for _, f := range figs {
			warmS, faultS, afterS = append(warmS, f.Warm), append(faultS, f.Fault), append(afterS, f.After)
			res.LongestGapMs = max(res.LongestGapMs, f.GapMs)
			res.RecoveryMs = max(res.RecoveryMs, f.RecoveryMs)
			res.Recovered = res.Recovered && f.Recovered
		}
		res.AcqPerSecWarm, res.AcqPerSecFault, res.AcqPerSecAfter = median(warmS), median(faultS), median(afterS)
		r.report.Degraded = append(r.report.Degraded, res)
		ov.add(d.name, res.Violations, d.name+" degraded")
	}
	return ov.err()
}

// degradedRun runs one contender through the schedule on fresh proxies.
func (r *Runner) degradedRun(ctx context.Context, d contenderDef, sched []SlowWindow, round int, total time.Duration) (degradedRunResult, error) {
	proxies, closeProxies, err := r.startProxies()
	defer closeProxies()
	if err != nil {
		return degradedRunResult{}, err
	}
	s := r.opts.Setup
	s.Addrs = proxyAddrs(proxies)
	s.TTL, s.MasterTimeout, s.Tries, s.RetryDelay = degradedTTL, degradedMasterTimeout, degradedTries, degradedRetryDelay
	s.PoolSize = degradedPerClient * 2
	var holders []Holder
	note := ""
	for i := range degradedClients {
		c, err := d.new(s)
		if err != nil {
			return degradedRunResult{}, err
		}
		defer c.Close()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = c.LockUnlock(pctx, "lb:"+r.run+":probe:"+d.name+":"+strconv.Itoa(i), s.TTL)
		cancel()
		if err != nil {
			return degradedRunResult{}, fmt.Errorf("first lock failed: %w", err)
		}
		for range degradedPerClient {
			holders = append(holders, c.NewHolder())
		}
		note = c.Note()
	}
	key := "lb:" + r.run + ":" + d.name + ":degraded:" + strconv.Itoa(round)
	t0 := time.Now()
	nctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { runSchedule(nctx, proxies, sched, t0) })
	res := runContended(ctx, holders, key, s.TTL, 0, t0, total)
	stop()
	wg.Wait()
	return degradedRunResult{res, note}, nil
}

// degradedRunResult is one contender's run and how it was set up.
type degradedRunResult struct {
	contendedResult
	note string
}

// runSchedule applies each window to its master's proxy at its time from
// t0 and clears it at its end, until the schedule or ctx ends.
func runSchedule(ctx context.Context, proxies []faultProxy, sched []SlowWindow, t0 time.Time) {
	defer func() {
		for _, p := range proxies {
			p.Reset()
		}
	}()
	t := time.NewTimer(0)
	defer t.Stop()
	sleepUntil := func(offMs float64) bool {
		t.Reset(time.Until(t0.Add(dur(offMs))))
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	<-t.C
	for _, w := range sched {
		if !sleepUntil(w.StartMs) {
			return
		}
		p := proxies[w.Master]
		if w.Kind == "drip" {
			p.Slow(w.Delay)
		} else {
			p.SetLatency(0, w.Delay)
		}
		if !sleepUntil(w.EndMs) {
			return
		}
		p.Reset()
	}
}

// degradedFigures computes one round's figures from the sorted
// acquisition times.
func degradedFigures(times []time.Duration, sched []SlowWindow, total time.Duration) degradedFigure {
	first, last := dur(sched[0].StartMs), dur(sched[len(sched)-1].EndMs)
	f := degradedFigure{PerWindow: make([]float64, len(sched))}
	var nWarm, nFault, nAfter int
	prev := first
	recovery := time.Duration(-1)
	for _, at := range times {
		switch {
		case at < first:
			nWarm++
			continue
		case at < last:
			nFault++
			for i, w := range sched {
				if at >= dur(w.StartMs) && at < dur(w.EndMs) {
					f.PerWindow[i] += 1 / dur(w.EndMs-w.StartMs).Seconds()
				}
			}
		default:
			nAfter++
			if recovery < 0 {
				recovery = at - last
			}
		}
		f.GapMs = max(f.GapMs, ms(at-prev))
		prev = at
	}
	f.GapMs = max(f.GapMs, ms(total-prev))
	f.Recovered = recovery >= 0
	if !f.Recovered {
		recovery = total - last
	}
	f.RecoveryMs = ms(recovery)
	f.Warm = float64(nWarm) / first.Seconds()
	f.Fault = float64(nFault) / (last - first).Seconds()
	f.After = float64(nAfter) / (total - last).Seconds()
	return f
}
