package redlock

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/internal/scripts"
	"github.com/volleylock/volley/resp"
)

// Fence returns the lock's fencing token: strictly greater than the token
// of every earlier holder of its key (every key, for LockMulti) among
// clients with Config.Fencing; 0 when the Client does not fence. Give it
// to the resource with each write, and have the resource refuse a token
// lower than the highest it has accepted (see the package's Fencing
// example).
func (l *Lock) Fence() uint64 { return l.fence }

type fenceCtxKey struct{}

// FenceFrom returns the fencing token of the lock that Do, DoMulti or
// RWMutex.DoWrite holds, or of the permit Semaphore.Do holds, while it
// runs fn, from fn's context; false outside such a context or when the
// Client does not fence.
func FenceFrom(ctx context.Context) (uint64, bool) {
	f, ok := ctx.Value(fenceCtxKey{}).(uint64)
	return f, ok && f != 0
}

// repairIfUnsure has the masters' counters repaired, in the background
// (see repairFence), when a master without a counter it vouches for took
// part in a fenced round (unfenced: its first round; o: its latest), or
// may have (fencer.suspect).
func (c *Client) repairIfUnsure(o *op, unfenced bool) {
	if unfenced || o.res.unfenced() || c.fence.suspect() {
		c.repairSoon(o.cmd.place)
	}
}

// proposeFence makes the token a fenced lock round proposes
// (fencer.propose) and formats it into o.fenceNum, for o's encode.
func (c *Client) proposeFence(o *call) uint64 {
	p := c.fence.propose()
	o.fenceNum = strconv.AppendUint(o.fenceNum[:0], p, 10)
	return p
}

// fenceRound completes a fenced lock round that o ran with proposal,
// setting key (keys, when not nil) to tok: a Lock's, a writer's or a
// permit's. When a quorum set them within until, the token is the
// proposal if a quorum's counters were below it, else the second round's
// (fenceWrite), whose result then replaces *br; fence is 0 when there is
// none. unfenced reports whether a master without a counter it vouches
// for took part in the first round. Either way the Client's next
// proposal goes above what the rounds read or took.
func (c *Client) fenceRound(o *call, br *burstResult, proposal uint64, key string, keys []string, tok *token, until time.Time, done <-chan struct{}) (fence uint64, unfenced bool) {
	if c.granted(br, until) {
		unfenced = o.res.unfenced()
		if fence = o.learn.proposalTaken(o.res, c.quorum, proposal); fence == 0 {
			fence, *br = c.fenceWrite(o, key, keys, tok, done)
		}
	}
	c.fence.saw(max(o.learn.topCounter(o.res), fence))
	return fence, unfenced
}

// fenceWrite is a fenced Lock's second round, after a first round (run by
// the same op) in which a quorum of masters that vouch for their counter
// set the keys: the token is the largest counter read plus one, written to
// every master, where scripts.FenceWrite keeps it only if the keys still hold
// tok. It returns the token and the round's result (its start is not the
// lock's: the validity counts from the first round's).
func (c *Client) fenceWrite(o *call, key string, keys []string, tok *token, done <-chan struct{}) (uint64, burstResult) {
	fence := o.learn.topCounter(o.res) + 1
	o.fenceNum = strconv.AppendUint(o.fenceNum[:0], fence, 10)
	o.encode(&cmdFenceWrite, args{key: key, keys: keys, tok: tok, arg: o.fenceNum})
	return fence, o.run(done)
}

// proposalTaken returns the proposed token p when a quorum of the masters
// that set the keys in the lock round (OutcomeOK: they vouch for their
// counter) read a counter below p, and so raised it to p in the same
// step; else 0, and the lock needs its second round (fenceWrite).
func (f *fenceState) proposalTaken(res votes, quorum int, p uint64) uint64 {
	if blindProposals {
		return p
	}
	n := 0
	for i := range res {
		if res[i].Outcome == OutcomeOK && f.hasCounter[i] && f.counter[i] < p {
			n++
		}
	}
	if n >= quorum {
		return p
	}
	return 0
}

