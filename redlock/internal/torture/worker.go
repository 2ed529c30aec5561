package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/redlock"
)

// StuckOp is an operation that took longer than its deadline plus
// MasterTimeout plus Config.Slack.
type StuckOp struct {
	Op     string        `json:"op"`
	Holder string        `json:"holder"`
	At     time.Duration `json:"at_ns"`
	Took   time.Duration `json:"took_ns"`
	Limit  time.Duration `json:"limit_ns"`
}

// MajorityGrant is a lock granted although its first vote was asked after
// a majority of the masters had been cut off (partitioned away, or
// restarted and held out by the restart guard): impossible unless the
// quorum is counted wrong.
type MajorityGrant struct {
	Holder      string        `json:"holder"`
	Key         string        `json:"key"`
	Started     time.Duration `json:"started_ns"`
	PartitionAt time.Duration `json:"partition_at_ns"`
}

// worker is one goroutine of one client: lock, work, unlock, until ctx ends.
func (r *run) worker(ctx context.Context, client, g int, lk Locker) {
	rng := rand.New(rand.NewPCG(splitmix(r.cfg.Seed+uint64(client)<<32+uint64(g)), splitmix(r.cfg.Seed^0x776f726b)))
	for seq := 0; ctx.Err() == nil; seq++ {
		holder := fmt.Sprintf("c%d/g%d#%d", client, g, seq)
		if !r.safely(holder, func() { r.round(ctx, rng, holder, lk, "") }) {
			sleepCtx(ctx, 10*time.Millisecond) // do not spin on a panic
		}
	}
}

// shortLivedKey is the key of the short-lived clients
// (Config.ShortLived), locked by them alone, under a hash tag of its own.
const shortLivedKey = "torture:{short}"

// shortLived is one goroutine of short-lived clients: a new client, one
// round on shortLivedKey, closed, until ctx ends. A client that has just
// started knows no counter: its first proposal is its clock, and its token
// is what the counters say.
func (r *run) shortLived(ctx context.Context, g int, newLocker func(id int) (Locker, error)) {
	rng := rand.New(rand.NewPCG(splitmix(r.cfg.Seed+0x73686f7274+uint64(g)), splitmix(r.cfg.Seed^0x73686f72)))
	for seq := 0; ctx.Err() == nil; seq++ {
		lk, err := newLocker(1000 + g)
		if err != nil {
			// A client cannot start during some faults (a cluster that is
			// down, a slot map that moves): a lock it could not take.
			if ctx.Err() == nil {
				r.stats.lockFailure(err)
			}
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		holder := fmt.Sprintf("s%d#%d", g, seq)
		if !r.safely(holder, func() { r.round(ctx, rng, holder, lk, shortLivedKey) }) {
			sleepCtx(ctx, 10*time.Millisecond)
		}
		lk.Close()
	}
}

// safely runs fn and turns a panic into a count; false on a panic.
func (r *run) safely(holder string, fn func()) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			r.stats.mu.Lock()
			r.stats.panics++
			if len(r.stats.panicStacks) < 10 {
				r.stats.panicStacks = append(r.stats.panicStacks, fmt.Sprintf("%s: %v\n%s", holder, p, debug.Stack()))
			}
			r.stats.mu.Unlock()
			r.logf("PANIC in %s: %v", holder, p)
			ok = false
		}
	}()
	fn()
	return true
}

// keyName is key k's name: over a cluster, keys 2j and 2j+1 share the
// hash tag {j}, so that they can be locked together, and the pairs are
// placed apart.
func keyName(cfg *Config, k int) string {
	if cfg.Cluster {
		return fmt.Sprintf("torture:{%d}:%d", k/2, k)
	}
	return fmt.Sprintf("torture:%d", k)
}

