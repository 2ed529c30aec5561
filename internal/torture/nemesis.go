package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
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
	// it; Recovered is false if none came within Config.RecoveryTimeout.
	Recovery  time.Duration `json:"recovery_ns"`
	Recovered bool          `json:"recovered"`
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

// inject causes fault f, waits, heals it, and waits for the first lock
// granted after the heal. It heals even when ctx ends.
func (r *run) inject(ctx context.Context, rng *rand.Rand, f Fault) {
	cfg := &r.cfg
	n := cfg.Masters
	quorum := n/2 + 1
	minority := max(1, n-quorum)
	pick := func(k int) []int { return rng.Perm(n)[:k] }
	dur := cfg.FaultTime/2 + time.Duration(rng.Int64N(int64(cfg.FaultTime/2)+1))
	ph := Phase{Fault: f, Start: r.now()}
	acq0 := r.acquired.Load()
	heal := func() {}
	var tick func() // called every 50-250ms while the fault lasts
	cl := r.cl

	switch f {
	case FaultMinorityPartition:
		ph.Targets = pick(1 + rng.IntN(minority))
		for _, i := range ph.Targets {
			cl.proxies[i].Blackhole(true)
		}
		heal = func() {
			for _, i := range ph.Targets {
				cl.proxies[i].Blackhole(false)
			}
		}
	case FaultMajorityPartition:
		ph.Targets = pick(quorum)
		for _, i := range ph.Targets {
			cl.proxies[i].Blackhole(true)
		}
		r.majorityFrom.Store(int64(r.now()) + 1)
		heal = func() {
			r.majorityFrom.Store(0)
			for _, i := range ph.Targets {
				cl.proxies[i].Blackhole(false)
			}
		}
	case FaultSlow:
		ph.Targets = pick(1 + rng.IntN(2))
		var parts []string
		for _, i := range ph.Targets {
			up := 5*time.Millisecond + time.Duration(rng.Int64N(int64(95*time.Millisecond)))
			down := 5*time.Millisecond + time.Duration(rng.Int64N(int64(95*time.Millisecond)))
			cl.proxies[i].SetLatency(up, down)
			parts = append(parts, fmt.Sprintf("m%d +%v/+%v", i, up.Round(time.Millisecond), down.Round(time.Millisecond)))
		}
		ph.Detail = strings.Join(parts, ", ")
		heal = func() {
			for _, i := range ph.Targets {
				cl.proxies[i].SetLatency(0, 0)
			}
		}
	case FaultResets:
		ph.Targets = pick(n)
		resets := 0
		tick = func() {
			for _, i := range pick(1 + rng.IntN(n)) {
				cl.proxies[i].ResetAll()
				resets++
			}
		}
		heal = func() { ph.Detail = fmt.Sprintf("%d resets", resets) }
	case FaultCorrupt:
		ph.Targets = pick(1 + rng.IntN(minority))
		prob := 0.02 + rng.Float64()*0.2
		for _, i := range ph.Targets {
			cl.proxies[i].Corrupt(prob, rng.Uint64())
		}
		ph.Detail = fmt.Sprintf("p=%.2f", prob)
		heal = func() {
			for _, i := range ph.Targets {
				cl.proxies[i].Corrupt(0, 0)
			}
		}
	case FaultPause:
		ph.Targets = pick(1 + rng.IntN(minority))
		dur = cfg.TTL*3/2 + time.Duration(rng.Int64N(int64(cfg.TTL*3/2)+1))
		for _, i := range ph.Targets {
			if err := cl.servers[i].Pause(); err != nil {
				r.errorf("pause m%d: %v", i, err)
			}
		}
		heal = func() {
			for _, i := range ph.Targets {
				if err := cl.servers[i].Resume(); err != nil {
					r.errorf("resume m%d: %v", i, err)
				}
			}
		}
	case FaultCrashDelayed:
		ph.Targets = pick(1 + rng.IntN(minority))
		dur = cfg.MaxTTL + 500*time.Millisecond + time.Duration(rng.Int64N(int64(500*time.Millisecond)))
		for _, i := range ph.Targets {
			cl.servers[i].Kill()
		}
		heal = func() { r.restart(ph.Targets) }
	case FaultCrashImmediate:
		// The fault lasts the restart guard's window. With the guard on
		// and a majority restarted, no lock may be granted during it.
		// Every other time a majority, so that a short run sees both.
		r.crashes++
		if r.crashes%2 == 1 {
			ph.Targets = pick(quorum)
		} else {
			ph.Targets = pick(1 + rng.IntN(max(1, quorum-1)))
		}
		// The guard keeps each master out for MaxTTL from its own start
		// (the first restart's, at the latest): end the window there,
		// less a margin for the handshake's clock readings.
		begin := time.Now()
		r.restart(ph.Targets)
		dur = cfg.MaxTTL - 50*time.Millisecond - time.Since(begin)
		if len(ph.Targets) >= quorum && !cfg.DisableRestartGuard {
			r.majorityFrom.Store(int64(r.now()) + 1)
			heal = func() { r.majorityFrom.Store(0) }
		}
	}
	ph.Detail = strings.TrimSpace(ph.Detail + " " + fmt.Sprintf("for %v", dur.Round(time.Millisecond)))
	r.logf("fault %s on %v: %s", f, ph.Targets, ph.Detail)

	end := time.Now().Add(dur)
	for ctx.Err() == nil && time.Now().Before(end) {
		step := time.Until(end)
		if tick != nil {
			tick()
			step = min(step, 50*time.Millisecond+time.Duration(rng.Int64N(int64(200*time.Millisecond))))
		}
		sleepCtx(ctx, step)
	}
	heal()
	ph.Healed = r.now()
	ph.Acquisitions = r.acquired.Load() - acq0

	// Recovery: the first lock granted after the heal.
	deadline := time.Now().Add(cfg.RecoveryTimeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if last := time.Duration(r.lastAcquire.Load()); last > ph.Healed {
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