// fenceSetup is the command every connection of a fencing Client runs in
// its handshake (conn.Options.Setup): scripts.FenceCheck.
func fenceSetup() []string {
	return []string{"EVAL", scripts.FenceCheck.Source, "3", fenceKey, fenceRunKey, fenceUnsureKey}
}

// fencer serializes repairs and paces them, and owns the goroutine of a
// repair started in the background (repairSoon): Client.Close stops it.
type fencer struct {
	mu        sync.Mutex   // held by the one repair under way
	notBefore atomic.Int64 // no repair starts before this (UnixNano); standalone masters
	running   atomic.Bool  // a background repair is under way
	// places are, over a Redis Cluster, the places whose counters a
	// repair is to look at (a fenced lock there met a copy without a
	// counter it vouches for), each with when its next repair may start
	// (UnixNano), under placesMu. A place leaves once a repair found
	// every copy answering and none unsure, or repaired them.
	placesMu sync.Mutex
	places   map[int]int64
	// connects counts the (re)connects of the Client's connections: each
	// may be to a master that restarted, and is unsure now. cleared is
	// the count at the start of the latest repair that found every
	// master answering and none unsure.
	connects, cleared atomic.Int64
	// top is the largest counter or token this Client has seen: the floor
	// of its next proposal (see propose).
	top atomic.Uint64
	// now is the clock of propose; nil means time.Now (tests skew it).
	now func() time.Time

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	startMu sync.Mutex // orders a repair's start with close
	stopped bool       // close has run (under startMu)
}

// repairSoon starts a repair in the background, unless one runs or the
// last one asked to wait: a fenced lock that met a master without a
// counter it vouches for (OutcomeUnfenced), or that ran while one may be
// (fencer.suspect), does not pay for the repair, nor wait for it.
//
// Over a Redis Cluster the repair is of place p's counters (see
// repairPlaces); on standalone masters p is 0, and every key's.
func (c *Client) repairSoon(p int) {
	f := &c.fence
	if c.cluster != nil {
		f.placesMu.Lock()
		if f.places == nil {
			f.places = make(map[int]int64)
		}
		if _, ok := f.places[p]; !ok {
			f.places[p] = 0
		}
		f.placesMu.Unlock()
	} else if time.Now().UnixNano() < f.notBefore.Load() {
		return
	}
	if f.running.Swap(true) {
		return
	}
	f.startMu.Lock()
	defer f.startMu.Unlock()
	if f.stopped {
		f.running.Store(false)
		return
	}
	f.wg.Go(func() { // owned by the Client: Close cancels f.ctx and waits
		defer f.running.Store(false)
		if c.cluster != nil {
			c.repairPlaces(f.ctx)
		} else {
			c.repairFence(f.ctx)
		}
	})
}

// propose returns the token a fenced Lock proposes in its lock round: the
// clock in microseconds, or one more than the largest counter or token
// this Client has seen (top) if that is larger, so that the proposal
// exceeds the counters in the common case and the lock takes one round.
// Safety does not rest on it: a proposal becomes the token only where a
// quorum's counters were below it (see op.proposalTaken); a low one costs
// the second round, no more. At most maxFence.
func (f *fencer) propose() uint64 {
	now := time.Now
	if f.now != nil {
		now = f.now
	}
	p := max(uint64(now().UnixMicro()), f.top.Load()+1)
	return min(p, maxFence)
}

// blindProposals, set by tests only, makes every fenced Lock take its
// proposal as its token without looking at the counters: the broken
// variant that TestFenceSkewedClocks must catch.
var blindProposals bool

// saw raises top to v.
func (f *fencer) saw(v uint64) {
	for {
		t := f.top.Load()
		if v <= t || f.top.CompareAndSwap(t, v) {
			return
		}
	}
}

