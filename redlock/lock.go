package redlock

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
)

// Lock is a held lock: a small value, returned without allocation. Copy it
// freely, but Extend and Unlock one copy only: Extend updates the copy it is
// called on. The zero Lock holds nothing.
type Lock struct {
	c     *Client
	key   string  // the only key, or the first (in sorted order) of keys
	keys  *keySet // a LockMulti's keys; nil for a single key
	tok   token
	ttl   time.Duration
	until time.Time // end of validity, on the monotonic clock
	since time.Time // when it was acquired; zero once Hooks.Held was told it ended
	fence uint64    // the fencing token (Config.Fencing), else 0
	// passes is how many hand-overs in a row (see Unlock) led to this
	// lock since it was last taken on the masters.
	passes int
}

// Key returns the locked key; for a lock on several keys (LockMulti), the
// first in sorted order.
func (l *Lock) Key() string { return l.key }

// Keys returns the locked keys, sorted and without duplicates: one for a
// lock from Lock or TryLock. The slice is the Lock's; do not modify it. It
// is valid until Unlock returns.
func (l *Lock) Keys() []string {
	if l.keys != nil {
		return l.keys.keys
	}
	if l.c == nil {
		return nil
	}
	return []string{l.key}
}

// keyList is the keys argument of op.encode: nil for a single key.
func (l *Lock) keyList() []string {
	if l.keys == nil {
		return nil
	}
	return l.keys.keys
}

// Until returns when the lock's validity ends (holding a monotonic clock
// reading: compare it with time.Now, not with wall-clock times from
// elsewhere).
func (l *Lock) Until() time.Time { return l.until }

// Validity returns how long the lock is still valid: the time the holder
// may safely work. Zero or negative means the lock must be taken as lost.
func (l *Lock) Validity() time.Duration {
	if l.c == nil {
		return 0
	}
	return time.Until(l.until)
}

// TTL returns the TTL the lock was acquired or last extended with.
func (l *Lock) TTL() time.Duration { return l.ttl }

// TryLock makes exactly one attempt to acquire key for ttl on a quorum of
// masters. It returns ErrNotAcquired (as is, without allocating) when the
// lock is held by others, an *Error wrapping ErrNotAcquired when masters
// failed, or an *Error wrapping ctx's error when ctx ended first.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration) (Lock, error) {
	if err := c.checkTTL(ttl); err != nil {
		return Lock{}, err
	}
	return c.acquire(ctx, key, nil, nil, ttl, 1)
}

// Lock acquires key for ttl, waiting for it while someone else holds it,
// until it succeeds, Config.Tries attempts have failed, or ctx ends. Errors
// are those of TryLock. When ctx ends, the *Error keeps what each master
// said in the last attempt it answered (taken, the restart guard, a
// connection error), not "cancelled".
//
// A Lock that the restart guard alone keeps from a quorum (masters that
// started less than Config.MaxTTL ago) waits for the guard's end, known
// from their uptime, and then attempts; when ctx would end first, it
// fails at once with ErrNotAcquired in an *Error that names the guard.
//
// A Lock that finds the key taken waits for the holder's release: the
// release wakes it through pub/sub, and it attempts again at once, about a
// round trip after the release (see "Waiting" in the package
// documentation). Each wait is bounded by Config.RetryDelay's random delay
// (shorter when the key's TTL ends sooner), so a lost wake-up costs at most
// that. Of several waiters of one key in one Client, a release wakes the
// longest waiting; a new Lock of that key queues behind them, and an
// Unlock in the same Client hands the lock to the longest waiting directly
// (see Unlock).
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration) (Lock, error) {
	if err := c.checkTTL(ttl); err != nil {
		return Lock{}, err
	}
	return c.acquire(ctx, key, nil, nil, ttl, c.cfg.Tries)
}

// lockSpec is how a lock on one key is taken when not by a Lock's own
// command: a read-write lock's writer, whose script (cmd) also looks at
// the readers' keys (keys, the key first). The lock it gives is a Lock of
// that key, extended and released as any.
type lockSpec struct {
	cmd *command // the attempts' command
	// fenced is the attempts' command when the Client fences
	// (Config.Fencing): cmd's that also proposes a token; nil if the
	// locks carry none.
	fenced *command
	keys   []string
}

// waitFlag is a lockSpec command's flag for a waiting attempt: "1", else
// "0" (scripts.RWLock).
func waitFlag(waiting bool) []byte {
	if waiting {
		return flagWake
	}
	return flagQuiet
}

