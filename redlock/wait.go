package redlock

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/internal/pipe"
)

// waitRoom is where a Client's Locks wait for a key held by someone else.
//
// A Lock that found its key taken joins the room: it subscribes to the
// key's channel on every master (one pub/sub connection per master, shared
// by all the Client's waiters, opened when the first one waits and closed
// by Client.Close), and only then makes the attempt it will wait on, so a
// release after that attempt cannot go unheard. Each release publishes on
// every master that held the key; when a quorum of one release's messages
// has come (see onMessage), the room wakes one waiter of the key, the
// longest waiting, which attempts at once. A Lock of a key that already has
// subscribed waiters in this Client queues behind them instead of barging
// in (see join). Every wait is also
// bounded by the retry delay (and by the key's PTTL when known), so a lost
// message or a dead subscription costs at most one RetryDelay.
//
// The room's state is guarded by mu; the pub/sub connections call
// onMessage from their reader goroutines.
type waitRoom struct {
	c       *Client
	waiting atomic.Int32 // keys with waiters: zero spares Lock the lookup

	mu   sync.Mutex
	subs []*pipe.Conn // per master, its pub/sub connection; nil until someone first waits (over a Redis Cluster: made, all nil, then)
	// nodeSubs are a Redis Cluster's pub/sub connections, per node (see
	// subAtLocked).
	nodeSubs map[*node]*pipe.Conn
	keys     map[string]*keyWaiters
	// idle are the keys whose subscriptions outlive their last waiter
	// (see lingerLocked); sweeper ends them, armed while sweepArmed.
	idle       map[string]*lingering
	sweeper    *time.Timer
	sweepArmed bool
	joined     uint64 // waiters that joined so far: the next one's ticket
	closed     bool
	done       chan struct{} // closed by close: ends the pauses (see pause)
	// own are the ids of this Client's latest failed attempts whose
	// releases publish (see releaseAfterFailure), a ring: their messages
	// wake no waiter of this Client (see onMessage).
	own  [ownReleases][releaseIDLen]byte
	nown int
}

// keyWaiters are the waiters of one key.
type keyWaiters struct {
	members int       // waiters in the room for this key, woken or not
	queue   []*waiter // those waiting for a wake-up, by ticket: longest waiting first
	// subGen is, per master, the Generation of the pub/sub socket on which
	// an SSUBSCRIBE to the key's channel was confirmed, tried the one it was
	// last sent on (confirmed or not: refused by an ACL, say); 0 for none.
	subGen, tried []uint64
	seen          [seenReleases]seenRelease // recent releases, a ring
	nseen         int
	// watchers are the key's watchers (see watch): not queued, each
	// alerted by every release and announcement of the key.
	watchers []*waiter
	// late wakes a waiter for a release heard from fewer masters than a
	// quorum (see armLateLocked), while lateArmed; stopped when the key's
	// last waiter leaves.
	late      *time.Timer
	lateArmed bool
	// unheard is a wake-up that came while no waiter of the key was
	// queued (each was making its attempt): the next one to wait takes
	// it and attempts again, since its attempt may have come before the
	// release. (A waiter that waits for its holder's release cannot
	// always tell that it came: a hand-over in another Client gives the
	// key a new holder without a release, and the new holder's release
	// can come during the attempt that still saw the old one.)
	unheard bool
}

// waiter is one Lock call that waits. It belongs to that call; the room
// holds it from join to leave.
type waiter struct {
	ticket uint64 // arrival order in the room
	since  int64  // when it joined, unix ms: its Client's place among the key's waiters on the masters (see waiters.go)
	keys   []string
	single bool          // a Lock of one key (not LockMulti): it can take a hand-over
	shared bool          // holds the key with others: woken with the shared waiters behind it
	watch  bool          // a watcher (see watch): never queued, never handed a lock
	wake   chan struct{} // capacity 1: a release or a hand-over woke this waiter
	queued bool          // in its keys' queues (guarded by the room's mu)
	gift   handover      // a lock handed to this waiter (guarded by mu)
	gifted bool          // gift is there and not taken yet (guarded by mu)
}

