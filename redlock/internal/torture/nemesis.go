package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/volleylock/volley/internal/faultproxy"
	"github.com/volleylock/volley/internal/redistest"
)

// Phase is one fault the nemesis injected, healed, and the recovery after.
type Phase struct {
	Fault   Fault         `json:"fault"`
	Targets []int         `json:"targets"` // master indexes
	Detail  string        `json:"detail,omitempty"`
	Start   time.Duration `json:"start_ns"`
	Healed  time.Duration `json:"healed_ns"`
	// Acquisitions counts locks granted between Start and Healed.
	Acquisitions uint64 `json:"acquisitions"`
	// Recovery is the time from the heal to the first lock granted after
	// it (in an election, or the first renewal of a leadership);
	// Recovered is false if none came within Config.RecoveryTimeout.
	Recovery  time.Duration `json:"recovery_ns"`
	Recovered bool          `json:"recovered"`
	// PerSecond is Acquisitions over the fault's length; LongestGap the
	// longest time with no lock granted from Start to the first grant
	// after the heal (to the heal if none came).
	PerSecond  float64       `json:"acquisitions_per_second"`
	LongestGap time.Duration `json:"longest_gap_ns"`
}

// liveness fills PerSecond and LongestGap from the sorted grant offsets.
func (p *Phase) liveness(grants []time.Duration) {
	if d := p.Healed - p.Start; d > 0 {
		p.PerSecond = float64(p.Acquisitions) / d.Seconds()
	}
	end := p.Healed
	if p.Recovered {
		end += p.Recovery
	}
	prev := p.Start
	i, _ := slices.BinarySearch(grants, p.Start)
	for ; i < len(grants) && grants[i] <= end; i++ {
		p.LongestGap = max(p.LongestGap, grants[i]-prev)
		prev = grants[i]
	}
	p.LongestGap = max(p.LongestGap, end-prev)
}

func (p Phase) String() string {
	s := fmt.Sprintf("%s %v @%.1fs-%.1fs", p.Fault, p.Targets, p.Start.Seconds(), p.Healed.Seconds())
	if p.Detail != "" {
		s += " (" + p.Detail + ")"
	}
	return s
}

// nemesis rotates the faults until ctx ends (or Config.Cycles rotations are
// done, when it calls r.stop). Every fault is healed before it returns.
func (r *run) nemesis(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0x6e656d65))
	for cycle := 0; ; cycle++ {
		if r.cfg.Cycles > 0 && cycle >= r.cfg.Cycles {
			r.stop()
			return
		}
		if len(r.cfg.Faults) == 0 {
			<-ctx.Done()
			return
		}
		order := append([]Fault(nil), r.cfg.Faults...)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, f := range order {
			if ctx.Err() != nil {
				return
			}
			r.inject(ctx, rng, f)
			if !sleepCtx(ctx, r.cfg.HealTime) {
				return
			}
		}
	}
}

// injection is one fault under way. Its spec (see faultSpecs) picks the
// targets, causes the fault and says how to heal it.
type injection struct {
	r       *run
	rng     *rand.Rand
	targets []int
	detail  string
	dur     time.Duration        // how long the fault lasts before the heal
	heal    func()               // ends the fault
	tick    func() time.Duration // called while the fault lasts; returns when to call it again
	// noQuorum marks a fault that cuts a majority off: no lock may be
	// granted from its start to its heal.
	noQuorum bool
}

// pick chooses k distinct masters.
func (in *injection) pick(k int) []int { return in.rng.Perm(in.r.cfg.Masters)[:k] }

// minority chooses 1 to N-quorum masters.
func (in *injection) minority() []int {
	n := in.r.cfg.Masters
	return in.pick(1 + in.rng.IntN(max(1, n-(n/2+1))))
}

// quorum is the number of masters a lock needs.
func (in *injection) quorum() int { return in.r.cfg.Masters/2 + 1 }

// onProxies turns a proxy knob on for every target now and off at the heal.
func (in *injection) onProxies(on, off func(p *faultproxy.Proxy)) {
	for _, i := range in.targets {
		on(in.r.cl.proxies[i])
	}
	in.heal = func() {
		for _, i := range in.targets {
			off(in.r.cl.proxies[i])
		}
	}
}

