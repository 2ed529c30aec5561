package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/volleylock/volley/redlock"
)

// Semaphore mode: counting semaphores of semaphorePermits permits, in two
// parts.
//
// Latency: one goroutine, uncontended, interleaved round by round as in
// the latency mode (LatencyRounds x LatencyDuration): Volley's mutex
// Lock+Unlock, and Acquire+Release of a Volley Semaphore, both on one
// redlock.Client and each on a ring of semaphoreRing names, so that no
// operation waits for a previous one's leftovers. Every name of both rings
// is used once before the rounds (the Semaphores are made then). The
// semaphore's p50 is also given as a multiple of the mutex's, from the
// same run.
//
// Contended: one semaphore, contended by HandoffG goroutines in each of
// HandoffProcs child processes, the handoff mode's machinery
// (handoff_child.go, handoff_workers.go) with Setup.Permits set: each
// goroutine acquires a permit, holds it for SemaphoreHold, notes the
// release and releases it, again, for Duration, and the parent merges
// every process's acquisitions (handoffFigures with the permits):
// acquisitions/s of all processes, waits (Acquire call began -> acquired),
// the most holders at once, and the acquisitions that made more holders
// than permits. The contenders are the mode's own (semaphoreContenders;
// -contenders does not choose among them): Volley's Semaphore; the naive
// majority-quorum counter (contender_majority.go), which can admit more than P
// holders (shown, not a failure of the mode); and the npm package
// redis-semaphore's RedlockSemaphore in node children of its own, where
// node is installed (semaphore_node.go). More than P holders of a
// contender that claims P fails the mode with ErrOverAdmitted.

const (
	modeSemaphore    = "semaphore"
	semaphorePermits = 4
	// semaphoreRing is the names per ring of the latency part: at about
	// 3,000 operations/s, a name comes back a third of a second later.
	semaphoreRing = 1024
)

// ErrOverAdmitted is returned when a semaphore that claims at most P
// holders had more at once.
var ErrOverAdmitted = errors.New("lockbench: semaphore admitted more holders than permits")

// semaphoreContender is one contender of the contended part.
type semaphoreContender struct {
	name string
	// new builds it in lockbench's own children, from a Setup with
	// Permits set (its key names a semaphore; see contender_semaphore.go).
	new func(Setup) (Contender, error)
	// command, when new is nil, returns the command line of children of
	// its own that speak the same protocol, or why it cannot run: it is
	// then not measured, and the mode goes on.
	command func(ctx context.Context, p *progress) ([]string, error)
	// bounded: it claims at most Permits holders at once; more fails the
	// mode.
	bounded bool
}

func (c semaphoreContender) Name() string { return c.name }

// argv returns the command line of its children.
func (c semaphoreContender) argv(ctx context.Context, p *progress) ([]string, error) {
	if c.command != nil {
		return c.command(ctx, p)
	}
	return lockbenchChild()
}

// semaphoreContenders are the contended part's contenders.
var semaphoreContenders = []semaphoreContender{
	{name: nameVolleySemaphore, new: newVolleySemaphore, bounded: true},
	{name: nameMajorityCounter, new: newMajorityCounter},
	{name: nameRedisSemaphore, command: redisSemaphoreChild},
}

// semaphoreDefs are the contenders lockbench's children build for the
// semaphore mode.
func semaphoreDefs() []contenderDef {
	var defs []contenderDef
	for _, c := range semaphoreContenders {
		if c.new != nil {
			defs = append(defs, contenderDef{name: c.name, new: c.new})
		}
	}
	return defs
}

// SemaphoreLatency is one operation of the latency part: medians over
// rounds.
type SemaphoreLatency struct {
	Name    string    `json:"name"`
	Op      string    `json:"op"`
	Permits int       `json:"permits,omitempty"`
	Lat     Latency   `json:"latency"`
	Rounds  []Latency `json:"rounds"`
	Errors  int       `json:"errors"`
	// P50XMutex is this p50 over the mutex's Lock+Unlock p50 of the same
	// run (semaphore rows only).
	P50XMutex float64 `json:"p50_x_mutex,omitempty"`
}