// acquire takes key, or keys when not nil (key is then keys.keys[0]); on
// failure keys goes back to its pool. With spec, the attempts run its
// command instead (fenced as a Lock's when the spec has a fenced
// command). It is a loop of an attempt and what the call's retry policy
// makes of its failure (see retry).
func (c *Client) acquire(ctx context.Context, key string, keys *keySet, spec *lockSpec, ttl time.Duration, tries int) (_ Lock, err error) {
	defer func() {
		if err != nil && keys != nil {
			keys.release()
		}
	}()
	var keyList []string
	if keys != nil {
		keyList = keys.keys
	}
	if err := c.checkKeys(key, keyList); err != nil {
		return Lock{}, err
	}
	if c.closed.Load() {
		return Lock{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return Lock{}, &Error{Op: OpLock, Key: key, Err: ctxerr.Of(ctx)}
	}
	o := c.getOp()
	defer c.putOp(o)
	o.hasLast = false
	attempt := 1
	if h := c.cfg.Hooks.Call; h != nil {
		if _, end := h(ctx, OpLock, key); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: attempt, Masters: o.res}) }()
		}
	}
	done := ctx.Done()
	r := retry{c: c, ctx: ctx, key: key, keys: keyList, tries: tries}
	defer func() {
		o.waiting = false
		r.leave(o, err == nil)
	}()
	if err := r.queue(o); err != nil {
		return Lock{}, err
	}
	for ; ; attempt++ {
		r.begin()
		if c.closed.Load() {
			return Lock{}, ErrClosed
		}
		if g, ok := r.gift(); ok {
			if l, ok := c.takeHandover(key, ttl, g, o, done); ok {
				return l, nil
			}
			if ctx.Err() != nil {
				return Lock{}, o.error(OpLock, key, ctxerr.Of(ctx), attempt)
			}
			// Not passed on (the lock was lost meanwhile): attempt.
		}
		tok := newToken()
		o.waiting = r.waiting()
		l, br, took, unfenced, ok := c.attempt(o, key, keys, keyList, spec, &tok, ttl, done)
		if ok {
			return l, nil
		}
		err := c.failed(o, key, keyList, &tok, &br, unfenced, attempt)
		if br.cancelled {
			o.learned()
			return Lock{}, o.error(OpLock, key, ctxerr.Of(ctx), attempt)
		}
		if o.mismatched() {
			return Lock{}, o.error(OpLock, key, ErrWrongKind, attempt)
		}
		if o.denied() {
			return Lock{}, o.error(OpLock, key, ErrNoPermission, attempt)
		}
		if err := r.after(o, &tok, &br, took, attempt, err); err != nil {
			return Lock{}, err
		}
	}
}

// attempt makes one acquire attempt with token tok on key, or keys (whose
// keys.keys is keyList) when not nil: the burst, and for a fenced lock its
// second round. It returns the lock when it was taken (ok), else the
// burst's result (br.cancelled when done closed first); took is how long
// the first burst took, unfenced whether a master without a fencing
// counter it vouches for took part in the first round.
func (c *Client) attempt(o *op, key string, keys *keySet, keyList []string, spec *lockSpec, tok *token, ttl time.Duration, done <-chan struct{}) (l Lock, br burstResult, took time.Duration, unfenced, ok bool) {
	var proposal uint64
	fenced := c.cfg.Fencing && (spec == nil || spec.fenced != nil)
	if fenced {
		proposal = o.proposeFence()
	}
	switch {
	case spec == nil:
		o.encode(c.lockCommand(keyList != nil, o.waiting), key, keyList, tok, o.ttlArg(ttl), nil, o.fenceNum)
	case fenced:
		o.encode(spec.fenced, key, spec.keys, tok, o.ttlArg(ttl), waitFlag(o.waiting), o.fenceNum)
	default:
		o.encode(spec.cmd, key, spec.keys, tok, o.ttlArg(ttl), waitFlag(o.waiting), nil)
	}
	br = o.run(done)
	took = time.Since(br.start)
	until := c.validUntil(br.start, ttl)
	var fence uint64
	if fenced {
		fence, unfenced = c.fenceRound(o, &br, proposal, key, keyList, tok, until, done)
	}
	o.report(OpLock)
	if br.cancelled || br.ok < c.quorum || !time.Now().Before(until) {
		return Lock{}, br, took, unfenced, false
	}
	if fence != 0 {
		c.repairIfUnsure(o, unfenced)
	}
	c.event(EventAcquired, key)
	l = Lock{c: c, key: key, keys: keys, tok: *tok, ttl: ttl, until: until, fence: fence}
	if c.cfg.Hooks.Held != nil {
		l.since = time.Now()
	}
	return l, br, took, unfenced, true
}

