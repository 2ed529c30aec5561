package main

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Modes, in the order they run.
const (
	modeLatency    = "latency"
	modeThroughput = "throughput"
	modeContended  = "contended"
	modeAllocs     = "allocs"
	modeSkew       = "skew"
	modeDegraded   = "degraded"
	modeAdapters   = "adapters"
	modeMulti      = "multi"
	modeRenewal    = "renewal"
	modeElection   = "election"
	modeHandoff    = "handoff"
)

var allModes = []string{modeLatency, modeThroughput, modeContended, modeAllocs, modeSkew, modeDegraded, modeAdapters, modeMulti, modeRenewal, modeHandoff, modeFleet, modeSemaphore, modeCluster, modeNative, modeElection}

// Options configure one run of the harness.
type Options struct {
	Modes      []string
	Duration   time.Duration // per measurement (one contender, one round)
	Rounds     int           // interleaved rounds; figures are medians over rounds
	Goroutines []int         // throughput mode
	ContendedG int           // contended mode
	Hold       time.Duration // contended and handoff modes: how long a holder keeps the lock
	Setup      Setup         // Addrs is filled by the Runner
	Contenders []contenderDef

	// DegradedWindow is how long each master stays slow in degraded mode,
	// DegradedRounds how many rounds that mode runs, Seed what draws its
	// schedule.
	DegradedWindow time.Duration
	DegradedRounds int
	Seed           uint64

	// LatencyRounds and LatencyDuration are the latency mode's rounds and
	// measurement length (default Rounds and Duration): its p99 needs more
	// samples than a throughput figure does.
	LatencyRounds   int
	LatencyDuration time.Duration

	// RenewalDuration is how long the renewal mode holds each lock count
	// of RenewalLocks [1000, 10000].
	RenewalDuration time.Duration
	RenewalLocks    []int
	RenewalTTL      time.Duration // [10s]; every contender renews at about a third

	// ElectionTTL [2s] is the election mode's lease, ElectionRounds [5]
	// its rounds (each measures both elections after a resignation and
	// after a crash).
	ElectionTTL    time.Duration
	ElectionRounds int

	// HandoffProcs [4] child processes of HandoffG [4] goroutines each
	// contend for one key in the handoff mode.
	HandoffProcs int
	HandoffG     int

	// FleetProcs [16, 64] are the fleet mode's process counts, FleetG [1]
	// the goroutines of each process, FleetHolds [0, 1ms] how long a
	// holder keeps the lock, FleetRounds [Rounds] and FleetDuration
	// [Duration] its rounds and window.
	FleetProcs    []int
	FleetG        int
	FleetHolds    []time.Duration
	FleetRounds   int
	FleetDuration time.Duration
	// FleetStall, when its For is set, pauses the first Masters masters
	// for For at the middle of every fleet window (-fleet-stall).
	FleetStall fleetStall

	// SemaphoreHold [5ms] is how long a holder keeps its permit in the
	// semaphore mode, whose child processes are the handoff mode's;
	// SemaphoreContenders [semaphoreContenders] are its contenders.
	SemaphoreHold       time.Duration
	SemaphoreContenders []semaphoreContender

	// ClusterPrimaries [3, 6] are the cluster mode's sizes: the first for
	// every contender, the others for Volley alone.
	ClusterPrimaries []int

	// ClusterRecoveryBound [30s] bounds the cluster mode's wait for the
	// first lock after a primary's death.
	ClusterRecoveryBound time.Duration

	// StartProxy starts a fault proxy in front of a master (skew and
	// degraded modes).
	StartProxy func(target string) (faultProxy, error)
}

// faultProxy is what the skew and degraded modes need from
// internal/faultproxy.
type faultProxy interface {
	Addr() string
	SetLatency(toServer, toClient time.Duration)
	Slow(perByte time.Duration)
	Reset()
	Close() error
}