// SemaphoreResult is one contender of the contended part, over the
// rounds: acquisitions/s and the wait's figures are medians over the
// rounds that had samples, the longest wait and the most holders the
// worst round's, the rest totals.
type SemaphoreResult struct {
	Name          string    `json:"name"`
	Note          string    `json:"note,omitempty"`
	Permits       int       `json:"permits"`
	Procs         int       `json:"procs"`
	Goroutines    int       `json:"goroutines_per_proc"`
	AcqPerSec     float64   `json:"acquisitions_per_sec"`
	Rounds        []float64 `json:"rounds"`
	Wait          Latency   `json:"wait"` // Acquire call began -> acquired
	LongestWaitMs float64   `json:"longest_wait_ms"`
	MostHolders   int       `json:"most_holders"`
	// OverPermits counts the acquisitions that made more than Permits
	// holders at once.
	OverPermits  int    `json:"over_permits"`
	Errors       int    `json:"errors"` // Acquire calls that failed before the end of the run
	UnlockErrors int    `json:"unlock_errors,omitempty"`
	FirstError   string `json:"first_error,omitempty"`
}

func (r *Runner) semaphore(ctx context.Context) error {
	if err := r.semaphoreLatency(ctx); err != nil {
		return err
	}
	if err := r.semaphoreAttempts(ctx); err != nil {
		return err
	}
	return r.semaphoreContended(ctx)
}

// SemaphoreAttempts is how many attempts Volley's Acquire and TryAcquire
// made per call with Held of the Permits taken by other holders
// (attemptsCalls calls each, one goroutine, from Hooks.Call's CallEnd).
type SemaphoreAttempts struct {
	Permits      int     `json:"permits"`
	Held         int     `json:"held"`
	Calls        int     `json:"calls"`
	MeanAttempts float64 `json:"mean_attempts"`
	MaxAttempts  int     `json:"max_attempts"`
	// TryRefused counts the TryAcquire calls that failed although a permit
	// was free (Held < Permits): it should be zero.
	TryRefused int `json:"try_refused"`
}

// attemptsCalls is the calls of each row of the attempts part.
const attemptsCalls = 300

// semaphoreAttempts is the attempts part: with 0 to Permits-1 permits
// held, Acquire+Release and TryAcquire+Release attemptsCalls times each,
// counting the attempts of each call (a failed attempt learns which
// permits are free and asks next for one free on a quorum).
func (r *Runner) semaphoreAttempts(ctx context.Context) error {
	var attempts atomic.Int64
	hooks := redlock.Hooks{Call: func(ctx context.Context, op redlock.Op, _ string) (context.Context, func(redlock.CallEnd)) {
		return ctx, func(e redlock.CallEnd) {
			if op == redlock.OpLock {
				attempts.Store(int64(e.Attempts))
			}
		}
	}}
	c, err := newVolleyWith(r.opts.Setup, hooks)
	if err != nil {
		return fmt.Errorf("lockbench: semaphore: %w", err)
	}
	defer c.Close()
	cl := c.(*volley).c
	ttl := r.opts.Setup.TTL
	r.progress.phase("semaphore attempts: %d calls x %d occupancies", attemptsCalls, semaphorePermits)
	for held := range semaphorePermits {
		s, err := cl.Semaphore("lb:"+r.run+":sem-attempts:"+strconv.Itoa(held), semaphorePermits)
		if err != nil {
			return err
		}
		var holders []redlock.Permit
		for range held {
			p, err := s.Acquire(ctx, ttl)
			if err != nil {
				return fmt.Errorf("lockbench: semaphore attempts: %w", err)
			}
			holders = append(holders, p)
		}
		row := SemaphoreAttempts{Permits: semaphorePermits, Held: held, Calls: attemptsCalls}
		total := 0
		for range attemptsCalls {
			for _, try := range []bool{false, true} {
				var p redlock.Permit
				if try {
					p, err = s.TryAcquire(ctx, ttl)
				} else {
					p, err = s.Acquire(ctx, ttl)
				}
				if err != nil {
					if try && errors.Is(err, redlock.ErrNotAcquired) {
						row.TryRefused++
						continue
					}
					return fmt.Errorf("lockbench: semaphore attempts: %w", err)
				}
				if !try {
					n := int(attempts.Load())
					total += n
					row.MaxAttempts = max(row.MaxAttempts, n)
				}
				if err := p.Release(ctx); err != nil {
					return fmt.Errorf("lockbench: semaphore attempts: %w", err)
				}
			}
		}
		row.MeanAttempts = float64(total) / attemptsCalls
		for _, p := range holders {
			p.Release(ctx)
		}
		r.report.SemaphoreAttempts = append(r.report.SemaphoreAttempts, row)
	}
	return nil
}

