package redlock

import (
	"context"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
)

// A kind is one sort of held value: a Lock of one key or of several
// (lockKind), a read-write lock's writer (rwWriter) and reader (rwReader),
// a semaphore's permit (Semaphore). Each is taken by the one loop below,
// Client.acquire, and its retry policy (retry): a kind says what one
// attempt sends and how its failures read, and nothing else.
//
// A kind's attempt sends the op's token (op.tok) and returns what it took
// (taken); the caller builds its value from the two.
type kind interface {
	// traits are the kind's fixed facts: its name, and how the loop
	// treats its failed attempts.
	traits() kindTraits
	// attempt makes one attempt with token o.tok for ttl (with a fenced
	// Client, both rounds): the burst's result, what it took (its
	// validity's end, and its fencing token when fenced), and whether it
	// was taken within its validity. Fencing counters are repaired as the
	// answers call for (repairIfUnsure).
	attempt(o *call, ttl time.Duration, done <-chan struct{}) (br burstResult, got taken, ok bool)
	// releaseFailed sends the release of a failed attempt's token, o.tok,
	// to every master that may hold it, without waiting; waking waiters
	// if wake (the caller has noted the release as its own).
	releaseFailed(o *call, wake bool)
}

// choosingKind is a kind that chooses what each attempt asks for (a
// semaphore's permit).
type choosingKind interface {
	kind
	// freeOnQuorum prepares the next attempt after a failed one and
	// reports whether what it asks for is free on a quorum already (a
	// permit other than the one asked for): it then goes at once.
	freeOnQuorum(o *call) bool
}

// kindTraits are the fixed facts about a kind that the loop and the retry
// policy read.
type kindTraits struct {
	// name is what errors, hooks and events name; waiters wait on its
	// channel.
	name string
	// wrongKind is the error that ends the call at once when a master
	// answered that it keeps the name for another kind (see mismatched).
	wrongKind error
	// waitKeys are the keys whose releases wake the call's waiter: nil for
	// the name alone, which also makes the waiter one that Unlock may hand
	// a lock to (see Lock.Unlock).
	waitKeys []string
	// exclusive: one holder at a time, whose id a taken answer names (see
	// contention). A new call queues behind this Client's waiters of the
	// name, and a failed one waits as long as the holder holds.
	exclusive bool
	// shared: holders share the name (a reader); its waiters are woken
	// together (see waitRoom.joinShared).
	shared bool
	// looks: a wait for the holder that runs out looks at the name's key
	// before attempting (see peek.go): a Lock of one key.
	looks bool
}

// taken is what an acquire call took, beside the op's token (op.tok):
// the end of its validity, its fencing token (Config.Fencing, else 0),
// and, for a lock handed over by an Unlock of this Client, the hand-overs
// in a row that led to it (see Lock.Unlock).
type taken struct {
	until  time.Time
	fence  uint64
	passes int
	run    int64 // a hand-over's run of holds (see turns.go); 0 from the masters
	looped bool  // see turns.taken
}