// ErrOverlap is returned when the mutual-exclusion check saw two holders of
// one lock at once.
var ErrOverlap = errors.New("lockbench: mutual exclusion violated: two holders overlapped")

// Runner runs the modes over a set of masters.
type Runner struct {
	opts     Options
	masters  Masters
	progress *progress
	run      string // unique per run: a key prefix
	report   *Report
}

// NewRunner returns a Runner over masters, filling opts' defaults.
func NewRunner(opts Options, masters Masters, p *progress) *Runner {
	if opts.Rounds <= 0 {
		opts.Rounds = 1
	}
	if opts.ContendedG <= 0 {
		opts.ContendedG = 8
	}
	if opts.DegradedWindow <= 0 {
		opts.DegradedWindow = 2 * time.Second
	}
	if opts.DegradedRounds <= 0 {
		opts.DegradedRounds = opts.Rounds
	}
	if opts.LatencyRounds <= 0 {
		opts.LatencyRounds = opts.Rounds
	}
	if opts.LatencyDuration <= 0 {
		opts.LatencyDuration = opts.Duration
	}
	if opts.RenewalDuration <= 0 {
		opts.RenewalDuration = 30 * time.Second
	}
	if opts.RenewalTTL <= 0 {
		opts.RenewalTTL = 10 * time.Second
	}
	if len(opts.RenewalLocks) == 0 {
		opts.RenewalLocks = []int{1000, 10000}
	}
	if opts.HandoffProcs <= 0 {
		opts.HandoffProcs = 4
	}
	if opts.HandoffG <= 0 {
		opts.HandoffG = 4
	}
	if len(opts.FleetProcs) == 0 {
		opts.FleetProcs = []int{16, 64}
	}
	if opts.FleetG <= 0 {
		opts.FleetG = 1
	}
	if len(opts.FleetHolds) == 0 {
		opts.FleetHolds = []time.Duration{0, time.Millisecond}
	}
	if opts.FleetRounds <= 0 {
		opts.FleetRounds = opts.Rounds
	}
	if opts.FleetDuration <= 0 {
		opts.FleetDuration = opts.Duration
	}
	if opts.SemaphoreHold <= 0 {
		opts.SemaphoreHold = 5 * time.Millisecond
	}
	if opts.SemaphoreContenders == nil {
		opts.SemaphoreContenders = semaphoreContenders
	}
	if len(opts.ClusterPrimaries) == 0 {
		opts.ClusterPrimaries = []int{3, 6}
	}
	if opts.ElectionTTL <= 0 {
		opts.ElectionTTL = 2 * time.Second
	}
	if opts.ElectionRounds <= 0 {
		opts.ElectionRounds = 5
	}
	if opts.ClusterRecoveryBound <= 0 {
		opts.ClusterRecoveryBound = 30 * time.Second
	}
	if p == nil {
		p = newProgress(nil)
	}
	opts.Setup.Addrs = masters.Addrs
	opts.Setup.TLSAddrs, opts.Setup.TLSRoots = masters.TLSAddrs, masters.TLSRoots
	opts.Setup.Fake = masters.Kind == kindFake
	return &Runner{
		opts:     opts,
		masters:  masters,
		progress: p,
		run:      strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
	}
}

