package redlock

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
)

// maxFreeAttempts bounds the attempts in a row that do not count toward
// Config.Tries (those a release woke, and the quick retries after split
// votes). Each needs a release heard or a split vote; a handful in a row
// is a lock changing hands often, more is a Lock that keeps losing, and
// its next attempt counts.
const maxFreeAttempts = 8

// retry is an acquire call's retry policy, apart from its attempts: which
// attempts count toward tries, and how long to wait after a failed one
// (for a release, the restart guard's end, a back-off after split votes).
// It owns the call's waiter in the Client's wait room, from the first wait
// to leave. It belongs to one call, on its goroutine.
type retry struct {
	c       *Client
	ctx     context.Context
	name    string
	traits  kindTraits
	tries   int
	counted int  // attempts that counted toward tries so far
	free    bool // the next attempt does not count
	freeRun int  // attempts in a row that did not count
	splits  int  // failed waiting attempts in a row that nobody won
	w       *waiter
	ttl     time.Duration // the call's TTL: the waiters' set lives at least that long after an enrolling attempt
}

// queue makes a call for an exclusive kind (see kindTraits) that others
// in this Client wait for queue behind them (if they have left meanwhile,
// it attempts at once). It returns ctx's error if ctx ends first.
func (r *retry) queue(o *call) error {
	if !r.traits.exclusive || r.tries <= 1 || !r.c.room.busy(r.name, r.traits.waitKeys) {
		return nil
	}
	var settled bool
	r.w, settled = r.c.room.join(r.ctx, r.name, r.traits.waitKeys)
	if settled {
		if ok, _ := r.c.room.wait(r.ctx, r.w, o.timer, r.c.retryDelay(0), false, nil); !ok {
			return &Error{Op: OpLock, Key: r.name, Err: ctxerr.Of(r.ctx)}
		}
	}
	return nil
}

// join puts the call's waiter in the room: from then on a release of the
// name wakes it.
func (r *retry) join() {
	if r.traits.shared {
		r.w = r.c.room.joinShared(r.ctx, r.name)
	} else {
		r.w, _ = r.c.room.join(r.ctx, r.name, r.traits.waitKeys)
	}
}

// begin counts the attempt about to be made, unless it is free.
func (r *retry) begin() {
	if !r.free {
		r.counted++
	}
}

// waiting reports whether the call waits in the room: its attempts run
// the waiting script (see op.waiting).
func (r *retry) waiting() bool { return r.w != nil }

// gift returns a lock handed to this call by an Unlock of the same
// Client, if any (see Lock.Unlock).
func (r *retry) gift() (handover, bool) {
	if r.w == nil {
		return handover{}, false
	}
	return r.c.room.takeGift(r.w)
}

