package torture

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/redlock"
)

// run is the state of one Run shared by the workers and the nemesis.
type run struct {
	cfg     Config
	cl      *cluster
	epoch   time.Time // the run's clock: every offset counts from here
	checker *Checker
	stats   stats
	stop    context.CancelFunc

	acquired    atomic.Uint64
	lastAcquire atomic.Int64 // offset of the latest grant
	// lastLive is the offset of the latest grant or, in an election, of
	// the latest renewal of a leadership: a fault is recovered from when
	// either comes after the heal (a leader that rides a fault out keeps
	// the election live without a new grant).
	lastLive     atomic.Int64
	majorityFrom atomic.Int64 // offset+1 of the current majority partition, 0 if none

	crashes int           // FaultCrashImmediate injections so far (nemesis only)
	askings atomic.Uint64 // see Report.AskingsInSlotMoves

	mu     sync.Mutex
	phases []Phase
	errs   []string
	grants []time.Duration // offset of every grant, in order

	clockSteps []ClockStep
}

// granted records a lock granted at offset at.
func (r *run) granted(at time.Duration) {
	r.acquired.Add(1)
	r.lastAcquire.Store(int64(at))
	r.live(at)
	r.mu.Lock()
	r.grants = append(r.grants, at)
	r.mu.Unlock()
}

// live records that the run made progress at offset at (see lastLive).
func (r *run) live(at time.Duration) {
	for {
		last := r.lastLive.Load()
		if int64(at) <= last || r.lastLive.CompareAndSwap(last, int64(at)) {
			return
		}
	}
}

// stats are the counters the workers share.
type stats struct {
	mu             sync.Mutex
	lockFail       map[string]uint64
	masterOutcomes map[string]uint64
	unlock         map[string]uint64
	extend         map[string]uint64
	latencies      []time.Duration
	stuck          int
	stuckOps       []StuckOp
	panics         int
	panicStacks    []string
	majorityN      int
	majority       []MajorityGrant
	// Config.DoShare's: Do rounds whose fn ran, and those whose context
	// was cancelled before their hold was over while the run went on.
	doHolds, doLost int
	// Config.Election's.
	pastLeaseN  int
	pastLeases  []PastLease
	leaderships []Leadership
}

func (r *run) now() time.Duration { return time.Since(r.epoch) }

func (r *run) logf(format string, args ...any) {
	r.cfg.Logf("[%7.3fs] "+format, append([]any{r.now().Seconds()}, args...)...)
}

func (r *run) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.errs = append(r.errs, msg)
	r.mu.Unlock()
	r.logf("ERROR: %s", msg)
}

// DefaultLocker returns the redlock.Client a Run uses when Config.NewLocker
// is nil, configured by DefaultLockerConfig.
func DefaultLocker(cfg Config, addrs []string) (Locker, error) {
	if cfg.Permits > 0 {
		return NewSemaphoreLocker(DefaultLockerConfig(cfg, addrs), cfg.Permits)
	}
	if cfg.ReadShare > 0 {
		return NewRWLocker(DefaultLockerConfig(cfg, addrs))
	}
	return NewRedlockLocker(DefaultLockerConfig(cfg, addrs))
}

// DefaultLockerConfig is the redlock.Config of DefaultLocker: small
// timeouts so that recovery after a fault is quick.
func DefaultLockerConfig(cfg Config, addrs []string) redlock.Config {
	cfg = cfg.withDefaults()
	maxExtensions := 0 // the default
	if cfg.BreakRenewals {
		maxExtensions = 1
	}
	return redlock.Config{
		MaxExtensions: maxExtensions,
		Addrs:         addrs,
		Conn: redlock.Connection{
			DialTimeout:  300 * time.Millisecond,
			ReconnectMin: 5 * time.Millisecond,
			ReconnectMax: 100 * time.Millisecond,
		},
		Tries:               1 << 20, // bounded by the Lock's ctx
		RetryDelay:          cfg.RetryDelay,
		MasterTimeout:       cfg.MasterTimeout,
		MaxTTL:              cfg.MaxTTL,
		FailoverGrace:       cfg.FailoverGrace,
		DisableRestartGuard: cfg.DisableRestartGuard,
		Fencing:             cfg.Fencing,
		DriftFactor:         0.01,
	}
}