// acquire takes k for ttl: attempts until one succeeds, tries have failed,
// or ctx ends, the loop every kind shares. What follows a failed attempt
// is the retry policy's (see retry.after). On success it returns what was
// taken, whose token is o.tok. The caller owns o.
func (c *Client) acquire(ctx context.Context, o *call, k kind, ttl time.Duration, tries int) (got taken, err error) {
	traits := k.traits()
	name := traits.name
	if c.closed.Load() {
		return taken{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return taken{}, &Error{Op: OpLock, Key: name, Err: ctxerr.Of(ctx)}
	}
	o.hasLast = false
	attempt := 1
	if h := c.cfg.Hooks.Call; h != nil {
		if _, end := h(ctx, OpLock, name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: attempt, Masters: o.res}) }()
		}
	}
	done := ctx.Done()
	r := retry{c: c, ctx: ctx, name: name, traits: traits, tries: tries, ttl: ttl}
	defer func() {
		o.waiting = false
		r.leave(o, err == nil)
	}()
	if err := r.queue(o); err != nil {
		return taken{}, err
	}
	if o.yield && r.w == nil && r.traits.exclusive && tries > 1 {
		r.join() // behind the waiter this Client's release woke (see turns.go)
	}
	for ; ; attempt++ {
		r.begin()
		if c.closed.Load() {
			return taken{}, ErrClosed
		}
		if g, ok := r.gift(); ok {
			if got, ok := c.takeHandover(name, ttl, g, o, done); ok {
				return got, nil
			}
			if ctx.Err() != nil {
				return taken{}, o.res.ended(ctx, c.quorum, name, attempt)
			}
			// Not passed on (the lock was lost meanwhile): attempt.
		}
		o.tok = newToken()
		// Once waiting, a failed attempt hears every master out: it then
		// knows who holds what where.
		o.waiting = r.waiting()
		if o.waiting {
			o.since = r.w.since
		}
		br, got, ok := k.attempt(o, ttl, done)
		if ok {
			c.event(EventAcquired, name)
			return got, nil
		}
		// Quietly, unless it may have landed on a quorum: a waiter may then
		// have seen this attempt as the holder, and waits for its release.
		wake := o.res.mayHoldQuorum(c.quorum)
		if wake {
			c.room.noteOwn(o.tok.releaseID())
		}
		k.releaseFailed(o, wake)
		c.event(EventFailed, name)
		if br.cancelled {
			if o.hasLast {
				o.res.learned(o.last)
			}
			return taken{}, o.res.ended(ctx, c.quorum, name, attempt)
		}
		if o.res.mismatched() {
			return taken{}, o.res.error(OpLock, name, traits.wrongKind, attempt)
		}
		if o.res.denied(c.quorum) {
			return taken{}, o.res.error(OpLock, name, ErrNoPermission, attempt)
		}
		copy(o.last, o.res)
		o.hasLast = true
		var aerr error = ErrNotAcquired // contention alone: no allocation
		switch {
		case br.failed > 0 && o.res.noQuorum(c.quorum):
			aerr = o.res.error(OpLock, name, ErrNoQuorum, attempt)
		case br.failed > 0 || br.ok >= c.quorum:
			// Faults, or a quorum whose validity ran out.
			aerr = o.res.error(OpLock, name, ErrNotAcquired, attempt)
		}
		if err := r.after(o, k, &br, attempt, aerr); err != nil {
			return taken{}, err
		}
	}
}

// granted reports whether a burst br, whose validity ends at until, took
// what it asked for: not cancelled, a quorum's yes, and still valid.
func (c *Client) granted(br *burstResult, until time.Time) bool {
	return !br.cancelled && br.ok >= c.quorum && time.Now().Before(until)
}

// rounds is every kind's attempt: it encodes cmd with a and runs it, an
// attempt for ttl, and judges it (see judge). When fenced, the burst
// proposes a fencing token (proposeFence, as a.proposal) and a second
// round follows as the answers call for (fenceRound), whose counter is
// that of fenceKey (fenceKeys, when not nil): the lock's key or keys, a
// writer's name, a permit's key.
func (c *Client) rounds(o *call, cmd *command, a args, fenced bool, fenceKey string, fenceKeys []string, ttl time.Duration, done <-chan struct{}) (burstResult, taken, bool) {
	var proposal uint64
	if fenced {
		proposal = c.proposeFence(o)
		a.proposal = o.fenceNum
	}
	o.encode(cmd, a)
	br := o.run(done)
	got := taken{until: c.validUntil(br.start, ttl)}
	if fenced {
		var unfenced bool
		got.fence, unfenced = c.fenceRound(o, &br, proposal, fenceKey, fenceKeys, &o.tok, got.until, done)
		if !br.cancelled {
			c.repairIfUnsure(&o.op, unfenced)
		}
	}
	return br, got, c.judge(o, &br, got.until)
}