// semaphoreOp is one operation of the latency part: LockUnlock of c.
type semaphoreOp struct {
	Contender
	op      string
	permits int // 0: a mutex
}

// semaphoreLatency is the latency part.
func (r *Runner) semaphoreLatency(ctx context.Context) error {
	ttl := r.opts.Setup.TTL
	c, err := newVolley(r.opts.Setup)
	if err != nil {
		return fmt.Errorf("lockbench: semaphore: %w", err)
	}
	v := c.(*volley)
	defer v.Close()
	ops := []semaphoreOp{
		{v, "Lock+Unlock", 0},
		{semaphoresOf(v, semaphorePermits), "Acquire+Release", semaphorePermits},
	}
	r.progress.phase("semaphore latency: %d rounds x %d operations x %v", r.opts.LatencyRounds, len(ops), r.opts.LatencyDuration)
	keys := map[string][]string{}
	for _, o := range ops {
		keys[o.Name()] = r.keyRing(o, modeSemaphore, 0, semaphoreRing)
		r.progress.step("semaphore latency: %s once on each of %d names", o.Name(), semaphoreRing)
		warm(ctx, o, keys[o.Name()], ttl)
	}
	saved := r.opts.Rounds
	r.opts.Rounds = r.opts.LatencyRounds
	defer func() { r.opts.Rounds = saved }()
	rounds := map[string][]Latency{}
	errs := map[string]int{}
	err = eachRound(ctx, r, "semaphore latency", ops, func(_ int, o semaphoreOp) error {
		s, e := latencySamples(ctx, o, keys[o.Name()], ttl, r.opts.LatencyDuration, nil)
		rounds[o.Name()] = append(rounds[o.Name()], summarize(s))
		errs[o.Name()] += e
		return nil
	})
	if err != nil {
		return err
	}
	mutex := medianLatency(rounds[v.Name()])
	for _, o := range ops {
		res := SemaphoreLatency{
			Name: o.Name(), Op: o.op, Permits: o.permits,
			Lat: medianLatency(rounds[o.Name()]), Rounds: rounds[o.Name()], Errors: errs[o.Name()],
		}
		if o.permits > 0 && mutex.P50 > 0 {
			res.P50XMutex = res.Lat.P50 / mutex.P50
		}
		r.report.SemaphoreLatency = append(r.report.SemaphoreLatency, res)
	}
	return nil
}

// semaphoreRunner is a contender of the contended part with its children.
type semaphoreRunner struct {
	semaphoreContender
	ws *handoffWorkers
}