// Run starts the masters and proxies, waits until the clients can lock,
// then runs the workers and the nemesis for cfg.Duration (or cfg.Cycles
// rotations, or until ctx ends), stops everything and returns the Report.
// An error means the run could not start; a run cut short by ctx still
// returns its Report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Masters < 1 || cfg.TTL > cfg.MaxTTL {
		return nil, fmt.Errorf("torture: bad config: %d masters, TTL %v, MaxTTL %v", cfg.Masters, cfg.TTL, cfg.MaxTTL)
	}
	if cfg.Election && cfg.Cluster {
		return nil, fmt.Errorf("torture: bad config: elections run on standalone masters only")
	}
	for _, f := range cfg.Faults {
		if slices.Contains(ClusterFaults(), f) != cfg.Cluster {
			return nil, fmt.Errorf("torture: bad config: fault %s with Cluster %v", f, cfg.Cluster)
		}
	}
	start := startCluster
	if cfg.Cluster {
		start = startRedisCluster
	}
	cl, err := start(cfg.Masters)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	g0, h0 := snapshot()

	lockers := make([]Locker, 0, cfg.Clients)
	closeLockers := func() {
		for _, lk := range lockers {
			lk.Close()
		}
		lockers = lockers[:0]
	}
	defer closeLockers()
	for id := range cfg.Clients {
		if cfg.Election {
			break // each candidate makes its own (see candidate)
		}
		var lk Locker
		if cfg.NewLocker != nil {
			lk, err = cfg.NewLocker(id, cl.addrs())
		} else {
			lk, err = DefaultLocker(cfg, cl.addrs())
		}
		if err != nil {
			return nil, fmt.Errorf("torture: client %d: %w", id, err)
		}
		lockers = append(lockers, lk)
		if _, ok := lk.(DoLocker); cfg.DoShare > 0 && !ok {
			return nil, fmt.Errorf("torture: bad config: DoShare %v with client %d's Locker, which has no Do", cfg.DoShare, id)
		}
		if _, ok := lk.(RWLocker); cfg.ReadShare > 0 && !ok {
			return nil, fmt.Errorf("torture: bad config: ReadShare %v with client %d's Locker, which has no read lock", cfg.ReadShare, id)
		}
	}
	// Fresh masters are inside the restart guard's window: wait it out.
	readyCtx, cancel := context.WithTimeout(ctx, cfg.MaxTTL+10*time.Second)
	for id, lk := range lockers {
		if err := lk.WaitReady(readyCtx); err != nil {
			cancel()
			return nil, fmt.Errorf("torture: client %d not ready: %w", id, err)
		}
	}
	cancel()

	r := &run{cfg: cfg, cl: cl, checker: NewCountingChecker(cfg.MaxTTL+30*time.Second, cfg.Permits)}
	if cfg.Cluster && cfg.Fencing && cfg.Permits == 0 && cfg.ReadShare == 0 {
		if err := r.aheadCounters(ctx, lockers[0]); err != nil {
			return nil, err
		}
	}
	r.stats.lockFail = map[string]uint64{}
	r.stats.masterOutcomes = map[string]uint64{}
	r.stats.unlock = map[string]uint64{}
	r.stats.extend = map[string]uint64{}
	var electors []Elector
	if cfg.Election {
		r.epoch = time.Now() // for the log of a failed start
		for id := range cfg.Clients * cfg.Goroutines {
			el := r.newElector(ctx, id)
			if el == nil {
				for _, el := range electors {
					el.Close()
				}
				return nil, errNoElector
			}
			electors = append(electors, el)
		}
	}
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	r.stop = stop
	r.epoch = time.Now()
	r.logf("run: seed %d, %d masters, %d clients x %d goroutines, %d keys (permits %d, read share %.2f), TTL %v, MaxTTL %v, MasterTimeout %v, restart guard %v, faults %v",
		cfg.Seed, cfg.Masters, cfg.Clients, cfg.Goroutines, cfg.Keys, max(1, cfg.Permits), cfg.ReadShare, cfg.TTL, cfg.MaxTTL, cfg.MasterTimeout, !cfg.DisableRestartGuard, cfg.Faults)

	var wg sync.WaitGroup
	for id, el := range electors {
		wg.Add(1)
		go func() { // owned by Run: ends with runCtx
			defer wg.Done()
			r.candidate(runCtx, id, el)
		}()
	}
	for id, lk := range lockers {
		for g := range cfg.Goroutines {
			wg.Add(1)
			go func() { // owned by Run: ends with runCtx
				defer wg.Done()
				r.worker(runCtx, id, g, lk)
			}()
		}
	}
	newLocker := func(id int) (Locker, error) {
		if cfg.NewLocker != nil {
			return cfg.NewLocker(id, cl.addrs())
		}
		return DefaultLocker(cfg, cl.addrs())
	}
	for g := range cfg.ShortLived {
		wg.Add(1)
		go func() { // owned by Run: ends with runCtx
			defer wg.Done()
			r.shortLived(runCtx, g, newLocker)
		}()
	}
	wg.Add(1)
	go func() { // owned by Run: ends with runCtx
		defer wg.Done()
		r.watchClock(runCtx)
	}()
	wg.Add(1)
	go func() { // owned by Run: ends with runCtx, faults healed
		defer wg.Done()
		r.safely("nemesis", func() { r.nemesis(runCtx) })
	}()
	<-runCtx.Done()
	wg.Wait()
	elapsed := r.now()
	closeLockers()

	rep := r.report(elapsed)
	rep.GoroutinesBefore, rep.HeapBefore = g0, h0
	// Every goroutine the clients started must end; the proxies' end once
	// their connections close.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	rep.GoroutinesAfter, rep.HeapAfter = snapshot()
	if ctx.Err() != nil {
		rep.Interrupted = true
	}
	return rep, nil
}