// failed deals with failed attempt number attempt (token tok, burst br):
// it releases wherever the attempt's SET may have landed, has fencing
// counters repaired when a master without one took part, keeps what the
// masters said (see learned), and returns the attempt's error:
// ErrNotAcquired as is for contention alone, else an *Error (nil when br
// was cancelled: the caller builds that error).
func (c *Client) failed(o *op, key string, keyList []string, tok *token, br *burstResult, unfenced bool, attempt int) error {
	// Quietly, unless it may have landed on a quorum: a waiter may then
	// have seen this attempt as the holder, and waits for its release.
	o.releaseAfterFailure(key, keyList, tok, o.mayHoldQuorum())
	c.event(EventFailed, key)
	if br.cancelled {
		return nil
	}
	if c.cfg.Fencing {
		c.repairIfUnsure(o, unfenced)
	}
	copy(o.last, o.res)
	o.hasLast = true
	if br.failed == 0 && br.ok < c.quorum {
		return ErrNotAcquired // contention alone: no allocation
	}
	// Faults, or a quorum whose validity ran out.
	return o.error(OpLock, key, ErrNotAcquired, attempt)
}

// guardEnds reports, after a failed attempt, whether the restart guard
// alone kept it from a quorum: counting the masters that said yes and
// those the guard held out, a quorum is there. end is when the guard lets
// a quorum of them count (the quorum-th of their guards to end).
func (o *op) guardEnds() (end time.Time, ok bool) {
	now := time.Now()
	guarded := false
	for i := range o.res {
		switch o.res[i].Outcome {
		case OutcomeOK:
			o.free[i] = 0
		case OutcomeGuarded:
			o.free[i] = max(0, o.res[i].GuardedUntil.Sub(now))
			guarded = true
		default:
			o.free[i] = never
		}
	}
	in, ok := o.quorumFreeIn()
	if !guarded || !ok {
		return time.Time{}, false
	}
	return now.Add(in), true
}

// driftFloor is the part of the clock-drift allowance that does not scale
// with the TTL: the Redlock spec's "few milliseconds" for the masters'
// expiry resolution and the client's own timing.
const driftFloor = 2 * time.Millisecond

// validUntil is when a lock set (or extended) for ttl by a burst that left
// at start stops being valid: ttl less the drift allowance,
// ttl*DriftFactor + driftFloor, counted from start.
func (c *Client) validUntil(start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl - c.drift(ttl))
}

// drift is the clock-drift allowance of a lock of ttl: ttl*DriftFactor +
// driftFloor.
func (c *Client) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*c.cfg.DriftFactor) + driftFloor
}

// retryDelay is the pause after failed attempt number attempt.
func (c *Client) retryDelay(attempt int) time.Duration {
	if c.cfg.RetryDelayFunc != nil {
		return c.cfg.RetryDelayFunc(attempt)
	}
	d := c.cfg.RetryDelay
	return d/2 + rand.N(d/2+1)
}

// mayHoldQuorum reports whether a failed attempt's token may be on a
// quorum of masters: those that said yes, plus those whose answer is not
// known (the SET may have run). Only then can anyone have seen it as the
// holder.
func (o *op) mayHoldQuorum() bool {
	n := 0
	for i := range o.res {
		if out := o.res[i].Outcome; out != OutcomeTaken && out != OutcomeServerError {
			n++
		}
	}
	return n >= o.c.quorum
}

// releaseAfterFailure sends the release script to every master that said
// yes or did not answer for certain (a reply may be lost after the SET ran),
// without waiting: each Conn keeps commands in order, so the release runs
// after our SET on that master. A master that answered "taken" holds
// nothing of ours and is skipped.
func (o *op) releaseAfterFailure(key string, keys []string, tok *token, wake bool) {
	if wake {
		o.c.room.noteOwn(tok.releaseID())
	}
	o.encode(releaseCommand(keys != nil, wake), key, keys, tok, nil, nil, nil)
	o.sendForget(true)
}

// sendForget sends o.cmd (an EVAL: no one will read a NOSCRIPT answer) to
// every master, without waiting; with skipTaken, not to those whose
// outcome in o.res is OutcomeTaken (they hold nothing of ours).
func (o *op) sendForget(skipTaken bool) {
	for i := range o.c.masters {
		if skipTaken && o.res[i].Outcome == OutcomeTaken {
			continue
		}
		o.forget(i)
	}
}

