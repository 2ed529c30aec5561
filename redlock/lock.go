package redlock

import (
	"context"
	"time"
)

// Lock is a held lock: a small value, returned without allocation. Copy it
// freely, but Extend and Unlock one copy only: Extend updates the copy it is
// called on. The zero Lock holds nothing.
type Lock struct {
	c    *Client
	key  string  // the only key, or the first (in sorted order) of keys
	keys *keySet // a LockMulti's keys; nil for a single key
	hold
	since time.Time // when it was acquired; zero once Hooks.Held was told it ended
	fence uint64    // the fencing token (Config.Fencing), else 0
	// passes is how many hand-overs in a row (see Unlock) led to this
	// lock since it was last taken on the masters.
	passes int
	// run is when this Client's run of holds of the key began, unix ns;
	// looped, whether its Lock began while the wake of this Client's
	// previous release of the key was due (see turns.go).
	run    int64
	looped bool
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

// keyList is the keys of the Lock's args (see op.encode): nil for a single key.
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
	return l.validity()
}

// TTL returns the TTL the lock was acquired or last extended with.
func (l *Lock) TTL() time.Duration { return l.ttl }

// TryLock makes exactly one attempt to acquire key for ttl on a quorum of
// masters. It returns ErrNotAcquired (as is, without allocating) when the
// lock is held by others, an *Error wrapping ErrNotAcquired when it is
// held by others and some masters failed, an *Error wrapping ErrNoQuorum
// when too few masters could vote for a quorum to have been possible (an
// outage, see ErrNoQuorum), or an *Error wrapping ctx's error when ctx
// ended first.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration) (Lock, error) {
	return c.lock(ctx, key, nil, ttl, 1)
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
// A Lock whose attempt too few masters could vote on (ErrNoQuorum: they
// are down, refuse connections, time out) waits Config.RetryDelay's
// random delay and attempts again, without waiting for a release, until
// they are back, its tries run out (it then returns ErrNoQuorum) or ctx
// ends (its error then matches ErrNoQuorum too).
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
	return c.lock(ctx, key, nil, ttl, c.cfg.Tries)
}

// lockKind is a Lock as a kind (see acquire): of key alone, or of keys
// when not nil (a LockMulti's, sorted: key is then keys[0]). It lives in
// the Lock's call (call.lk).
type lockKind struct {
	key  string
	keys []string
	ttl  time.Duration // the call's: a failed waiting attempt's release puts the Client back for as long (see releaseFailed)
}

// lock takes key, or keys when not nil (key is then keys.keys[0]), by the
// acquire loop; on failure keys goes back to its pool.
func (c *Client) lock(ctx context.Context, key string, keys *keySet, ttl time.Duration, tries int) (Lock, error) {
	k := lockKind{key: key, ttl: ttl}
	if keys != nil {
		k.keys = keys.keys
	}
	err := c.checkTTL(ttl)
	if err == nil {
		err = c.checkKeys(key, k.keys)
	}
	if err != nil {
		if keys != nil {
			keys.release()
		}
		return Lock{}, err
	}
	o := c.getOp()
	defer c.putOp(o)
	o.lk = k
	o.yield = keys == nil && c.turns.begin(key)
	got, err := c.acquire(ctx, o, &o.lk, ttl, tries)
	o.yield = false
	if err != nil {
		if keys != nil {
			keys.release()
		}
		return Lock{}, err
	}
	if keys == nil && got.run == 0 {
		got.run, got.looped = c.turns.taken(key)
	}
	return c.held(o, got, key, keys, ttl), nil
}

// held is the Lock on key (or keys) that an acquire call with o took.
func (c *Client) held(o *call, got taken, key string, keys *keySet, ttl time.Duration) Lock {
	l := Lock{c: c, key: key, keys: keys, hold: hold{tok: o.tok, ttl: ttl, until: got.until}, fence: got.fence, passes: got.passes, run: got.run, looped: got.looped}
	if c.cfg.Hooks.Held != nil {
		l.since = time.Now()
	}
	return l
}

func (k *lockKind) traits() kindTraits {
	return kindTraits{name: k.key, wrongKind: ErrWrongKind, waitKeys: k.keys, exclusive: true, looks: k.keys == nil}
}