// round is one lock, work, unlock cycle: of only when not "", else of
// keys chosen at random.
func (r *run) round(ctx context.Context, rng *rand.Rand, holder string, lk Locker, only string) {
	cfg := &r.cfg
	first := rng.IntN(cfg.Keys)
	keys := []string{keyName(cfg, first)}
	if only != "" {
		keys[0] = only
	} else if rng.Float64() < cfg.MultiKey {
		second := (first + 1 + rng.IntN(cfg.Keys-1)) % cfg.Keys
		if cfg.Cluster {
			// Over a cluster a multi-key lock's keys share a hash tag:
			// each key's pair.
			second = first ^ 1
		}
		if second < cfg.Keys {
			keys = append(keys, keyName(cfg, second))
		}
	}
	if len(keys) == 1 && cfg.DoShare > 0 && rng.Float64() < cfg.DoShare {
		r.doRound(ctx, rng, holder, lk.(DoLocker), keys[0])
		return
	}
	lctx, cancel := context.WithTimeout(ctx, cfg.LockTimeout)
	t0 := time.Now()
	var h Held
	var err error
	read := cfg.ReadShare > 0 && rng.Float64() < cfg.ReadShare
	switch {
	case read:
		h, err = lk.(RWLocker).RLock(lctx, keys[0], cfg.TTL)
	case len(keys) == 1:
		h, err = lk.Lock(lctx, keys[0], cfg.TTL)
	default:
		h, err = lk.LockMulti(lctx, keys, cfg.TTL)
	}
	t1 := time.Now()
	cancel()
	r.checkStuck("lock", holder, t0, t1.Sub(t0), cfg.LockTimeout)
	if err != nil {
		if ctx.Err() == nil {
			r.stats.lockFailure(err)
		}
		return
	}
	start := t1.Sub(r.epoch)
	r.granted(start)
	r.stats.addLatency(t1.Sub(t0))
	if from := r.majorityFrom.Load(); from != 0 {
		if started := h.Started().Sub(r.epoch); started > time.Duration(from-1) {
			r.stats.majorityGrant(MajorityGrant{Holder: holder, Key: strings.Join(keys, "+"), Started: started, PartitionAt: time.Duration(from - 1)})
			r.logf("MAJORITY GRANT: %s got %v with its first vote asked at %.3fs, after a majority was cut off (partition or restart guard) at %.3fs",
				holder, keys, started.Seconds(), time.Duration(from-1).Seconds())
		}
	}

	// Work: mostly short; sometimes longer than the validity (the holder
	// must stop at its deadline); sometimes long with extensions.
	var workEnd time.Time
	extend := false
	switch m := rng.Float64(); {
	case m < 0.92:
		workEnd = t1.Add(time.Duration(rng.Int64N(int64(10 * time.Millisecond))))
	case m < 0.96:
		workEnd = t1.Add(cfg.TTL + time.Duration(rng.Int64N(int64(cfg.TTL))))
	default:
		extend = true
		workEnd = t1.Add(cfg.TTL/2 + time.Duration(rng.Int64N(int64(cfg.TTL*3/2))))
	}
	for {
		next := workEnd
		if u := h.Until(); u.Before(next) {
			next = u
		}
		if extend {
			if e := time.Now().Add(cfg.TTL / 3); e.Before(next) {
				next = e
			}
		}
		if !sleepCtx(ctx, time.Until(next)) {
			break
		}
		now := time.Now()
		if !now.Before(workEnd) || !now.Before(h.Until()) {
			break
		}
		ectx, cancel := context.WithTimeout(ctx, cfg.MasterTimeout+cfg.Slack)
		e0 := time.Now()
		before := h.Until()
		err := h.Extend(ectx, cfg.TTL)
		e1 := time.Now()
		cancel()
		r.checkStuck("extend", holder, e0, e1.Sub(e0), cfg.MasterTimeout)
		r.stats.extendResult(err, e1.Before(before))
	}

	stop := time.Now()
	iv := Interval{Holder: holder, Start: start, Until: h.Until().Sub(r.epoch), Unlock: -1, Votes: h.Votes(), Fence: h.Fence(), Shared: read}
	if sl, ok := h.(Slotted); ok {
		iv.Slot = sl.Slot()
	}
	iv.End = iv.Until
	if rng.Float64() < 0.97 { // else: let it expire
		iv.Unlock = stop.Sub(r.epoch)
		iv.End = min(iv.Until, iv.Unlock)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.MasterTimeout+cfg.Slack)
		err := h.Unlock(uctx)
		u1 := time.Now()
		cancel()
		r.checkStuck("unlock", holder, stop, u1.Sub(stop), cfg.MasterTimeout)
		iv.UnlockResult = r.stats.unlockResult(err)
	}
	if len(keys) > 1 {
		iv.Holder += " (" + strings.Join(keys, "+") + ")"
	}
	for _, key := range keys {
		iv.Key = key
		if n := r.checker.Add(iv); n > 0 {
			if r.cfg.Permits > 0 {
				r.logf("VIOLATION: %s held a permit of %s [%.3fs, %.3fs] with more than %d holders at once", holder, key, iv.Start.Seconds(), iv.End.Seconds(), r.cfg.Permits)
			} else {
				r.logf("VIOLATION: %s held %s [%.3fs, %.3fs] overlapping %d other holder(s)", holder, key, iv.Start.Seconds(), iv.End.Seconds(), n)
			}
		}
	}
}