// busy reports whether keys (or key, when keys is nil) already have
// waiters in this Client. It costs one atomic load when no key has.
func (room *waitRoom) busy(key string, keys []string) bool {
	if room.waiting.Load() == 0 {
		return false
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	if keys == nil {
		return room.keys[key].waited()
	}
	for _, k := range keys {
		if room.keys[k].waited() {
			return true
		}
	}
	return false
}

// waited reports whether kw (nil for none) has waiters other than watchers.
func (kw *keyWaiters) waited() bool { return kw != nil && kw.members > len(kw.watchers) }

// join adds a waiter for keys (or key alone) at the end of their queues,
// and subscribes to their channels where that is not done yet (see
// subscribe). The caller must leave. settled reports that every key
// already had waiters here, subscribed on every pub/sub socket that is up:
// a release from then on wakes one of them, and the new waiter may wait
// its turn without an attempt of its own. Otherwise it must attempt once
// it has subscribed, since a release may have come before.
func (room *waitRoom) join(ctx context.Context, key string, keys []string) (w *waiter, settled bool) {
	return room.enter(ctx, key, keys, false)
}

// joinShared is join for a waiter that holds its key together with
// others (a read-write lock's reader, on the writer's key): a release that
// wakes it wakes the shared waiters queued right behind it as well (see
// wakeLocked). It takes no hand-over.
func (room *waitRoom) joinShared(ctx context.Context, key string) *waiter {
	w, _ := room.enter(ctx, key, []string{key}, true)
	return w
}

// watch adds a watcher of key: it is never queued for a release, and
// never handed a lock, but every release and announcement of the key
// (scripts.ElectAnnounce) alerts it on its wake channel, as do the
// events that call for subscribing again (see refresh) and the room's
// close. It subscribes as join does. The caller must leave, with
// acquired true.
func (room *waitRoom) watch(ctx context.Context, key string) *waiter {
	w := &waiter{keys: []string{key}, watch: true, wake: make(chan struct{}, 1)}
	room.add(ctx, w)
	return w
}

// refresh subscribes w again where a pub/sub socket was reopened since it
// subscribed (see staleLocked).
func (room *waitRoom) refresh(ctx context.Context, w *waiter) {
	room.mu.Lock()
	stale := !room.closed && room.staleLocked(w)
	room.mu.Unlock()
	if stale {
		room.subscribe(ctx, w)
	}
}

// enter is join, for a shared waiter when shared.
func (room *waitRoom) enter(ctx context.Context, key string, keys []string, shared bool) (w *waiter, settled bool) {
	w = &waiter{keys: keys, single: keys == nil, shared: shared, wake: make(chan struct{}, 1)}
	if keys == nil {
		w.keys = []string{key}
	}
	return w, room.add(ctx, w)
}

// add puts w in the room for its keys: queued, or among their watchers
// (see watch), and subscribes (see join, which says what settled is).
func (room *waitRoom) add(ctx context.Context, w *waiter) (settled bool) {
	keys := w.keys
	settled = true
	room.mu.Lock()
	if room.keys == nil {
		room.keys = make(map[string]*keyWaiters)
	}
	w.ticket = room.joined
	w.since = time.Now().UnixMilli()
	room.joined++
	for _, k := range keys {
		kw := room.keys[k]
		if kw == nil {
			n := len(room.c.masters)
			kw = &keyWaiters{subGen: make([]uint64, n), tried: make([]uint64, n)}
			if l := room.idle[k]; l != nil {
				// Its last waiter's subscriptions lingered: no SSUBSCRIBE.
				kw.subGen, kw.tried = l.subGen, l.tried
				delete(room.idle, k)
			}
			room.keys[k] = kw
			room.waiting.Add(1)
			settled = false
		}
		for i := range room.c.masters {
			sc := room.subAtLocked(i, k)
			if sc == nil {
				continue
			}
			if info := sc.Info(); info != nil && sc.Err() == nil && kw.subGen[i] != info.Generation {
				settled = false
			}
		}
		kw.members++
		if w.watch {
			kw.watchers = append(kw.watchers, w)
		} else {
			kw.queue = append(kw.queue, w)
		}
	}
	w.queued = !w.watch
	settled = settled && room.subs != nil
	room.mu.Unlock()
	room.subscribe(ctx, w)
	return settled
}

// alertLocked alerts kw's watchers (mu held).
func (kw *keyWaiters) alertLocked() {
	for _, w := range kw.watchers {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// wakeLocked wakes the longest waiting waiter of kw, and, if it is a
// shared one, every shared waiter queued right behind it (readers go in
// together; a writer queued among them keeps its place ahead of those
// behind it). If none is queued (each is making its attempt), the next
// one to wait takes the wake-up (see keyWaiters.unheard) (mu held).
func (room *waitRoom) wakeLocked(kw *keyWaiters) {
	kw.alertLocked()
	if len(kw.queue) == 0 {
		kw.unheard = true
		return
	}
	for first := true; len(kw.queue) > 0; first = false {
		w := kw.queue[0]
		if !first && !w.shared {
			return
		}
		room.dequeueLocked(w)
		select {
		case w.wake <- struct{}{}:
		default:
		}
		if !w.shared {
			return
		}
	}
}

// dequeueLocked takes w out of its keys' queues (mu held).
func (room *waitRoom) dequeueLocked(w *waiter) {
	if !w.queued {
		return
	}
	w.queued = false
	for _, k := range w.keys {
		if kw := room.keys[k]; kw != nil {
			if i := slices.Index(kw.queue, w); i >= 0 {
				kw.queue = slices.Delete(kw.queue, i, i+1)
			}
		}
	}
}

// wait blocks until a release wakes w (woken), d passes, or ctx ends
// (false). holder, when not nil, is the holder whose release w waits for. A back-off after split votes is not cut short by a wake-up
// (those are the other losers' releases, and whoever woke would collide
// again); a wake-up that came meanwhile is dropped, since the attempt that
// follows sees its release. A release that woke nobody, every waiter of
// the key making its attempt, ends the wait at once (see
// keyWaiters.unheard). A
// waiter that was woken and is waiting again goes back to its place in
// its queues, by arrival: ahead of those who came after it. A subscription
// lost with a pub/sub socket is renewed instead of waiting (see
// staleLocked).
func (room *waitRoom) wait(ctx context.Context, w *waiter, t *time.Timer, d time.Duration, backoff bool, holder *[releaseIDLen]byte) (ok, woken bool) {
	room.mu.Lock()
	if room.closed {
		room.mu.Unlock()
		return true, false // the caller sees the Client closed
	}
	if w.gifted {
		room.mu.Unlock()
		return true, true // handed the lock during its attempt
	}
	if room.takeUnheardLocked(w) && !backoff {
		// A release came while every waiter of a key made its attempt,
		// and woke nobody: attempt again, as woken. (A back-off's attempt
		// comes after the release anyway.)
		room.dequeueLocked(w)
		room.mu.Unlock()
		return true, true
	}
	if !w.queued {
		// A wake-up that came during the attempt just made stays: its
		// release may have come after the attempt, which it ends at once.
		w.queued = true
		for _, k := range w.keys {
			if kw := room.keys[k]; kw != nil {
				i, _ := slices.BinarySearchFunc(kw.queue, w.ticket, func(x *waiter, t uint64) int {
					return cmp.Compare(x.ticket, t)
				})
				kw.queue = slices.Insert(kw.queue, i, w)
			}
		}
	}
	if holder != nil && room.releasedLocked(w, *holder) {
		// The release w waits for came between its attempt and now, while
		// it was out of the queue: nobody woke it.
		room.mu.Unlock()
		return true, true
	}
	stale := room.staleLocked(w)
	room.mu.Unlock()
	if stale {
		// A pub/sub socket was reopened since w subscribed: subscribe
		// again and attempt at once, so that the attempt w waits on comes
		// after the subscription.
		room.subscribe(ctx, w)
		return ctx.Err() == nil, false
	}
	t.Reset(d)
	if backoff {
		for {
			select {
			case <-t.C:
				select {
				case <-w.wake:
				default:
				}
				return true, false
			case <-w.wake:
				if room.hasGift(w) {
					t.Stop()
					return true, true
				}
			case <-ctx.Done():
				t.Stop()
				return false, false
			}
		}
	}
	select {
	case <-w.wake:
		t.Stop()
		return true, true
	case <-t.C:
		return true, false
	case <-ctx.Done():
		t.Stop()
		return false, false
	}
}

// pause waits d on t, outside the room (no waiter, no subscription),
// unless ctx ends first (false) or the Client closes (true: the caller
// then sees it closed).
func (room *waitRoom) pause(ctx context.Context, t *time.Timer, d time.Duration) bool {
	t.Reset(d)
	select {
	case <-t.C:
		return true
	case <-room.done:
		t.Stop()
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// takeUnheardLocked takes the wake-ups that came for w's keys while
// none of their waiters was queued (see keyWaiters.unheard), and reports
// whether there was one (mu held).
func (room *waitRoom) takeUnheardLocked(w *waiter) bool {
	heard := false
	for _, k := range w.keys {
		if kw := room.keys[k]; kw != nil && kw.unheard {
			kw.unheard = false
			heard = true
		}
	}
	return heard
}

// leave takes w out of the room. A waiter that leaves without the lock
// passes a wake-up on to the next waiter of its keys, in case it took one
// it did not use. The last waiter of a key leaves its subscriptions to
// linger (see lingerLocked): they end (SUNSUBSCRIBE) unless a waiter of
// the key comes back soon.
// A lock handed to w that it did not take is returned, for the caller to
// release: nobody can hand w one after leave.
func (room *waitRoom) leave(w *waiter, acquired bool) (gift handover, gifted bool) {
	room.mu.Lock()
	defer room.mu.Unlock()
	room.dequeueLocked(w)
	gift, gifted = w.gift, w.gifted
	w.gifted = false
	for _, k := range w.keys {
		kw := room.keys[k]
		if kw == nil {
			continue
		}
		if w.watch {
			kw.watchers = slices.DeleteFunc(kw.watchers, func(x *waiter) bool { return x == w })
		}
		kw.members--
		if kw.members > 0 {
			if !acquired {
				room.wakeLocked(kw)
			}
			continue
		}
		delete(room.keys, k)
		if kw.late != nil {
			kw.late.Stop()
		}
		room.waiting.Add(-1)
		if room.closed {
			continue
		}
		if !acquired && !w.watch {
			room.c.leaveWaiters(k, nil)
		}
		room.lingerLocked(k, kw)
	}
	return gift, gifted
}

// close closes the pub/sub connections and wakes every waiter, so that
// Locks waiting in a closed Client return at once.
func (room *waitRoom) close() {
	room.mu.Lock()
	room.closed = true
	close(room.done)
	if room.sweeper != nil {
		room.sweeper.Stop()
	}
	room.idle = nil
	subs := room.allSubsLocked()
	for _, kw := range room.keys {
		if kw.late != nil {
			kw.late.Stop()
		}
		kw.alertLocked()
		for len(kw.queue) > 0 {
			room.wakeLocked(kw)
		}
	}
	room.mu.Unlock()
	for _, sc := range subs {
		if sc != nil {
			sc.Close()
		}
	}
}