// semaphoreContended is the contended part.
func (r *Runner) semaphoreContended(ctx context.Context) error {
	procs, g := r.opts.HandoffProcs, r.opts.HandoffG
	// Children by command line: lockbench's serve every Go contender.
	pools := map[string]*handoffWorkers{}
	defer func() {
		for _, ws := range pools {
			ws.kill() // a no-op after a clean close
		}
	}()
	var cs []semaphoreRunner
	for _, c := range r.opts.SemaphoreContenders {
		ws, err := r.semaphoreChildren(ctx, c, pools, procs)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && c.command == nil:
			return fmt.Errorf("lockbench: semaphore: %w", err)
		case err != nil:
			r.skip(c.name, "not measured: "+err.Error())
			continue
		}
		cs = append(cs, semaphoreRunner{c, ws})
	}
	r.progress.phase("semaphore P=%d: %d processes x %d goroutines, hold %v: %d rounds x %d contenders x %v",
		semaphorePermits, procs, g, r.opts.SemaphoreHold, r.opts.Rounds, len(cs), r.opts.Duration)
	figs := map[string][]handoffFigure{}
	notes := map[string]string{}
	errs := map[string]int{}
	unlockErrs := map[string]int{}
	firstErr := map[string]string{}
	out := map[string]bool{} // not measured from then on
	err := eachRound(ctx, r, fmt.Sprintf("semaphore P=%d", semaphorePermits), cs, func(round int, c semaphoreRunner) error {
		if out[c.name] {
			return nil
		}
		s := r.opts.Setup
		s.Permits = semaphorePermits
		job := handoffJob{
			Contender: c.name,
			Setup:     s,
			Key:       "lb:" + r.run + ":" + c.name + ":semaphore:" + strconv.Itoa(round),
			Probe:     "lb:" + r.run + ":probe:" + c.name + ":semaphore:",
			G:         g,
			Hold:      r.opts.SemaphoreHold,
			Duration:  r.opts.Duration,
		}
		res, err := c.ws.run(job, handoffStartDelay, nil)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && c.command == nil:
			return err
		case err != nil:
			// Children of its own failed: it is not measured, the mode
			// goes on.
			c.ws.kill()
			out[c.name] = true
			r.skip(c.name, "not measured: "+err.Error())
			return nil
		case res.setupErr != "":
			out[c.name] = true
			r.skip(c.name, "not measured: "+res.setupErr)
			return nil
		}
		figs[c.name] = append(figs[c.name], handoffFigures(res.events, res.start, res.end, semaphorePermits))
		notes[c.name] = res.note
		errs[c.name] += res.lockErrors
		unlockErrs[c.name] += res.unlockErrors
		if firstErr[c.name] == "" {
			firstErr[c.name] = res.firstError
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := c.ws.close(); err != nil {
			if c.command == nil {
				return fmt.Errorf("lockbench: semaphore: %w", err)
			}
			r.progress.note("%s: its children ended badly: %v", c.name, err)
		}
	}
	var bad []string
	for _, c := range cs {
		f := figs[c.name]
		if len(f) == 0 {
			continue
		}
		h := handoffResult(c.name, "", notes[c.name], procs, g, f, errs[c.name], unlockErrs[c.name])
		res := SemaphoreResult{
			Name: c.name, Note: h.Note, Permits: semaphorePermits, Procs: procs, Goroutines: g,
			AcqPerSec: h.AcqPerSec, Rounds: h.Rounds, Wait: h.Wait, LongestWaitMs: h.LongestWaitMs,
			OverPermits: h.Overlaps, Errors: h.Errors, UnlockErrors: h.UnlockErrors, FirstError: firstErr[c.name],
		}
		for _, x := range f {
			res.MostHolders = max(res.MostHolders, x.MostHolders)
		}
		r.report.Semaphore = append(r.report.Semaphore, res)
		if c.bounded && res.OverPermits > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d acquisitions over %d holders, %d at most", c.name, res.OverPermits, semaphorePermits, res.MostHolders))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w (%v)", ErrOverAdmitted, bad)
	}
	return nil
}

// semaphoreChildren returns c's children from pools (by command line),
// starting them the first time.
func (r *Runner) semaphoreChildren(ctx context.Context, c semaphoreContender, pools map[string]*handoffWorkers, procs int) (*handoffWorkers, error) {
	argv, err := c.argv(ctx, r.progress)
	if err != nil {
		return nil, err
	}
	k := strings.Join(argv, "\x00")
	if pools[k] == nil {
		ws, err := startHandoffWorkers(ctx, modeSemaphore+" "+filepath.Base(argv[0]), argv, procs)
		if err != nil {
			return nil, err
		}
		pools[k] = ws
	}
	return pools[k], nil
}

// semaphoreLatencyOf returns the latency part's row of name, or nil.
func (r *Report) semaphoreLatencyOf(name string) *SemaphoreLatency {
	for i := range r.SemaphoreLatency {
		if r.SemaphoreLatency[i].Name == name {
			return &r.SemaphoreLatency[i]
		}
	}
	return nil
}
