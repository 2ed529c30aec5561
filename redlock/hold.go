package redlock

import (
	"context"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
)

// holdKind is what a semaphore's permit or a read-write lock's read lock
// is taken by: its attempt and what follows a failed one. The loop around
// it, its retries and its waits, is acquireHold's, one for both.
type holdKind interface {
	// holdName is the name errors, hooks and the wait room use; waiters
	// wait on its channel.
	holdName() string
	// attemptHold makes one attempt with token o.holdTok for ttl, on o:
	// the burst's result and whether it was taken within its validity.
	// (The token lives in the op: a pointer to the caller's would escape
	// through the interface.)
	attemptHold(o *op, ttl time.Duration, done <-chan struct{}) (br burstResult, until time.Time, ok bool)
	// releaseHold sends the release of a failed attempt's token,
	// o.holdTok, to every master that may hold it, without waiting;
	// waking waiters if wake.
	releaseHold(o *op, wake bool)
	// refused returns the error that ends the call at once after a failed
	// attempt (masters that keep the name for something else), or nil.
	refused(o *op) error
	// freeOnQuorum prepares the next attempt after a failed one and
	// reports whether what it asks for is free on a quorum already (so it
	// goes at once).
	freeOnQuorum(o *op) bool
	// shared reports whether holders share the name (a read lock): its
	// waiters are woken together (see waitRoom.joinShared).
	shared() bool
}

// acquireHold takes k for ttl: attempts until one succeeds, tries have
// failed or ctx ends, as a Lock's retry does. Attempts that follow a
// release's wake-up, or that go at once because what they ask for is free
// on a quorum, do not count toward tries (at most maxFreeAttempts in a
// row): the latter go even after the last counted attempt, so that a
// call of one try (TryAcquire) fails only when nothing was free. It
// returns the token and the validity; o, the caller's, keeps
// what the attempts learned (a semaphore's permit).
func (c *Client) acquireHold(ctx context.Context, o *op, k holdKind, ttl time.Duration, tries int) (tok token, until time.Time, err error) {
	name := k.holdName()
	if err := c.checkTTL(ttl); err != nil {
		return tok, until, err
	}
	if c.closed.Load() {
		return tok, until, ErrClosed
	}
	if ctx.Err() != nil {
		return tok, until, &Error{Op: OpLock, Key: name, Err: ctxerr.Of(ctx)}
	}
	o.hasLast = false
	attempt := 1
	if h := c.cfg.Hooks.Call; h != nil {
		if _, end := h(ctx, OpLock, name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: attempt, Masters: o.res}) }()
		}
	}
	var w *waiter
	defer func() {
		o.waiting = false
		if w != nil {
			c.room.leave(w, err == nil)
		}
	}()
	join := func() {
		if k.shared() {
			w = c.room.joinShared(ctx, name)
		} else {
			w, _ = c.room.join(ctx, name, []string{name})
		}
	}
	done := ctx.Done()
	counted, free, freeRun := 0, false, 0
	for ; ; attempt++ {
		if !free {
			counted++
		}
		if c.closed.Load() {
			return tok, until, ErrClosed
		}
		o.holdTok = newToken()
		// Once waiting, a failed attempt hears every master out: it then
		// knows what is free where.
		o.waiting = w != nil
		br, until, ok := k.attemptHold(o, ttl, done)
		if ok {
			c.event(EventAcquired, name)
			return o.holdTok, until, nil
		}
		wake := o.mayHoldQuorum()
		if wake {
			c.room.noteOwn(o.holdTok.releaseID())
		}
		k.releaseHold(o, wake)
		c.event(EventFailed, name)
		if br.cancelled {
			o.learned()
			return tok, until, o.error(OpLock, name, ctxerr.Of(ctx), attempt)
		}
		if kind := k.refused(o); kind != nil {
			return tok, until, o.error(OpLock, name, kind, attempt)
		}
		if o.denied() {
			return tok, until, o.error(OpLock, name, ErrNoPermission, attempt)
		}
		copy(o.last, o.res)
		o.hasLast = true
		var aerr error = ErrNotAcquired // contention alone: no allocation
		if br.failed > 0 || br.ok >= c.quorum {
			aerr = o.error(OpLock, name, ErrNotAcquired, attempt)
		}
		// What the attempt asks for next is free on a quorum (a permit
		// other than the one it asked for): the next attempt goes at once
		// and does not count, even for a call out of tries (TryAcquire),
		// so that a call fails only when nothing was free. A quorum that
		// said yes too late, or a guard, is no such case.
		now := k.freeOnQuorum(o)
		end, guarded := o.guardEnds()
		if !guarded && br.ok < c.quorum && now && freeRun < maxFreeAttempts {
			free = true
			freeRun++
			continue
		}
		if counted >= tries {
			return tok, until, aerr
		}
		if guarded {
			// The restart guard alone keeps a quorum out, until end (see
			// retry.after).
			if dl, ok := ctx.Deadline(); ok && dl.Before(end) {
				return tok, until, aerr
			}
			if w == nil {
				join()
			}
			if ok, _ := c.room.wait(ctx, w, o.timer, time.Until(end), true, nil); !ok {
				return tok, until, o.error(OpLock, name, ctxerr.Of(ctx), attempt)
			}
			free, freeRun = false, 0
			continue
		}
		if w == nil {
			// Subscribe first, then attempt again at once: a release
			// after that attempt cannot go unheard.
			join()
			free, freeRun = false, 0
			continue
		}
		ok, woken := c.room.wait(ctx, w, o.timer, c.retryDelay(attempt), false, nil)
		if !ok {
			return tok, until, o.error(OpLock, name, ctxerr.Of(ctx), attempt)
		}
		free = woken && freeRun < maxFreeAttempts
		if free {
			freeRun++
		} else {
			freeRun = 0
		}
	}
}