// slowOne makes master i slow as the slow-rotation fault does: its replies
// 20-200ms late, or (every other time) dripped at 1-5ms a byte, a master
// slower than its request rate whose backlog outlives the fault.
func (in *injection) slowOne(i int, drip bool) string {
	p := in.r.cl.proxies[i]
	if drip {
		d := time.Duration(1+in.rng.IntN(5)) * time.Millisecond
		p.Slow(d)
		return fmt.Sprintf("m%d drip %v/B", i, d)
	}
	d := time.Duration(20+in.rng.IntN(181)) * time.Millisecond
	p.SetLatency(0, d)
	return fmt.Sprintf("m%d +%v", i, d)
}

// faultSpecs is the nemesis' table: one entry per fault. An entry starts
// the fault on in (in.dur already holds a random length in [FaultTime/2,
// FaultTime], which it may change) and sets what heals it.
var faultSpecs = map[Fault]func(in *injection){
	FaultFailover:    (*injection).failover,
	FaultKillPrimary: (*injection).killPrimary,
	FaultMoveSlot:    (*injection).moveSlot,
	FaultLostWrites:  (*injection).failoverLosingWrites,
	FaultMinorityPartition: func(in *injection) {
		in.targets = in.minority()
		in.onProxies(func(p *faultproxy.Proxy) { p.Blackhole(true) }, func(p *faultproxy.Proxy) { p.Blackhole(false) })
	},
	FaultMajorityPartition: func(in *injection) {
		in.targets = in.pick(in.quorum())
		in.noQuorum = true
		in.onProxies(func(p *faultproxy.Proxy) { p.Blackhole(true) }, func(p *faultproxy.Proxy) { p.Blackhole(false) })
	},
	FaultSlow: func(in *injection) {
		in.targets = in.pick(1 + in.rng.IntN(2))
		var parts []string
		for _, i := range in.targets {
			up := 5*time.Millisecond + time.Duration(in.rng.Int64N(int64(95*time.Millisecond)))
			down := 5*time.Millisecond + time.Duration(in.rng.Int64N(int64(95*time.Millisecond)))
			in.r.cl.proxies[i].SetLatency(up, down)
			parts = append(parts, fmt.Sprintf("m%d +%v/+%v", i, up.Round(time.Millisecond), down.Round(time.Millisecond)))
		}
		in.detail = strings.Join(parts, ", ")
		in.onProxies(func(*faultproxy.Proxy) {}, func(p *faultproxy.Proxy) { p.SetLatency(0, 0) })
	},
	FaultSlowRotation: func(in *injection) {
		n := in.r.cfg.Masters
		in.targets = in.rng.Perm(n)
		window := in.r.cfg.FaultTime / 2
		in.dur = time.Duration(n) * window
		next := 0
		var parts []string
		in.tick = func() time.Duration {
			if next > 0 {
				in.r.cl.proxies[in.targets[next-1]].Reset()
			}
			if next < n {
				parts = append(parts, in.slowOne(in.targets[next], next%2 == 1))
				next++
			}
			return window
		}
		in.heal = func() {
			for _, i := range in.targets {
				in.r.cl.proxies[i].Reset()
			}
			in.detail = strings.Join(parts, ", ")
		}
	},
	FaultResets: func(in *injection) {
		n := in.r.cfg.Masters
		in.targets = in.pick(n)
		resets := 0
		in.tick = func() time.Duration {
			for _, i := range in.pick(1 + in.rng.IntN(n)) {
				in.r.cl.proxies[i].ResetAll()
				resets++
			}
			return 50*time.Millisecond + time.Duration(in.rng.Int64N(int64(200*time.Millisecond)))
		}
		in.heal = func() { in.detail = fmt.Sprintf("%d resets", resets) }
	},
	FaultCorrupt: func(in *injection) {
		in.targets = in.minority()
		prob, seed := 0.02+in.rng.Float64()*0.2, in.rng.Uint64()
		in.detail = fmt.Sprintf("p=%.2f", prob)
		in.onProxies(func(p *faultproxy.Proxy) { p.Corrupt(prob, seed) }, func(p *faultproxy.Proxy) { p.Corrupt(0, 0) })
	},
	FaultPause: func(in *injection) {
		in.targets = in.minority()
		ttl := in.r.cfg.TTL
		in.dur = ttl*3/2 + time.Duration(in.rng.Int64N(int64(ttl*3/2)+1))
		in.r.signal(in.targets, "pause", (*redistest.Server).Pause)
		in.heal = func() { in.r.signal(in.targets, "resume", (*redistest.Server).Resume) }
	},
	FaultCrashDelayed: func(in *injection) {
		in.targets = in.minority()
		in.dur = in.r.cfg.MaxTTL + 500*time.Millisecond + time.Duration(in.rng.Int64N(int64(500*time.Millisecond)))
		for _, i := range in.targets {
			in.r.cl.servers[i].Kill()
		}
		in.heal = func() { in.r.restart(in.targets) }
	},
	FaultCrashImmediate: func(in *injection) {
		// The fault lasts the restart guard's window. With the guard on
		// and a majority restarted, no lock may be granted during it.
		// Every other time a majority, so that a short run sees both.
		r := in.r
		r.crashes++
		if r.crashes%2 == 1 {
			in.targets = in.pick(in.quorum())
		} else {
			in.targets = in.pick(1 + in.rng.IntN(max(1, in.quorum()-1)))
		}
		// The guard keeps each master out for MaxTTL from its own start
		// (the first restart's, at the latest): end the window there,
		// less a margin for the handshake's clock readings.
		begin := time.Now()
		r.restart(in.targets)
		in.dur = r.cfg.MaxTTL - 50*time.Millisecond - time.Since(begin)
		in.noQuorum = len(in.targets) >= in.quorum() && !r.cfg.DisableRestartGuard
	},
}

