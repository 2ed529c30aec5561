package redlock

import (
	"fmt"
	"sync"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// Renewal of the values that Do holds (locks, permits, read locks): one
// scheduler per Client, not one timer and one round trip per value.
// Values of one kind whose renewal falls due together (within a quarter
// of their period) are extended in one script call per master carrying up
// to maxBatchLocks of them (their extend command's batch script:
// scripts.ExtendBatch, SemExtendBatch, RWRExtendBatch), and each is still
// judged on its own quorum, as Extend judges it. So a process holding
// thousands of them sends a few commands per period to each master
// instead of one per value.

// maxBatchLocks bounds the locks of one batch, and maxBatchKeys their keys,
// so that one script call keeps its master busy well under a millisecond.
const (
	maxBatchLocks = 512
	maxBatchKeys  = 4096
)

// renewal is one held value kept extended by the renewer. Its fields are
// guarded by renewer.mu; v is the Do call's value's hold, which the
// renewer updates (until, ttl) while the renewal is registered and never
// touches afterwards; h says how it is extended.
type renewal struct {
	v          *hold
	h          heldOp
	ttl        time.Duration
	every      time.Duration // renewal period: ttl*ExtendFraction
	retry      time.Duration // after a failed extension
	due        time.Time     // next extension
	extensions int
	// early: the value counts as lost this long before its validity ends
	// (a leadership's margin, see Election); unbounded: Config.MaxExtensions
	// does not apply.
	early     time.Duration
	unbounded bool
	lost      func(err error) // cancels the work, given err; called once, outside the lock
	err       error           // why the lock was lost; nil while held
	active    bool            // registered
	ok, taken int             // the current batch's votes
	notOurs   restoreMask     // the current batch's masters that answered that the value is not there
	index     int             // position in renewer.entries
	// unreached holds, when its latest extension failed because too few
	// masters could vote (see ErrNoQuorum), what each master did then;
	// nil otherwise. If the validity runs out meanwhile, the loss says so.
	unreached []MasterResult
}

// renewer extends the registered renewals. Its goroutine starts with the
// first registration and is owned by the Client: Close stops it and waits
// for it. Everything else (entries, the renewals' fields) is guarded by mu.
type renewer struct {
	c *Client

	mu      sync.Mutex
	entries []*renewal
	// evMu is held by the goroutine from judging a batch until its events
	// are delivered; unregister waits for it, so that no EventExtended for
	// a lock follows the return of its Do.
	evMu    sync.Mutex
	running bool
	closed  bool
	wake    chan struct{} // capacity 1: entries changed
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when the goroutine has ended

	// Owned by the goroutine.
	batch    []*renewal
	cmd      wire
	fan      fanout
	timer    *time.Timer // until the next renewal is due
	outcomes []Outcome   // per master: its answer to this batch, for Hooks.Master
	// Run once mu is released: hooks and cancellations may call back into
	// the Client.
	lostFn   []func()
	extended []string // keys, for EventExtended
	// restores are the copies to send again after a batch (see
	// restore.go), sent before unregister can return, so that a Do's
	// release follows them on each connection.
	restores []restoreJob
}

// restoreJob is a granted renewal's copies to restore: see
// Client.restoreCopies.
type restoreJob struct {
	h    heldOp
	tok  token
	left time.Duration
	m    restoreMask
}

func newRenewer(c *Client) *renewer {
	return &renewer{
		c:    c,
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
}

// register starts keeping the value v (extended as h says) extended with
// ttl; lost is called (once, from the renewer's goroutine, or from
// register itself on a closed Client) with why, when it is lost. The
// caller must not use v until unregister returns.
func (r *renewer) register(v *hold, h heldOp, ttl time.Duration, lost func(err error)) *renewal {
	return r.add(r.renewal(v, h, ttl, lost))
}

// renewal makes the renewal of v that register adds.
func (r *renewer) renewal(v *hold, h heldOp, ttl time.Duration, lost func(err error)) *renewal {
	cfg := &r.c.cfg
	every := time.Duration(float64(ttl) * cfg.ExtendFraction)
	return &renewal{
		v: v, h: h, ttl: ttl, every: every, retry: max(cfg.MasterTimeout, every/8),
		due: time.Now().Add(every), lost: lost, active: true,
	}
}

// add starts renewing e (see register).
func (r *renewer) add(e *renewal) *renewal {
	h := e.h
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		e.active = false
		e.err = &Error{Op: OpExtend, Key: h.name, Err: errClosedWhileHeld}
		e.lost(e.err)
		return e
	}
	e.index = len(r.entries)
	r.entries = append(r.entries, e)
	if !r.running {
		r.running = true
		go r.loop() // owned by the Client: ends when close closes stop
	}
	r.mu.Unlock()
	r.poke()
	return e
}

// unregister stops renewing e and returns why the lock was lost, or nil if
// it was still held. The renewer never touches e.v afterwards, and every
// event about it has been delivered.
func (r *renewer) unregister(e *renewal) error {
	r.mu.Lock()
	if e.active {
		r.removeLocked(e)
	}
	err := e.err
	r.mu.Unlock()
	// A barrier: a batch judged before the removal delivers its events first.
	r.evMu.Lock()
	//lint:ignore SA2001 the lock is the wait, nothing is guarded here
	r.evMu.Unlock()
	return err
}

func (r *renewer) removeLocked(e *renewal) {
	last := len(r.entries) - 1
	r.entries[e.index] = r.entries[last]
	r.entries[e.index].index = e.index
	r.entries[last] = nil
	r.entries = r.entries[:last]
	e.active = false
}

// errClosedWhileHeld is why a Do's lock is lost when its Client closes.
var errClosedWhileHeld = fmt.Errorf("%w (%w)", ErrNotHeld, ErrClosed)

// close stops the goroutine and waits for it. The renewals still
// registered can no longer be kept: their work is cancelled at once.
func (r *renewer) close() {
	r.mu.Lock()
	now := time.Now()
	r.closed = true
	running := r.running
	var lost []*renewal
	for len(r.entries) > 0 {
		e := r.entries[len(r.entries)-1]
		e.err = &Error{Op: OpExtend, Key: e.h.name, Err: errClosedWhileHeld, Attempts: e.extensions}
		r.removeLocked(e)
		e.v.lostAt(now)
		lost = append(lost, e)
	}
	r.mu.Unlock()
	close(r.stop)
	if running {
		<-r.done
	}
	for _, e := range lost {
		e.lost(e.err)
	}
}

func (r *renewer) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// loseLocked loses e (under mu), known lost at now: it will not be
// renewed again, and its validity ends at now if it had not yet; EventLost
// and its lost callback run once mu is released.
func (r *renewer) loseLocked(e *renewal, err error, now time.Time) {
	e.err = err
	r.removeLocked(e)
	e.v.lostAt(now)
	key, lost := e.h.name, e.lost
	r.lostFn = append(r.lostFn, func() {
		r.c.event(EventLost, key)
		lost(err)
	})
}

// afterUnlock runs what the last pass collected under mu.
func (r *renewer) afterUnlock() {
	for i := range r.restores {
		j := &r.restores[i]
		r.c.restoreCopies(&j.h, &j.tok, j.left, j.m)
		r.restores[i] = restoreJob{}
	}
	r.restores = r.restores[:0]
	for i, k := range r.extended {
		r.c.event(EventExtended, k)
		r.extended[i] = ""
	}
	r.extended = r.extended[:0]
	for i, f := range r.lostFn {
		f()
		r.lostFn[i] = nil
	}
	r.lostFn = r.lostFn[:0]
}

func (r *renewer) loop() {
	defer close(r.done)
	n := len(r.c.masters)
	r.fan = newFanout(r.c, n)
	defer r.fan.release()
	r.outcomes = make([]Outcome, n)
	r.timer = time.NewTimer(time.Hour)
	defer r.timer.Stop()
	for {
		r.evMu.Lock()
		next, deadline := r.prepare()
		r.afterUnlock()
		r.evMu.Unlock()
		if len(r.batch) > 0 {
			start := r.send(deadline)
			r.evMu.Lock()
			r.apply(start)
			r.afterUnlock()
			r.evMu.Unlock()
			continue
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(0, time.Until(next))
		}
		r.timer.Reset(wait)
		select {
		case <-r.timer.C:
		case <-r.wake:
			r.timer.Stop()
		case <-r.stop:
			return
		}
	}
}

// prepare loses the renewals whose validity has ended, picks the batch of
// those due (or due within a quarter of their period) and encodes its
// command. It returns when the next renewal or validity end is due, and
// the earliest validity end of all: the batch must not wait past it.
func (r *renewer) prepare() (next, deadline time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	maxExt := r.c.cfg.MaxExtensions
	r.batch = r.batch[:0]
	keys := 0
	for i := 0; i < len(r.entries); {
		e := r.entries[i]
		until := e.v.until.Add(-e.early)
		if !now.Before(until) {
			err := &Error{Op: OpExtend, Key: e.h.name, Err: ErrNotHeld, Attempts: e.extensions}
			if e.unreached != nil {
				// Run out while too few masters could vote.
				err.Err, err.Masters = errLostNoQuorum, e.unreached
			}
			r.loseLocked(e, err, now)
			continue // e's slot now holds another entry
		}
		i++
		if deadline.IsZero() || until.Before(deadline) {
			deadline = until
		}
		due := e.due
		if maxExt >= 0 && e.extensions >= maxExt && !e.unbounded {
			due = until // no more extensions: hold until the validity ends
		} else if nk := e.batchKeyCount(); !now.Add(e.every/4).Before(due) &&
			len(r.batch) < maxBatchLocks && keys+nk <= maxBatchKeys && r.sameBatch(e) {
			e.ok, e.taken, e.notOurs = 0, 0, 0
			r.batch = append(r.batch, e)
			keys += nk
			continue
		}
		if next.IsZero() || due.Before(next) {
			next = due
		}
		if until.Before(next) {
			next = until
		}
	}
	if len(r.batch) > 0 {
		r.encode(keys)
	}
	return next, deadline
}

// sameBatch reports whether e may join the batch: one batch script
// extends values of one extend command (see command.batch); and over a
// Redis Cluster one script call per copy runs in one slot, so a batch
// holds the values of one place (see Client.placement). The others stay
// due and go in the next batches, one round after another.
func (r *renewer) sameBatch(e *renewal) bool {
	if len(r.batch) == 0 {
		return true
	}
	first := r.batch[0]
	if e.h.cmd.batch != first.h.cmd.batch {
		return false
	}
	return r.c.cluster == nil || r.c.placement(e.h.placed()) == r.c.placement(first.h.placed())
}

// batchKeys are the keys e's entry in a batch sends (see command.batch);
// nil for its key alone.
func (e *renewal) batchKeys() []string {
	if e.h.keys == nil {
		return nil
	}
	ks := e.h.keys[e.h.cmd.batchFrom:]
	if n := e.h.cmd.batchKeys; n > 0 {
		ks = ks[:n]
	}
	return ks
}

// batchKeyCount is how many keys e's entry in a batch sends.
func (e *renewal) batchKeyCount() int { return max(1, len(e.batchKeys())) }

// encode writes the batch's EVALSHA of its command's batch script: per
// value, its keys (from the command's batchFrom on), then the number of
// values and, per value, its token, its TTL and its third argument (its
// heldOp's arg2, else the number of its keys). r.mu is held: the values'
// keys are theirs until unregistered.
func (r *renewer) encode(keys int) {
	first := r.batch[0]
	r.cmd.reset()
	r.cmd.place = r.c.placement(first.h.placed())
	r.cmd.batch(r.c, first.h.cmd.batch, r.batch, keys)
}

// send sends the batch to every master and collects the votes (into the
// batch's renewals: only this goroutine, or the driver while it waits in
// gather, touches ok and taken while they are batched) until all
// answered, MasterTimeout passed, deadline came or the Client closed. It
// returns when the burst left.
func (r *renewer) send(deadline time.Time) time.Time {
	c := r.c
	clear(r.outcomes)
	r.fan.begin(max(0, min(c.patience(r.cmd.place), time.Until(deadline))), c.claimable(r.cmd.place), fitsVotes)
	r.fan.sendAll(&r.cmd)
	r.fan.gather(r, r.stop) // answered after: not counted
	for i, out := range r.outcomes {
		if out == OutcomeNone {
			r.outcomes[i] = OutcomeTimeout
		}
	}
	start := r.fan.start
	if h := c.cfg.Hooks.Master; h != nil {
		took := time.Since(start)
		for i := range c.masters {
			h(OpExtend, r.fan.sentTo[i].Addr(), r.outcomes[i], took)
		}
	}
	return start
}

// gathered notes master req.Tag's outcome (see count); the batch waits
// for every master (see fanout.gather).
func (r *renewer) gathered(req *pipe.Request) bool {
	r.outcomes[req.Tag] = r.count(req)
	return false
}

// count adds one master's answer to the batch's votes and returns the
// master's outcome. A master the restart guard holds out answers, but its
// yes votes do not count.
func (r *renewer) count(req *pipe.Request) Outcome {
	if req.Err() != nil {
		return OutcomeConnError
	}
	vals := req.Reply()
	if len(vals) == 0 || vals[0].IsError() {
		return OutcomeServerError
	}
	if vals[0].Type != resp.TypeArray || int(vals[0].Int) != len(r.batch) || len(vals) != 1+len(r.batch) {
		return OutcomeServerError
	}
	_, _, guarded := r.c.guarded(r.c.masters[req.Tag], r.fan.sentTo[req.Tag], time.Now())
	for j, e := range r.batch {
		// Each entry answers as Extend's script does (answerVote).
		switch out, _ := readVote(nil, nil, req.Tag, vals[1+j:2+j]); {
		case out == OutcomeOK && !guarded:
			e.ok++
		case out == OutcomeTaken:
			e.taken++
			e.notOurs.add(req.Tag)
		}
	}
	if guarded {
		return OutcomeGuarded
	}
	return OutcomeOK
}

// apply judges each renewal of the batch on its own votes, as Extend
// would: extended (validity counted from start), lost, or retried soon.
func (r *renewer) apply(start time.Time) {
	c := r.c
	n, q := len(c.masters), c.quorum
	// What the masters did, when too few could vote on this batch: shared
	// by its renewals (made once, on this failure path only).
	var unreached []MasterResult
	silent := 0
	for _, out := range r.outcomes {
		if out != OutcomeOK && out != OutcomeGuarded {
			silent++
		}
	}
	if silent > n-q {
		unreached = make([]MasterResult, n)
		for i, out := range r.outcomes {
			unreached[i] = MasterResult{Addr: r.fan.sentTo[i].Addr(), Outcome: out}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for i, e := range r.batch {
		r.batch[i] = nil
		if !e.active {
			continue // unregistered meanwhile
		}
		until := c.validUntil(start, e.ttl)
		granted, gone := c.extension(e.ok, e.taken, until, e.v.until, now)
		switch {
		case granted:
			e.v.until, e.v.ttl = until, e.ttl
			e.extensions++
			e.due = now.Add(e.every)
			e.unreached = nil
			if e.notOurs != 0 && e.h.cmd.restore != restoreNone {
				r.restores = append(r.restores, restoreJob{h: e.h, tok: e.v.tok, left: e.ttl - now.Sub(start), m: e.notOurs})
			}
			if c.cfg.Hooks.Event != nil {
				r.extended = append(r.extended, e.h.name)
			}
		case gone:
			r.loseLocked(e, &Error{Op: OpExtend, Key: e.h.name, Err: ErrNotHeld, Attempts: e.extensions}, now)
		case !now.Before(e.v.until.Add(-e.early)):
			err := &Error{Op: OpExtend, Key: e.h.name, Err: ErrNotHeld, Attempts: e.extensions}
			if unreached != nil {
				err.Err, err.Masters = errLostNoQuorum, unreached
			}
			r.loseLocked(e, err, now)
		default:
			e.due = now.Add(e.retry)
			e.unreached = unreached
		}
	}
	r.batch = r.batch[:0]
}