// suspect reports whether a master may be unsure: a connection opened
// since a repair last found none.
func (f *fencer) suspect() bool { return f.connects.Load() != f.cleared.Load() }

// onConnect is the OnConnect of a fencing Client's connections.
func (f *fencer) onConnect(*pipe.ServerInfo) { f.connects.Add(1) }

// close stops a background repair and waits for it.
func (f *fencer) close() {
	f.startMu.Lock()
	f.stopped = true
	f.startMu.Unlock()
	if f.cancel != nil {
		f.cancel()
	}
	f.wg.Wait()
}

// repairWait is how long a master must have been unsure before a repair
// may give it a counter from the others: every lock round that may have
// written to it before it lost its counter has ended by then (a lock's
// rounds end within its validity, at most MaxTTL), so the others' counters,
// read after the wait, include every token acknowledged by a quorum that
// counted this master.
//
// Over a Redis Cluster the wait is longer by FailoverGrace: a copy's node
// is unsure from the first fencing script it ran for the slot (the check
// is made there, per slot), which may be as early as the slot's
// promotion; the deposed primary may take writes for FailoverGrace after
// that, and a lock round that wrote there ends within MaxTTL of its write.
func (c *Client) repairWait() time.Duration {
	d := c.cfg.MaxTTL + time.Duration(2*c.cfg.DriftFactor*float64(c.cfg.MaxTTL)) + driftFloor
	if c.cluster != nil {
		d += c.cfg.FailoverGrace
	}
	return d
}

// repairPace is how long after a repair's start the next may start.
func (c *Client) repairPace() time.Duration {
	return max(2*c.cfg.MasterTimeout, 20*time.Millisecond)
}

// masterFence is what a repair learned of one master.
type masterFence struct {
	answered   bool
	hasCounter bool
	counter    uint64
	since      string // when it became unsure ("" if it is not)
	stale      uint64
	now        uint64 // its TIME, in microseconds
}

// repairStepTimeout bounds each step of a repair on each master. A repair
// runs off the locks' path, and needs a quorum of answers: a master that
// is slow but alive (it would miss MasterTimeout) must still count.
func (c *Client) repairStepTimeout() time.Duration {
	return max(c.cfg.MasterTimeout, time.Second)
}

// repairFence repairs the counters of standalone masters (see
// repairPlace), at most one repair at a time per Client, failed ones
// paced, and reports whether it gave any master a counter.
func (c *Client) repairFence(ctx context.Context) bool {
	f := &c.fence
	if !f.mu.TryLock() {
		return false
	}
	defer f.mu.Unlock()
	now := time.Now()
	if now.UnixNano() < f.notBefore.Load() {
		return false
	}
	f.notBefore.Store(now.Add(c.repairPace()).UnixNano())
	connects := f.connects.Load()
	r := c.repairPlace(ctx, 0)
	if r.settled {
		f.cleared.Store(connects)
	}
	if r.wait > 0 {
		f.notBefore.Store(now.Add(r.wait).UnixNano())
	}
	return r.repaired
}

// repairPlaces repairs, over a Redis Cluster, the counters of the places
// whose repair is due (fencer.places), one after another, and reports
// whether it gave any copy a counter.
func (c *Client) repairPlaces(ctx context.Context) bool {
	f := &c.fence
	if !f.mu.TryLock() {
		return false
	}
	defer f.mu.Unlock()
	now := time.Now()
	var due []int
	f.placesMu.Lock()
	for p, nb := range f.places {
		if nb <= now.UnixNano() {
			due = append(due, p)
			f.places[p] = now.Add(c.repairPace()).UnixNano()
		}
	}
	f.placesMu.Unlock()
	repaired := false
	for _, p := range due {
		if ctx.Err() != nil {
			break
		}
		r := c.repairPlace(ctx, p)
		repaired = repaired || r.repaired
		f.placesMu.Lock()
		switch {
		case r.wait > 0:
			f.places[p] = now.Add(r.wait).UnixNano()
		case r.settled || r.repaired:
			delete(f.places, p)
		}
		f.placesMu.Unlock()
	}
	return repaired
}