// inject causes fault f, waits, heals it, and waits for the first lock
// granted after the heal. It heals even when ctx ends.
func (r *run) inject(ctx context.Context, rng *rand.Rand, f Fault) {
	cfg := &r.cfg
	in := &injection{r: r, rng: rng, heal: func() {},
		dur: cfg.FaultTime/2 + time.Duration(rng.Int64N(int64(cfg.FaultTime/2)+1))}
	ph := Phase{Fault: f, Start: r.now()}
	acq0 := r.acquired.Load()
	faultSpecs[f](in)
	if in.noQuorum {
		r.majorityFrom.Store(int64(r.now()) + 1)
	}
	r.logf("fault %s on %v: %s for %v", f, in.targets, in.detail, in.dur.Round(time.Millisecond))

	end := time.Now().Add(in.dur)
	for ctx.Err() == nil && time.Now().Before(end) {
		step := time.Until(end)
		if in.tick != nil {
			step = min(step, in.tick())
		}
		sleepCtx(ctx, step)
	}
	r.majorityFrom.Store(0)
	in.heal()
	ph.Targets = in.targets
	ph.Detail = strings.TrimSpace(in.detail + " " + fmt.Sprintf("for %v", in.dur.Round(time.Millisecond)))
	ph.Healed = r.now()
	ph.Acquisitions = r.acquired.Load() - acq0

	// Recovery: the first lock granted after the heal (in an election,
	// or a leadership renewed).
	deadline := time.Now().Add(cfg.RecoveryTimeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if last := time.Duration(r.lastLive.Load()); last > ph.Healed {
			ph.Recovered, ph.Recovery = true, last-ph.Healed
			break
		}
		sleepCtx(ctx, 10*time.Millisecond)
	}
	if ctx.Err() != nil && !ph.Recovered {
		ph.Recovered = true // the run ended first: not a liveness failure
	}
	r.logf("healed %s: %d locks during it, recovered=%v in %v", f, ph.Acquisitions, ph.Recovered, ph.Recovery.Round(time.Millisecond))
	r.mu.Lock()
	r.phases = append(r.phases, ph)
	r.mu.Unlock()
}

// signal pauses or resumes masters, reporting failures as nemesis errors.
func (r *run) signal(targets []int, what string, fn func(*redistest.Server) error) {
	for _, i := range targets {
		if err := fn(r.cl.servers[i]); err != nil {
			r.errorf("%s m%d: %v", what, i, err)
		}
	}
}

// restart restarts masters without their data.
func (r *run) restart(targets []int) {
	for _, i := range targets {
		if err := r.cl.servers[i].Restart(false); err != nil {
			r.errorf("restart m%d: %v", i, err)
		}
	}
}

// sleepCtx sleeps d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
