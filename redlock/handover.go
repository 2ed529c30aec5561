package redlock

import (
	"time"
)

// handOver passes l to the longest waiting Lock of its key in this Client
// (Lock, not LockMulti, and queued, not in the middle of an attempt), if
// there is one and l may be passed on: a single-key lock without fencing,
// still valid, handed over fewer than Config.LocalHandoffs times in a row.
// The key stays held on the masters; the waiter takes it over with its own
// token (see takeHandover). It reports whether l was handed over, which
// ends it for its holder.
func (l *Lock) handOver() bool {
	c := l.c
	if l.keys != nil || c.cfg.Fencing || l.passes >= c.cfg.LocalHandoffs || !time.Now().Before(l.until) {
		return false
	}
	if !c.room.give(l.key, handover{tok: l.tok, until: l.until, passes: l.passes + 1, run: l.run}) {
		return false
	}
	l.until = time.Time{}
	return true
}

// takeHandover takes over the lock g that Unlock handed to this waiter,
// with o: one burst of scripts.Handover replaces g's token with a new one,
// o.tok, for ttl, on every master that still holds g's. It succeeds as
// Extend does: on a quorum, within both the new validity (counted from the
// burst) and g's: it returns what it took. Otherwise both tokens are
// released wherever they may be, waking waiters, and it returns false;
// the caller attempts as usual, or returns if done closed.
func (c *Client) takeHandover(key string, ttl time.Duration, g handover, o *call, done <-chan struct{}) (taken, bool) {
	o.tok = newToken()
	o.waiting = false
	o.encode(&cmdHandover, args{key: key, tok: &g.tok, arg: o.tok[:], arg2: o.ttlArg(ttl)}) // g.tok becomes o.tok
	br := o.run(done)
	c.report(o.res, OpLock)
	got := taken{until: c.validUntil(br.start, ttl), passes: g.passes, run: g.run}
	if c.granted(&br, got.until) && time.Now().Before(g.until) {
		c.event(EventAcquired, key)
		return got, true
	}
	for _, t := range [...]*token{&o.tok, &g.tok} {
		c.room.noteOwn(t.releaseID())
		o.releaseAfterFailure(key, nil, t, true)
	}
	c.event(EventFailed, key)
	return taken{}, false
}

// releaseHandover releases, with o and without waiting, the lock g on key
// that was handed to a waiter which left without taking it (its ctx
// ended, or the Client closed), as Unlock would have: waiters elsewhere
// are woken.
func (c *Client) releaseHandover(o *call, key string, g *handover) {
	o.encode(releaseCommand(false, true), args{key: key, tok: &g.tok})
	o.sendForget(false)
}

// handover is a held lock that Unlock passes to a waiter of its key in the
// same Client (see Lock.Unlock): the releasing holder's token, which the
// masters still hold, the end of its validity, and how many hand-overs in
// a row led to it.
type handover struct {
	tok    token
	until  time.Time
	passes int
	run    int64 // the run of holds it continues (see turns.go)
}

// give hands the lock g on key to the longest waiting Lock of that key
// alone that is queued (not attempting), and wakes it; false when there is
// none, or the Client is closing. The waiter takes it with takeGift.
func (room *waitRoom) give(key string, g handover) bool {
	if room.waiting.Load() == 0 {
		return false
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	kw := room.keys[key]
	if room.closed || kw == nil {
		return false
	}
	for _, w := range kw.queue {
		if w.single {
			room.dequeueLocked(w)
			w.gift, w.gifted = g, true
			select {
			case w.wake <- struct{}{}:
			default:
			}
			return true
		}
	}
	return false
}

// takeGift returns the lock handed to w, if any, and clears it.
func (room *waitRoom) takeGift(w *waiter) (g handover, ok bool) {
	room.mu.Lock()
	defer room.mu.Unlock()
	g, ok = w.gift, w.gifted
	w.gifted = false
	return g, ok
}

// hasGift reports whether a lock was handed to w.
func (room *waitRoom) hasGift(w *waiter) bool {
	room.mu.Lock()
	defer room.mu.Unlock()
	return w.gifted
}