// doRound holds key through Do for one to DoTTLs TTLs (Config.DoShare):
// its fn records the hold as an interval from its start to when it
// stops, at the hold's end or at its context's cancellation, whichever
// comes first; a cancellation while the run goes on is a lost hold. Its
// acquisition is bounded by LockTimeout, as a Lock's is.
func (r *run) doRound(ctx context.Context, rng *rand.Rand, holder string, lk DoLocker, key string) {
	cfg := &r.cfg
	hold := cfg.TTL * time.Duration(1+rng.IntN(cfg.DoTTLs))
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var entered atomic.Bool
	giveUp := time.AfterFunc(cfg.LockTimeout, func() {
		if !entered.Load() {
			cancel(context.DeadlineExceeded) // counted as a Lock's deadline
		}
	})
	defer giveUp.Stop()
	t0 := time.Now()
	err := lk.Do(dctx, key, cfg.TTL, func(fctx context.Context) error {
		entered.Store(true)
		t1 := time.Now()
		r.checkStuck("lock", holder, t0, t1.Sub(t0), cfg.LockTimeout)
		start := t1.Sub(r.epoch)
		r.granted(start)
		r.stats.addLatency(t1.Sub(t0))
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-t.C:
		case <-fctx.Done():
		}
		end := time.Since(r.epoch)
		// Lost: cancelled while the run goes on, and not by giveUp, which
		// may fire as the lock is granted.
		lost := fctx.Err() != nil && ctx.Err() == nil && context.Cause(dctx) != context.DeadlineExceeded
		r.stats.mu.Lock()
		r.stats.doHolds++
		if lost {
			r.stats.doLost++
		}
		r.stats.mu.Unlock()
		if lost {
			r.logf("DO LOST: %s held %s for %.3fs of %.3fs: %v", holder, key, (end - start).Seconds(), hold.Seconds(), context.Cause(fctx))
		}
		iv := Interval{Key: key, Holder: holder + " (Do)", Start: start, End: end, Until: end, Unlock: end}
		if n := r.checker.Add(iv); n > 0 {
			r.logf("VIOLATION: %s held %s [%.3fs, %.3fs] overlapping %d other holder(s)", holder, key, iv.Start.Seconds(), iv.End.Seconds(), n)
		}
		return nil
	})
	if err != nil && !entered.Load() && ctx.Err() == nil {
		r.stats.lockFailure(err)
	}
}

// checkStuck records an operation that outlived its deadline by more than
// MasterTimeout + Slack.
func (r *run) checkStuck(op, holder string, at time.Time, took, deadline time.Duration) {
	limit := deadline + r.cfg.MasterTimeout + r.cfg.Slack
	if took <= limit {
		return
	}
	r.stats.mu.Lock()
	r.stats.stuck++
	if len(r.stats.stuckOps) < 100 {
		r.stats.stuckOps = append(r.stats.stuckOps, StuckOp{Op: op, Holder: holder, At: at.Sub(r.epoch), Took: took, Limit: limit})
	}
	r.stats.mu.Unlock()
	r.logf("STUCK: %s %s took %v (limit %v)", holder, op, took, limit)
}

// lockFailure counts a failed Lock by kind, and each master's outcome in
// the last attempt.
func (s *stats) lockFailure(err error) {
	var re *redlock.Error
	isRE := errors.As(err, &re)
	var kind string
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		kind = "deadline"
	case err == redlock.ErrNotAcquired:
		kind = "ErrNotAcquired (contention)"
	case isRE && errors.Is(err, redlock.ErrNotAcquired):
		kind = "*Error ErrNotAcquired (faults)"
	case errors.Is(err, redlock.ErrNoQuorum):
		kind = "ErrNoQuorum (too few masters could vote)"
	default:
		kind = "other: " + truncate(err.Error(), 80)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lockFail[kind]++
	if isRE {
		for _, n := range re.Masters {
			s.masterOutcomes[n.Outcome.String()]++
		}
	}
}

func (s *stats) unlockResult(err error) string {
	var kind string
	var re *redlock.Error
	switch {
	case err == nil:
		kind = "ok"
	case err == redlock.ErrNotHeld:
		kind = "ErrNotHeld"
	case errors.As(err, &re) && errors.Is(err, redlock.ErrNotHeld):
		kind = "*Error ErrNotHeld (faults)"
	case errors.Is(err, redlock.ErrUnlockFailed):
		kind = "ErrUnlockFailed (faults)"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		kind = "ctx"
	default:
		kind = "other: " + truncate(err.Error(), 80)
	}
	s.mu.Lock()
	s.unlock[kind]++
	s.mu.Unlock()
	return kind
}

// extendResult counts an Extend's outcome; early tells that the validity
// had not run out when Extend returned.
func (s *stats) extendResult(err error, early bool) {
	var kind string
	switch {
	case err == nil:
		kind = "ok"
	case errors.Is(err, redlock.ErrNotHeld) && early:
		// A quorum said our key was gone before it could have expired.
		kind = "ErrNotHeld before the validity ended"
	case errors.Is(err, redlock.ErrNotHeld):
		kind = "ErrNotHeld"
	case errors.Is(err, redlock.ErrExtendFailed):
		kind = "ErrExtendFailed"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		kind = "ctx"
	default:
		kind = "other: " + truncate(err.Error(), 80)
	}
	s.mu.Lock()
	s.extend[kind]++
	s.mu.Unlock()
}

func (s *stats) addLatency(d time.Duration) {
	s.mu.Lock()
	if len(s.latencies) < 4<<20 {
		s.latencies = append(s.latencies, d)
	}
	s.mu.Unlock()
}

func (s *stats) majorityGrant(g MajorityGrant) {
	s.mu.Lock()
	s.majorityN++
	if len(s.majority) < 100 {
		s.majority = append(s.majority, g)
	}
	s.mu.Unlock()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// splitmix scrambles a seed, so that neighbouring seeds give unrelated
// streams.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