// repairResult is what one repair of a place did.
type repairResult struct {
	repaired bool          // it gave an unsure master a counter
	settled  bool          // every master answered, and none was unsure
	wait     time.Duration // > 0: none was unsure for long enough; look again then
}

// repairPlace gives the masters that have no counter they vouch for, for
// the keys at place p (a cluster's copies at p; every key of standalone
// masters, p 0), one they can vouch for, when that is safe.
//
// With a quorum of masters that vouch for theirs, a master unsure for
// repairWait gets the largest of their counters, read after the wait
// (and its own stale one, if larger). Without such a quorum (a fresh
// deployment; or most masters restarted), every unsure master gets the
// largest counter or stale counter any master has, or the masters' clock
// in microseconds if larger: exact when the restarted masters kept every
// write (appendfsync always), and otherwise right as long as fewer than
// one fenced acquisition per microsecond was made on average since the
// counters began.
func (c *Client) repairPlace(ctx context.Context, p int) repairResult {
	states := make([]masterFence, len(c.masters))
	c.eachMaster(ctx, p, c.repairStepTimeout(), func(_ int, w *wire) {
		c.encodeFenceScript(w, &scripts.FenceState, &scripts.FenceStateVouched)
	}, func(i int, vals []resp.Value) {
		states[i] = parseMasterFence(vals)
	})
	vouched, unanswered := 0, 0
	var unsure []int
	for i, s := range states {
		switch {
		case !s.answered:
			unanswered++
		case s.hasCounter:
			vouched++
		case s.since != "":
			unsure = append(unsure, i)
		}
	}
	if len(unsure) == 0 {
		return repairResult{settled: unanswered == 0}
	}
	var value uint64
	switch {
	case vouched >= c.quorum:
		wait := uint64(c.repairWait().Microseconds())
		ready := unsure[:0]
		var soonest uint64 = 1<<64 - 1
		for _, i := range unsure {
			since, err := strconv.ParseUint(states[i].since, 10, 64)
			if err != nil {
				continue
			}
			if states[i].now >= since+wait {
				ready = append(ready, i)
			} else {
				soonest = min(soonest, since+wait-states[i].now)
			}
		}
		if len(ready) == 0 {
			if soonest <= wait {
				return repairResult{wait: time.Duration(soonest) * time.Microsecond}
			}
			return repairResult{} // no since could be read: the usual pacing stands
		}
		unsure = ready
		// Read the others' counters again, after the wait: over a cluster
		// with the check (the state script), since a node may have taken
		// over a copy's slot meanwhile.
		fresh := 0
		c.eachMaster(ctx, p, c.repairStepTimeout(), func(_ int, w *wire) {
			if c.vouching() {
				c.encodeFenceScript(w, &scripts.FenceState, &scripts.FenceStateVouched)
				return
			}
			w.verbKey(c, "GET", fenceKey)
		}, func(i int, vals []resp.Value) {
			var n uint64
			ok := false
			if c.vouching() {
				s := parseMasterFence(vals)
				n, ok = s.counter, s.hasCounter
			} else if vals[0].Type == resp.TypeBulk && !vals[0].Null {
				n, ok = parseCounter(vals[0].Bytes)
			}
			if ok {
				value = max(value, n)
				fresh++
			}
		})
		if fresh < c.quorum {
			return repairResult{}
		}
		for _, i := range unsure {
			value = max(value, states[i].stale)
		}
	case vouched+unanswered < c.quorum:
		// No quorum vouches for its counter, nor can one among those that
		// did not answer: start again from everything known, and the clock.
		for _, s := range states {
			value = max(value, s.counter, s.stale, s.now)
		}
	default:
		return repairResult{}
	}
	if value > maxFence {
		return repairResult{}
	}
	arg := strconv.FormatUint(value, 10)
	repaired := false
	c.eachMasterOf(ctx, p, c.repairStepTimeout(), unsure, func(i int, w *wire) {
		c.encodeFenceScript(w, &scripts.FenceRepair, &scripts.FenceRepairVouched, states[i].since, arg)
	}, func(i int, vals []resp.Value) {
		if vals[0].Type == resp.TypeInteger && vals[0].Int == 1 {
			repaired = true
		}
	})
	return repairResult{repaired: repaired}
}