// snapshot returns the goroutine count and the live heap after a GC.
func snapshot() (int, uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

// report builds the Report from the run's counters.
func (r *run) report(elapsed time.Duration) *Report {
	cfg := &r.cfg
	rep := &Report{
		Seed: cfg.Seed, RestartGuard: !cfg.DisableRestartGuard, Fencing: cfg.Fencing, Faults: cfg.Faults,
		Masters: cfg.Masters, Clients: cfg.Clients, Goroutines: cfg.Goroutines, Keys: cfg.Keys,
		Permits: cfg.Permits, ReadShare: cfg.ReadShare,
		TTL: cfg.TTL, MaxTTL: cfg.MaxTTL, MasterTimeout: cfg.MasterTimeout,
		Elapsed:            elapsed,
		Acquisitions:       r.acquired.Load(),
		AskingsInSlotMoves: r.askings.Load(),
	}
	if elapsed > 0 {
		rep.PerSecond = float64(rep.Acquisitions) / elapsed.Seconds()
	}
	s := &r.stats
	s.mu.Lock()
	rep.LockFailures, rep.MasterOutcomes, rep.Unlocks, rep.Extends = s.lockFail, s.masterOutcomes, s.unlock, s.extend
	rep.Stuck, rep.StuckOps = s.stuck, s.stuckOps
	rep.Panics, rep.PanicStacks = s.panics, s.panicStacks
	rep.MajorityGrants, rep.MajorityGrantList = s.majorityN, s.majority
	rep.DoHolds, rep.DoLost = s.doHolds, s.doLost
	lat := s.latencies
	s.latencies = nil
	s.mu.Unlock()
	if len(lat) > 0 {
		slices.Sort(lat)
		rep.LatencyP50 = lat[len(lat)/2]
		rep.LatencyP99 = lat[min(len(lat)-1, len(lat)*99/100)]
		rep.LatencyMax = lat[len(lat)-1]
	}
	rep.Checker = r.checker.Stats()
	s.mu.Lock()
	rep.PastLease, rep.PastLeaseList = s.pastLeaseN, s.pastLeases
	leaderships := s.leaderships
	s.mu.Unlock()
	r.mu.Lock()
	rep.Phases, rep.Errors, rep.ClockSteps = r.phases, r.errs, r.clockSteps
	slices.Sort(r.grants) // workers record in nearly, not exactly, this order
	for i := range rep.Phases {
		rep.Phases[i].liveness(r.grants)
	}
	r.mu.Unlock()
	for _, p := range rep.Phases {
		if !p.Recovered {
			rep.Unrecovered++
		}
	}
	if cfg.Election {
		rep.Election = true
		rep.LeadFor = cfg.leadFor()
		r.takeovers(rep, leaderships)
	}
	// Name the faults around each violation.
	for i := range rep.Checker.Details {
		v := &rep.Checker.Details[i]
		for _, p := range rep.Phases {
			if p.Start <= v.Second.Start && v.First.Start <= p.Healed+p.Recovery+cfg.MaxTTL {
				v.Faults = append(v.Faults, p.String())
			}
		}
		// A step while First was held (or up to a TTL before it was
		// granted: the keys were set then) moves its keys' expiry.
		for _, c := range rep.ClockSteps {
			if v.First.Start-cfg.TTL <= c.At && c.At <= v.First.End {
				v.Faults = append(v.Faults, fmt.Sprintf("wall clock stepped by %v at %.3fs", c.Step, c.At.Seconds()))
			}
		}
	}
	return rep
}