// after decides what follows failed attempt number attempt of kind k,
// whose error is err, after the op's burst br: it waits as the failure
// calls for and returns nil to attempt again, or the error the call
// returns.
func (r *retry) after(o *call, k kind, br *burstResult, attempt int, err error) error {
	c := r.c
	end, guarded := o.learn.guardEnds(o.res, r.c.quorum, r.traits.exclusive)
	// What the next attempt asks for is free on a quorum (a permit other
	// than the one asked for): it goes at once and does not count, even
	// for a call out of tries (TryAcquire), so that a call fails only when
	// nothing was free. A quorum that said yes too late, or a guard, is no
	// such case.
	if ck, ok := k.(choosingKind); ok && ck.freeOnQuorum(o) && !guarded && br.ok < c.quorum && r.freeRun < maxFreeAttempts {
		r.free = true
		r.freeRun++
		return nil
	}
	if r.counted >= r.tries {
		return err
	}
	if guarded {
		// The restart guard alone keeps a quorum out, until end: wait for
		// it (one wait against tries, which releases do not cut short:
		// they cannot end the guard), or fail now if ctx ends first.
		if dl, ok := r.ctx.Deadline(); ok && dl.Before(end) {
			return err
		}
		if r.w == nil {
			r.join()
		}
		if ok, _ := c.room.wait(r.ctx, r.w, o.timer, time.Until(end), true, nil); !ok {
			return o.res.ended(r.ctx, r.c.quorum, r.name, attempt)
		}
		r.free, r.freeRun = false, 0
		return nil
	}
	if r.w == nil && br.failed > 0 && o.res.noQuorum(c.quorum) {
		// An outage, not contention: no release will come from masters
		// that cannot answer, and nobody is known to hold the name. Wait
		// the retry delay without joining the room (no subscription on
		// masters that are down) and attempt again: they may be back.
		if !c.room.pause(r.ctx, o.timer, c.retryDelay(attempt)) {
			return o.res.ended(r.ctx, r.c.quorum, r.name, attempt)
		}
		r.free, r.freeRun = false, 0
		return nil
	}
	if r.w == nil {
		// Wait for the release. Subscribe first, then attempt again at
		// once: a release after that attempt cannot go unheard.
		r.join()
		r.free, r.freeRun = false, 0
		return nil
	}
	var d time.Duration
	var split bool
	var waitFor *[releaseIDLen]byte
	if !r.traits.exclusive {
		d = c.retryDelay(attempt)
	} else {
		var holder [releaseIDLen]byte
		var held bool
		d, split, holder, held = c.waitDelay(r.w, o, &o.tok, br, attempt, r.splits, br.took)
		if split {
			r.splits++
		} else {
			r.splits = 0
		}
		if held {
			waitFor = &holder
		}
	}
	enrolled := time.Now() // the attempt just made renewed the call's enrolment
	ok, woken := c.room.wait(r.ctx, r.w, o.timer, d, split, waitFor)
	if !ok {
		return o.res.ended(r.ctx, r.c.quorum, r.name, attempt)
	}
	// A wait for a holder that ran out without a wake-up: look before
	// attempting (see peek.go), while the attempt's enrolment lasts. Each
	// look that finds the key taken counts as an attempt and waits again;
	// one that finds it free looks again confirmLookAfter later, and the
	// call attempts when that look finds it free too.
	at := -1
	for confirming := false; !woken && waitFor != nil && r.mayLook(enrolled); {
		var next time.Duration
		if !confirming {
			at = o.learn.lookAt(o.res, o.c.quorum, o.c.cfg.RetryDelay) // a second look asks the master that showed the key free
		}
		if !c.heldElsewhere(o, r.name, at, r.ctx.Done()) {
			if confirming || noConfirmLook {
				break
			}
			confirming, next = true, confirmLookAfter
		} else {
			if r.counted++; r.counted >= r.tries {
				return err
			}
			confirming, next = false, c.retryDelay(attempt)
		}
		ok, woken = c.room.wait(r.ctx, r.w, o.timer, next, false, waitFor)
		if !ok {
			return o.res.ended(r.ctx, r.c.quorum, r.name, attempt)
		}
	}
	// An attempt that a release woke, or that follows a split, does not
	// count toward tries: the lock is changing hands, not stuck. At most
	// maxFreeAttempts in a row, though: each counted attempt is followed
	// by no more, and none follows the last counted one, so a call makes
	// at most tries*(maxFreeAttempts+1)-maxFreeAttempts attempts however
	// the masters answer (see "How much a Lock sends" in
	// the package documentation).
	r.free = (woken || split) && r.freeRun < maxFreeAttempts
	if r.free {
		r.freeRun++
	} else {
		r.freeRun = 0
	}
	return nil
}

// mayLook reports whether a wait that ran out may look at the key
// instead of attempting (see peek.go): the kind looks, the Client's
// looks are not refused, and the attempt that enrolled the call among
// the key's waiters, at enrolled, is younger than half the call's TTL,
// so that the waiters' set it renewed has not expired.
func (r *retry) mayLook(enrolled time.Time) bool {
	return !noPeek && r.traits.looks && !r.c.looksRefused.Load() && time.Since(enrolled) < r.ttl/2
}

// leave takes the call's waiter out of the room, if it joined; a lock
// handed to it that it did not take is released.
func (r *retry) leave(o *call, acquired bool) {
	if r.w == nil {
		return
	}
	if g, ok := r.c.room.leave(r.w, acquired); ok {
		r.c.releaseHandover(o, r.name, &g)
	}
}

// retryDelay is the pause after failed attempt number attempt.
func (c *Client) retryDelay(attempt int) time.Duration {
	if c.cfg.RetryDelayFunc != nil {
		return c.cfg.RetryDelayFunc(attempt)
	}
	d := c.cfg.RetryDelay
	return d/2 + rand.N(d/2+1)
}