// Extend resets the lock's TTL to ttl on every master that still holds it,
// and succeeds if a quorum did within the validity, which it then renews
// (counted from the moment Extend sent its commands). It never re-creates a
// key that expired. It returns ErrNotHeld (possibly inside an *Error) when
// the lock is lost, ErrExtendFailed when a quorum could not be reached but
// the lock is not known lost (its previous validity stands), or ctx's error.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if l.c == nil || l.Validity() <= 0 {
		return ErrNotHeld
	}
	h := heldOp{name: l.key, cmd: extendCommand(l.keyList() != nil), key: l.key, keys: l.keyList()}
	lost, err := l.c.extendHeld(ctx, &h, &l.tok, ttl, &l.until, &l.ttl)
	if lost {
		l.ended()
	}
	return err
}

// Unlock releases the lock on every master. It returns nil if a quorum
// released it, ErrNotHeld (possibly inside an *Error) if it was no longer
// ours (expired, or taken over), an *Error wrapping ErrUnlockFailed if too
// few masters answered in time to tell (the silent ones may keep the key
// until its TTL ends). It is meant for defer: it sends the
// release even when ctx has already ended, and waits at most
// Config.MasterTimeout for the answers (less if a live ctx ends sooner).
//
// When a Lock of the same Client waits for the key (a single-key lock,
// without Fencing, handed over fewer than Config.LocalHandoffs times in a
// row), Unlock instead hands the still valid lock to the longest waiting
// such Lock and returns nil at once, without a round trip; that Lock
// takes the key over with a token of its own (see "Waiting" in the package
// documentation). Either way, this Lock (and every copy of it) no longer
// holds the key: a second Unlock returns ErrNotHeld.
func (l *Lock) Unlock(ctx context.Context) (err error) {
	c := l.c
	if c == nil {
		return ErrNotHeld
	}
	if c.closed.Load() {
		return ErrClosed
	}
	done := ctx.Done()
	if ctx.Err() != nil {
		done = nil // already ended: wait our own timeout instead
	}
	o := c.getOp()
	defer c.putOp(o)
	results := o.res
	if h := c.cfg.Hooks.Call; h != nil {
		if _, end := h(ctx, OpUnlock, l.key); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: 1, Masters: results}) }()
		}
	}
	if l.handOver() {
		results = nil // no master took part
		c.event(EventHandedOver, l.key)
		l.ended()
		return nil
	}
	o.encode(releaseCommand(l.keyList() != nil, true), l.key, l.keyList(), &l.tok, nil, nil, nil)
	br := o.run(done)
	o.report(OpUnlock)
	l.until = time.Time{}
	defer l.releaseKeys()
	ended, err := o.releaseVerdict(ctx, &br, l.key)
	if ended {
		l.ended()
	}
	return err
}

// ended tells Hooks.Held, once, that the lock ended.
func (l *Lock) ended() {
	if h := l.c.cfg.Hooks.Held; h != nil && !l.since.IsZero() {
		h(l.key, time.Since(l.since))
		l.since = time.Time{}
	}
}

// learned puts back, into the results of a burst that ctx's end cut
// short, what each master said in the Lock's latest decided attempt
// where this burst learned nothing (cancelled, or not awaited): the error
// then says what kept the lock away (the guard, another holder, a dead
// master) rather than "cancelled" everywhere.
func (o *op) learned() {
	if !o.hasLast {
		return
	}
	for i := range o.res {
		if out := o.res[i].Outcome; out == OutcomeCancelled || out == OutcomeNone {
			o.res[i] = o.last[i]
		}
	}
}

// error builds an *Error from the op's results (allocating: error path).
func (o *op) error(op Op, key string, kind error, attempts int) error {
	return &Error{Op: op, Key: key, Err: kind, Attempts: attempts, Masters: append([]MasterResult(nil), o.res...)}
}

// report calls the Master hook for each master's outcome.
func (o *op) report(kind Op) {
	h := o.c.cfg.Hooks.Master
	if h == nil {
		return
	}
	for i := range o.res {
		h(kind, o.res[i].Addr, o.res[i].Outcome, o.res[i].Latency)
	}
}

func (c *Client) event(ev Event, key string) {
	if h := c.cfg.Hooks.Event; h != nil {
		h(ev, key)
	}
}