// encodeFenceScript appends "EVAL script 2 counter unsure args..." to w, a
// repair's script on the counter and the unsure hash; over a Redis
// Cluster, the script's cluster form vouched instead, its keys in the
// slot of w's place and followed by the check's (see fenceTail).
func (c *Client) encodeFenceScript(w *wire, script, vouched *scripts.Script, args ...string) {
	keys := [...]string{fenceKey, fenceUnsureKey, fenceKey, fenceRunKey, fenceUnsureKey}
	n := 2
	if c.vouching() {
		script, n = vouched, len(keys)
	}
	w.eval(c, script, keys[:n], args)
}

// parseMasterFence reads scripts.FenceState's answer.
func parseMasterFence(vals []resp.Value) masterFence {
	s := masterFence{}
	if len(vals) != 5 || vals[0].Type != resp.TypeArray || vals[0].Int != 4 {
		return s
	}
	for _, v := range vals[1:] {
		if v.Type != resp.TypeBulk {
			return s
		}
	}
	now, ok := parseCounter(vals[4].Bytes)
	if !ok {
		return s
	}
	s.answered, s.now = true, now
	if len(vals[1].Bytes) > 0 {
		if s.counter, s.hasCounter = parseCounter(vals[1].Bytes); !s.hasCounter {
			s.answered = false // out of range: this master cannot take part
			return s
		}
	}
	s.since = string(vals[2].Bytes)
	if len(vals[3].Bytes) > 0 {
		s.stale, _ = parseCounter(vals[3].Bytes)
	}
	return s
}

// eachMaster sends to every master at once the command enc writes, for
// the keys at place p, waits at most timeout (or until ctx ends), and
// calls fn with each reply that comes in time and is not an error, as it
// comes: one at a time, on the Group's driver when the round is driven
// (see fanout.gather), and all before eachMaster returns. fn must not
// block; vals are valid during the call only.
func (c *Client) eachMaster(ctx context.Context, p int, timeout time.Duration, enc func(i int, w *wire), fn func(i int, vals []resp.Value)) {
	all := make([]int, len(c.masters))
	for i := range all {
		all[i] = i
	}
	c.eachMasterOf(ctx, p, timeout, all, enc, fn)
}

// eachMasterOf is eachMaster for the masters in idx, each with the command
// enc writes for it.
func (c *Client) eachMasterOf(ctx context.Context, p int, timeout time.Duration, idx []int, enc func(i int, w *wire), fn func(i int, vals []resp.Value)) {
	f := newFanout(c, len(c.masters))
	defer f.release()
	f.begin(timeout, c.claimable(p), nil)
	var cmd wire
	for _, i := range idx {
		cmd.reset()
		cmd.place = p
		enc(i, &cmd)
		f.sendTo(i, i, &cmd)
	}
	f.gather(eachReply(fn), ctx.Done())
}

// eachReply passes each reply that is not an error to its function (see
// eachMaster), and waits for all.
type eachReply func(i int, vals []resp.Value)

func (fn eachReply) gathered(r *pipe.Request) bool {
	if vals := r.Reply(); r.Err() == nil && len(vals) > 0 && !vals[0].IsError() {
		fn(r.Tag, vals)
	}
	return false
}

// topCounter is the largest counter the last lock round read; 0 if none.
func (f *fenceState) topCounter(res votes) uint64 {
	var top uint64
	for i := range res {
		if f.hasCounter[i] {
			top = max(top, f.counter[i])
		}
	}
	return top
}