// Run runs every mode of the Options and returns the report (partial when
// ctx ended or a mode failed, with the error).
func (r *Runner) Run(ctx context.Context) (*Report, error) {
	rep := newReport(r.opts, r.masters)
	r.report = rep
	want := map[string]bool{}
	for _, m := range r.opts.Modes {
		want[m] = true
	}
	r.noteExcluded()
	steps := []struct {
		mode string
		fn   func(context.Context, []Contender) error
	}{
		{modeLatency, r.latency},
		{modeThroughput, r.throughput},
		{modeContended, r.contended},
		{modeAllocs, r.allocs},
	}
	// One connection of each contender serves these modes: every contender
	// that takes part in one of those wanted.
	var defs []contenderDef
	for _, d := range r.opts.Contenders {
		for _, s := range steps {
			if want[s.mode] && d.takesPart(s.mode) {
				defs = append(defs, d)
				break
			}
		}
	}
	var cs []Contender
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	if len(defs) > 0 {
		r.progress.phase("connecting %d contenders to %d masters", len(defs), len(r.masters.Addrs))
		var err error
		cs, err = r.connect(r.opts.Setup, defs)
		if err != nil {
			return rep, err
		}
		for _, c := range cs {
			rep.Contenders = append(rep.Contenders, ContenderInfo{Name: c.Name(), Note: c.Note()})
		}
	}
	for _, s := range steps {
		if !want[s.mode] {
			continue
		}
		if err := s.fn(ctx, r.taking(s.mode, cs)); err != nil {
			return rep, err
		}
	}
	if want[modeSkew] {
		if err := r.skew(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeDegraded] {
		if err := r.degraded(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeAdapters] && r.masters.Kind != kindFake {
		if err := r.adapters(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeMulti] {
		if err := r.multi(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeRenewal] {
		if err := r.renewal(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeHandoff] {
		if err := r.handoff(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeFleet] {
		if err := r.fleet(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeSemaphore] {
		if err := r.semaphore(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeCluster] {
		if err := r.cluster(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeNative] {
		if err := r.native(ctx); err != nil {
			return rep, err
		}
	}
	if want[modeElection] {
		if err := r.election(ctx); err != nil {
			return rep, err
		}
	}
	rep.Targets = evaluateTargets(rep)
	return rep, nil
}

// noteExcluded notes as skipped, once per contender, the modes of the run
// it takes no part in (but the election mode, which runs elections of its
// own, not the contenders).
func (r *Runner) noteExcluded() {
	for _, d := range r.opts.Contenders {
		var out []string
		for _, m := range r.opts.Modes {
			if m != modeElection && !d.takesPart(m) {
				out = append(out, m)
			}
		}
		if len(out) > 0 {
			r.skip(d.name, "not in the "+strings.Join(out, ", ")+" modes: takes part only in "+strings.Join(d.modes, ", "))
		}
	}
}

// defsFor returns the contenders that take part in mode.
func (r *Runner) defsFor(mode string) []contenderDef {
	return slices.DeleteFunc(slices.Clone(r.opts.Contenders), func(d contenderDef) bool { return !d.takesPart(mode) })
}

// taking returns the connected contenders that take part in mode.
func (r *Runner) taking(mode string, cs []Contender) []Contender {
	return slices.DeleteFunc(slices.Clone(cs), func(c Contender) bool {
		i := slices.IndexFunc(r.opts.Contenders, func(d contenderDef) bool { return d.name == c.Name() })
		return i >= 0 && !r.opts.Contenders[i].takesPart(mode)
	})
}

// connect builds every contender of defs; one that cannot be set up is
// reported and skipped. It fails only when defs has some and none could
// lock.
func (r *Runner) connect(s Setup, defs []contenderDef) ([]Contender, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	var cs []Contender
	for _, d := range defs {
		c, err := d.new(s)
		if err != nil {
			r.skip(d.name, err.Error())
			continue
		}
		// A first operation proves it works (and loads scripts, dials pools).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = c.LockUnlock(ctx, "lb:"+r.run+":probe:"+d.name, s.TTL)
		cancel()
		if err != nil {
			c.Close()
			r.skip(d.name, "first lock failed: "+err.Error())
			continue
		}
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return nil, errors.New("lockbench: no contender could lock")
	}
	return cs, nil
}

// skip records a contender that cannot run, once, on one line.
func (r *Runner) skip(name, why string) {
	why = strings.Join(strings.Fields(why), " ")
	if len(why) > 160 {
		why = why[:160] + "..."
	}
	line := name + ": " + why
	if !slices.Contains(r.report.Skipped, line) {
		r.report.Skipped = append(r.report.Skipped, line)
		r.progress.note("skipped %s", line)
	}
}

// order returns the contenders of round i, rotated so that no contender
// always runs right after the same neighbour.
func order[T any](cs []T, round int) []T {
	n := len(cs)
	out := make([]T, n)
	for i := range cs {
		out[i] = cs[(i+round)%n]
	}
	return out
}

// named is a contender or a contender's definition.
type named interface{ Name() string }

// eachRound is the loop every mode shares: Rounds rounds, each over every
// contender in the round's rotated order, with a progress line, until ctx
// ends or fn fails.
func eachRound[T named](ctx context.Context, r *Runner, label string, cs []T, fn func(round int, c T) error) error {
	for round := range r.opts.Rounds {
		for _, c := range order(cs, round) {
			if err := ctx.Err(); err != nil {
				return err
			}
			r.progress.step("%s round %d/%d: %s", label, round+1, r.opts.Rounds, c.Name())
			if err := fn(round, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyRing returns size keys for goroutine g of contender c in mode m:
// keyPrefix and a number, from 0.
func (r *Runner) keyRing(c Contender, m string, g, size int) []string {
	keys := make([]string, size)
	p := r.keyPrefix(c, m, g)
	for i := range keys {
		keys[i] = p + strconv.Itoa(i)
	}
	return keys
}

// keyPrefix is what the keys of keyRing start with.
func (r *Runner) keyPrefix(c Contender, m string, g int) string {
	return "lb:" + r.run + ":" + c.Name() + ":" + m + ":" + strconv.Itoa(g) + ":"
}

// latencySamples runs LockUnlock on fresh keys from one goroutine for d
// and returns every operation's latency and the count of errors. It
// appends to buf.
func latencySamples(ctx context.Context, c Contender, keys []string, ttl, d time.Duration, buf []time.Duration) ([]time.Duration, int) {
	errs := 0
	deadline := time.Now().Add(d)
	for i := 0; ctx.Err() == nil; i++ {
		t0 := time.Now()
		if !t0.Before(deadline) {
			break
		}
		err := c.LockUnlock(ctx, keys[i%len(keys)], ttl)
		el := time.Since(t0)
		if err != nil {
			errs++
			continue
		}
		buf = append(buf, el)
	}
	return buf, errs
}

// latency: one goroutine, Lock+Unlock on a fresh key per operation.
func (r *Runner) latency(ctx context.Context, cs []Contender) error {
	rounds := map[string][]Latency{}
	all := map[string][]time.Duration{}
	errs := map[string]int{}
	keys := map[string][]string{}
	for _, c := range cs {
		keys[c.Name()] = r.keyRing(c, modeLatency, 0, 8192)
	}
	r.progress.phase("latency: %d rounds x %d contenders x %v", r.opts.LatencyRounds, len(cs), r.opts.LatencyDuration)
	saved := r.opts.Rounds
	r.opts.Rounds = r.opts.LatencyRounds
	defer func() { r.opts.Rounds = saved }()
	failed := map[string]bool{} // a selfTimer whose measurement failed: skipped from then on
	err := eachRound(ctx, r, "latency", cs, func(_ int, c Contender) error {
		if failed[c.Name()] {
			return nil
		}
		s, e, err := r.latencyRound(ctx, c, keys[c.Name()])
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.skip(c.Name(), err.Error())
			failed[c.Name()] = true
			return nil
		}
		rounds[c.Name()] = append(rounds[c.Name()], summarize(s))
		all[c.Name()] = append(all[c.Name()], s...)
		errs[c.Name()] += e
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cs {
		n := c.Name()
		if failed[n] {
			continue
		}
		r.report.Latency = append(r.report.Latency, LatencyResult{
			Name: n, Latency: medianLatency(rounds[n]), Rounds: rounds[n],
			Errors: errs[n], CDF: cdfPoints(all[n], 200),
		})
	}
	return nil
}

// latencyRound is one round of the latency mode for c on keys: a few
// operations to warm up, then the measurement's latencies and errors.
// A selfTimer measures itself, on the same keys; for the others it
// calls LockUnlock.
func (r *Runner) latencyRound(ctx context.Context, c Contender, keys []string) ([]time.Duration, int, error) {
	ttl, d := r.opts.Setup.TTL, r.opts.LatencyDuration
	st, ok := c.(selfTimer)
	if !ok {
		warm(ctx, c, keys[:50], ttl)
		s, e := latencySamples(ctx, c, keys, ttl, d, nil)
		return s, e, nil
	}
	prefix := r.keyPrefix(c, modeLatency, 0)
	if _, _, err := st.Samples(ctx, prefix, 50, 50, ttl, d, nil); err != nil {
		return nil, 0, err
	}
	return st.Samples(ctx, prefix, len(keys), 0, ttl, d, nil)
}

// selfTimer is a contender that times its own operations, out of this
// process (floor-c): the latency mode asks it for a whole measurement at
// once, since a round trip to it per operation would be measured too.
type selfTimer interface {
	// Samples runs Lock+Unlock pairs one after another, from one caller,
	// on the keys prefix+"0" to prefix+(keys-1) in turn, each lock for
	// ttl, until ops pairs ran (0: no limit) or d passed (0: no limit; a
	// pair starts only before d passed, as in latencySamples). It appends
	// the latency of every successful pair to buf and returns buf and the
	// count of failed pairs; err when the measurement itself failed.
	Samples(ctx context.Context, prefix string, keys, ops int, ttl, d time.Duration, buf []time.Duration) ([]time.Duration, int, error)
}

// warm runs a few operations outside the measurement.
func warm(ctx context.Context, c Contender, keys []string, ttl time.Duration) {
	for _, k := range keys {
		if ctx.Err() != nil {
			return
		}
		c.LockUnlock(ctx, k, ttl)
	}
}

// throughput: G goroutines, each on its own fresh keys; and, for a
// contender that has one (the floor), its pipelined measurement as a row of
// its own, in the same rounds.
func (r *Runner) throughput(ctx context.Context, cs []Contender) error {
	var cases []throughputCase
	for _, c := range cs {
		cases = append(cases, throughputCase{c: c})
		if p, ok := c.(pipeliner); ok {
			cases = append(cases, throughputCase{c: c, pipe: p})
		}
	}
	for _, g := range r.opts.Goroutines {
		keys := map[string][][]string{}
		for _, c := range cs {
			per := max(64, 8192/g)
			for i := range g {
				keys[c.Name()] = append(keys[c.Name()], r.keyRing(c, modeThroughput+strconv.Itoa(g), i, per))
			}
		}
		r.progress.phase("throughput G=%d: %d rounds x %d contenders x %v", g, r.opts.Rounds, len(cases), r.opts.Duration)
		ops := map[string][]float64{}
		costs := map[string][]OpCost{}
		lats := map[string][]Latency{}
		errs := map[string]int{}
		err := eachRound(ctx, r, "throughput G="+strconv.Itoa(g), cases, func(_ int, tc throughputCase) error {
			if tc.pipe != nil {
				prefix := "lb:" + r.run + ":" + tc.Name() + ":" + modeThroughput + strconv.Itoa(g) + ":"
				mc0 := readMasters(r.opts.Setup.Addrs, false)
				m0 := meterCost()
				n, e, el, err := tc.pipe.Pipelined(ctx, prefix, r.opts.Setup.TTL, r.opts.Duration)
				cost := meterCost().since(m0, n).withMasters(mc0, readMasters(r.opts.Setup.Addrs, false), n)
				if err != nil {
					r.skip(tc.Name(), err.Error())
					return nil
				}
				ops[tc.Name()] = append(ops[tc.Name()], float64(n)/el.Seconds())
				costs[tc.Name()] = append(costs[tc.Name()], cost)
				errs[tc.Name()] += int(e)
				return nil
			}
			c := tc.c
			warm(ctx, c, keys[c.Name()][0][:min(20, len(keys[c.Name()][0]))], r.opts.Setup.TTL)
			mc0 := readMasters(r.opts.Setup.Addrs, false)
			m0 := meterCost()
			n, e, el, lat := parallel(ctx, c, keys[c.Name()], r.opts.Setup.TTL, r.opts.Duration)
			cost := meterCost().since(m0, n).withMasters(mc0, readMasters(r.opts.Setup.Addrs, false), n)
			costs[c.Name()] = append(costs[c.Name()], cost)
			lats[c.Name()] = append(lats[c.Name()], lat)
			ops[c.Name()] = append(ops[c.Name()], float64(n)/el.Seconds())
			errs[c.Name()] += int(e)
			return nil
		})
		if err != nil {
			return err
		}
		for _, tc := range cases {
			n := tc.Name()
			if len(ops[n]) == 0 {
				continue
			}
			res := ThroughputResult{
				Name: n, Goroutines: g, OpsPerSec: median(ops[n]),
				Rounds: ops[n], Errors: errs[n], Cost: medianCost(costs[n]),
			}
			if len(lats[n]) > 0 {
				res.Latency = medianLatency(lats[n])
			}
			r.report.Throughput = append(r.report.Throughput, res)
		}
	}
	for _, tc := range cases {
		measured := slices.ContainsFunc(r.report.Throughput, func(t ThroughputResult) bool { return t.Name == tc.Name() })
		if tc.pipe != nil && measured && !slices.ContainsFunc(r.report.Contenders, func(i ContenderInfo) bool { return i.Name == tc.Name() }) {
			r.report.Contenders = append(r.report.Contenders, ContenderInfo{Name: tc.Name(), Note: tc.pipe.PipelinedNote()})
		}
	}
	return nil
}

// pipeliner is a contender that also measures the masters' capacity: the
// most Lock+Unlock pairs per second they serve with many pairs in flight
// and no per-operation overhead, whatever the goroutine count (the floor's
// floor-pipelined row).
type pipeliner interface {
	// Pipelined runs Lock+Unlock pairs on keys that start with prefix, each
	// lock for ttl, for d, and returns the pairs done, the pairs failed and
	// the time it took; err when it could not start.
	Pipelined(ctx context.Context, prefix string, ttl, d time.Duration) (pairs, failed int64, elapsed time.Duration, err error)
	// PipelinedName is the row's name; PipelinedNote says what it measures.
	PipelinedName() string
	PipelinedNote() string
}

// throughputCase is one row of the throughput mode: a contender's
// goroutines, or (pipe set) its pipelined measurement.
type throughputCase struct {
	c    Contender
	pipe pipeliner
}

func (tc throughputCase) Name() string {
	if tc.pipe != nil {
		return tc.pipe.PipelinedName()
	}
	return tc.c.Name()
}

// parallel runs len(keys) goroutines of LockUnlock for d and returns the
// successful operations, the errors, the elapsed time and the latency of
// the successful operations (each goroutine keeps the first
// samplesPerGoroutine, in buffers made before the clock starts, so that
// the measurement allocates nothing of its own).
func parallel(ctx context.Context, c Contender, keys [][]string, ttl, d time.Duration) (ops, errs int64, elapsed time.Duration, lat Latency) {
	var nOps, nErrs atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	var deadline time.Time
	samples := make([][]time.Duration, len(keys))
	for g := range keys {
		ks := keys[g]
		buf := make([]time.Duration, 0, samplesPerGoroutine)
		wg.Go(func() {
			<-start
			var ok, bad int64
			for i := 0; ctx.Err() == nil; i++ {
				t0 := time.Now()
				if !t0.Before(deadline) {
					break
				}
				if err := c.LockUnlock(ctx, ks[i%len(ks)], ttl); err != nil {
					bad++
					continue
				}
				ok++
				if len(buf) < cap(buf) {
					buf = append(buf, time.Since(t0))
				}
			}
			samples[g] = buf
			nOps.Add(ok)
			nErrs.Add(bad)
		})
	}
	t0 := time.Now()
	deadline = t0.Add(d)
	close(start)
	wg.Wait()
	elapsed = time.Since(t0)
	return nOps.Load(), nErrs.Load(), elapsed, summarize(slices.Concat(samples...))
}

// samplesPerGoroutine bounds the latencies each goroutine of parallel
// keeps: more than one goroutine's share of a round at the rates seen.
const samplesPerGoroutine = 4096

// contended: G goroutines on one key; acquisitions/s, hand-off latency and
// a mutual-exclusion check.
func (r *Runner) contended(ctx context.Context, cs []Contender) error {
	g := r.opts.ContendedG
	r.progress.phase("contended G=%d: %d rounds x %d contenders x %v", g, r.opts.Rounds, len(cs), r.opts.Duration)
	acq := map[string][]float64{}
	handRounds := map[string][]Latency{}
	errs := map[string]int{}
	viol := map[string]int{}
	err := eachRound(ctx, r, "contended G="+strconv.Itoa(g), cs, func(round int, c Contender) error {
		key := "lb:" + r.run + ":" + c.Name() + ":contended:" + strconv.Itoa(round)
		holders := make([]Holder, g)
		for i := range holders {
			holders[i] = c.NewHolder()
		}
		res := runContended(ctx, holders, key, r.opts.Setup.TTL, r.opts.Hold, time.Now(), r.opts.Duration)
		acq[c.Name()] = append(acq[c.Name()], float64(res.acquired)/res.elapsed.Seconds())
		handRounds[c.Name()] = append(handRounds[c.Name()], summarize(res.handoffs))
		errs[c.Name()] += res.errs
		viol[c.Name()] += res.violations
		return nil
	})
	if err != nil {
		return err
	}
	ov := overlaps{report: r.report}
	for _, c := range cs {
		n := c.Name()
		r.report.Contended = append(r.report.Contended, ContendedResult{
			Name: n, Goroutines: g, AcqPerSec: median(acq[n]), Rounds: acq[n],
			Handoff: medianLatency(handRounds[n]), Errors: errs[n], Violations: viol[n],
		})
		ov.add(n, viol[n], n+" contended G="+strconv.Itoa(g))
	}
	return ov.err()
}

type contendedResult struct {
	acquired   int64
	errs       int
	violations int
	handoffs   []time.Duration
	times      []time.Duration // when each acquisition happened, from t0, sorted
	elapsed    time.Duration
}

// runContended runs one goroutine per holder, each locking key, checking
// that nobody else holds it, holding it for hold, and unlocking it, from t0
// for d.
func runContended(ctx context.Context, holders []Holder, key string, ttl, hold time.Duration, t0 time.Time, d time.Duration) contendedResult {
	var (
		owner       atomic.Int64 // id of the holder, 0 when free
		lastRelease atomic.Int64 // ns since t0 of the last release, 0 before the first
		acquired    atomic.Int64
		violations  atomic.Int64
		nErrs       atomic.Int64
		mu          sync.Mutex
		handoffs    []time.Duration
		times       []time.Duration
	)
	rctx, cancel := context.WithDeadline(ctx, t0.Add(d))
	defer cancel()
	var wg sync.WaitGroup
	for i, h := range holders {
		id := int64(i + 1)
		wg.Go(func() {
			var mine, got []time.Duration
			for rctx.Err() == nil {
				if err := h.Lock(rctx, key, ttl); err != nil {
					if rctx.Err() == nil {
						nErrs.Add(1)
					}
					continue
				}
				at := time.Since(t0)
				if !owner.CompareAndSwap(0, id) {
					violations.Add(1)
				}
				if lr := lastRelease.Load(); lr > 0 {
					mine = append(mine, at-time.Duration(lr))
				}
				got = append(got, at)
				acquired.Add(1)
				if hold > 0 {
					time.Sleep(hold)
				}
				runtime.Gosched() // let a broken lock's other holders run
				if !owner.CompareAndSwap(id, 0) {
					violations.Add(1)
					owner.Store(0)
				}
				lastRelease.Store(int64(time.Since(t0)))
				uctx, ucancel := context.WithTimeout(ctx, 5*time.Second)
				if err := h.Unlock(uctx); err != nil {
					nErrs.Add(1)
				}
				ucancel()
			}
			mu.Lock()
			handoffs = append(handoffs, mine...)
			times = append(times, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(times)
	return contendedResult{
		acquired:   acquired.Load(),
		errs:       int(nErrs.Load()),
		violations: int(violations.Load()),
		handoffs:   handoffs,
		times:      times,
		elapsed:    min(time.Since(t0), d),
	}
}

// allocs: allocations per Lock+Unlock from one goroutine, from the
// runtime's counters (the whole process: the contender's own background
// goroutines count too), less the idle background of the process.
func (r *Runner) allocs(ctx context.Context, cs []Contender) error {
	r.progress.phase("allocs: %d rounds x %d contenders x %v", r.opts.Rounds, len(cs), r.opts.Duration)
	per := map[string][]float64{}
	bytes := map[string][]float64{}
	rawPer := map[string][]float64{}
	keys := map[string][]string{}
	for _, c := range cs {
		keys[c.Name()] = r.keyRing(c, modeAllocs, 0, 8192)
	}
	err := eachRound(ctx, r, "allocs", cs, func(_ int, c Contender) error {
		a, b, raw := measureAllocs(ctx, c, keys[c.Name()], r.opts.Setup.TTL, r.opts.Duration)
		per[c.Name()] = append(per[c.Name()], a)
		rawPer[c.Name()] = append(rawPer[c.Name()], raw)
		bytes[c.Name()] = append(bytes[c.Name()], b)
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cs {
		n := c.Name()
		r.report.Allocs = append(r.report.Allocs, AllocResult{
			Name: n, AllocsPerOp: median(per[n]), BytesPerOp: median(bytes[n]), Rounds: per[n],
			RawAllocsPerOp: median(rawPer[n]),
		})
	}
	return nil
}

// measureAllocs returns the allocations per operation of a loop of
// LockUnlock, net of the process's idle background (every connected
// contender's goroutines, the runtime) measured over an equal idle window
// just before, and the raw figure.
func measureAllocs(ctx context.Context, c Contender, keys []string, ttl, d time.Duration) (allocsPerOp, bytesPerOp, rawAllocsPerOp float64) {
	warm(ctx, c, keys[:100], ttl)
	var i0, i1, m0, m1 runtime.MemStats
	runtime.ReadMemStats(&i0)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	runtime.ReadMemStats(&i1)
	runtime.ReadMemStats(&m0)
	deadline := time.Now().Add(d)
	n := 0
	for ; ctx.Err() == nil && time.Now().Before(deadline); n++ {
		c.LockUnlock(ctx, keys[n%len(keys)], ttl)
	}
	runtime.ReadMemStats(&m1)
	if n == 0 {
		return 0, 0, 0
	}
	idleMallocs := float64(i1.Mallocs - i0.Mallocs)
	idleBytes := float64(i1.TotalAlloc - i0.TotalAlloc)
	mallocs := float64(m1.Mallocs - m0.Mallocs)
	bytes := float64(m1.TotalAlloc - m0.TotalAlloc)
	return max(0, mallocs-idleMallocs) / float64(n), max(0, bytes-idleBytes) / float64(n), mallocs / float64(n)
}