// attempt sends the Lock's command (see lockCommand) and, fenced, its
// second round.
func (k *lockKind) attempt(o *call, ttl time.Duration, done <-chan struct{}) (burstResult, taken, bool) {
	c := o.c
	cmd := c.lockCommand(k.keys != nil, o.waiting)
	a := args{key: k.key, keys: k.keys, tok: &o.tok, arg: o.ttlArg(ttl), arg2: o.enrolment(cmd)}
	br, got, ok := c.rounds(o, cmd, a, c.cfg.Fencing, k.key, k.keys, ttl, done)
	if ok && cmd.enroll && !noLeaveWhereLost {
		c.leaveWaiters(k.key, &o.op) // see waiters.go
	}
	return br, got, ok
}

// judge reports an attempt's burst br (see report) and whether it won the
// lock, valid until until (see Client.granted).
func (c *Client) judge(o *call, br *burstResult, until time.Time) bool {
	c.report(o.res, OpLock)
	return o.c.granted(br, until)
}

// releaseFailed releases a failed attempt (see releaseAfterFailure). A
// waiting attempt at one key that set the key on some masters took this
// Client off their waiters there (scripts.LockWait), while it stays
// enrolled where it lost: its quiet release puts it back (the enrolling
// form of scripts.ReleaseQuiet), so that every master names the same
// Client at the next release (see waiters.go).
func (k *lockKind) releaseFailed(o *call, wake bool) {
	if o.waiting && k.keys == nil && !wake && !noRejoin {
		o.encode(&cmdReleaseRejoin, args{key: k.key, tok: &o.tok, arg: o.ttlArg(k.ttl), arg2: o.enrolment(&cmdReleaseRejoin)})
		o.sendForget(true)
		return
	}
	o.releaseAfterFailure(k.key, k.keys, &o.tok, wake)
}

// Extend resets the lock's TTL to ttl on every master that still holds it,
// and succeeds if a quorum did within the validity, which it then renews
// (counted from the moment Extend sent its commands). A granted extension
// also sends the lock again, with what remains of ttl, to each master
// that answered by the decision that it no longer had it (its key expired
// there while the master was cut off, or the master restarted empty;
// Do's renewals hear every master), where the key is absent: such a
// copy is never counted as a vote (see "Restored copies" in
// docs/design.md). A refused extension re-creates nothing.
//
// It returns ErrNotHeld (possibly inside an *Error) when the lock is lost
// (Until is then the moment that was known, or earlier, and Validity not
// positive), ErrExtendFailed when a quorum could not be reached but the
// lock is not known lost (its previous validity stands), or ctx's error.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if l.c == nil || l.Validity() <= 0 {
		return ErrNotHeld
	}
	h := l.extendOp()
	lost, err := l.c.extendHeld(ctx, &h, &l.hold, ttl)
	if lost {
		l.ended()
	}
	return err
}

// extendOp is how the lock is extended (by Extend and Do's renewer).
func (l *Lock) extendOp() heldOp {
	return heldOp{name: l.key, cmd: extendCommand(l.keyList() != nil), key: l.key, keys: l.keyList()}
}

// Unlock releases the lock on every master. It returns nil if a quorum
// released it, ErrNotHeld (possibly inside an *Error) if it was no longer
// ours (expired, or taken over), an *Error wrapping ErrUnlockFailed if too
// few masters answered in time to tell (the silent ones may keep the key
// until its TTL ends). It is meant for defer: it sends the
// release even when ctx has already ended, and returns as soon as the
// answers tell (a quorum released it, or so many said it was not theirs
// that no quorum can). While too few have answered to tell, it waits for
// the rest up to half a second (Config.MasterTimeout, if that is longer),
// or up to a second when a quorum of masters
// has lately been answering later than that (see "Slow masters" in the
// package documentation); less if a live ctx ends sooner.
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
	var cutoff []byte
	if l.keys == nil {
		o.num = c.turnCutoff(o.num[:0], l.run)
		cutoff = o.num
	}
	o.encode(releaseCommand(l.keyList() != nil, true), args{key: l.key, keys: l.keyList(), tok: &l.tok, arg: cutoff})
	o.learn.woke, o.learn.asleep = 0, 0
	br := o.run(done)
	if l.keys == nil {
		// A waiter of this Client is woken here, whatever the masters
		// woke: it may be off the key's waiters (this Lock took the
		// Client off them when it took the key), and then no release
		// publishes for it once nobody else waits. Its attempt enrolls
		// it again, or takes the key.
		c.room.wakeOne(l.key)
	}
	if cutoff != nil {
		c.turns.released(c, l.key, &l.tok, l.run, l.looped, o.learn.woke, o.learn.asleep)
	}
	c.report(o.res, OpUnlock)
	l.until = time.Time{}
	defer l.releaseKeys()
	ended, err := c.releaseVerdict(ctx, o.res, &br, l.key)
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
