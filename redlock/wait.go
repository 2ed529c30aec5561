package redlock

import (
	"bytes"
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/resp"
)

// releaseIDLen is the length of a release's id (see releasedChannelPrefix).
const releaseIDLen = 16

// seenReleases is how many recent releases a key remembers, to count the
// messages of each (one per master that held the key).
const seenReleases = 16

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

	mu     sync.Mutex
	subs   []*conn.Conn // per master, its pub/sub connection; nil until someone first waits
	keys   map[string]*keyWaiters
	joined uint64 // waiters that joined so far: the next one's ticket
	closed bool
	// own are the ids of this Client's latest failed attempts whose
	// releases publish (see releaseAfterFailure), a ring: their messages
	// wake no waiter of this Client (see onMessage).
	own  [ownReleases][releaseIDLen]byte
	nown int
}

// selfWake, set by tests only, lets a Client's own failed attempts'
// releases wake its waiters again: the broken variant that the test of
// the bound on a Lock's commands must catch.
var selfWake bool

// ownReleases is how many of its own failed attempts' releases a Client
// remembers, so that their messages wake none of its waiters. Failed
// attempts that publish are rare (faults or the restart guard, see
// mayHoldQuorum) and their messages come within a round trip: a few
// dozen cover every attempt that can be under way at once.
const ownReleases = 64

// keyWaiters are the waiters of one key.
type keyWaiters struct {
	members int       // waiters in the room for this key, woken or not
	queue   []*waiter // those waiting for a wake-up, by ticket: longest waiting first
	// subGen is, per master, the Generation of the pub/sub socket on which
	// a SUBSCRIBE to the key's channel was confirmed, tried the one it was
	// last sent on (confirmed or not: refused by an ACL, say); 0 for none.
	subGen, tried []uint64
	seen          [seenReleases]seenRelease // recent releases, a ring
	nseen         int
	// unheard is a wake-up that came while no waiter of the key was
	// queued (each was making its attempt): the next one to wait takes
	// it and attempts again, since its attempt may have come before the
	// release. (A waiter that waits for its holder's release cannot
	// always tell that it came: a hand-over in another Client gives the
	// key a new holder without a release, and the new holder's release
	// can come during the attempt that still saw the old one.)
	unheard bool
}

// seenRelease is a release whose messages came, and how many did.
type seenRelease struct {
	id       [releaseIDLen]byte
	messages int
	woke     bool // it has woken a waiter
}

// waiter is one Lock call that waits. It belongs to that call; the room
// holds it from join to leave.
type waiter struct {
	ticket uint64 // arrival order in the room
	keys   []string
	single bool          // a Lock of one key (not LockMulti): it can take a hand-over
	wake   chan struct{} // capacity 1: a release or a hand-over woke this waiter
	queued bool          // in its keys' queues (guarded by the room's mu)
	gift   handover      // a lock handed to this waiter (guarded by mu)
	gifted bool          // gift is there and not taken yet (guarded by mu)
}

// handover is a held lock that Unlock passes to a waiter of its key in the
// same Client (see Lock.Unlock): the releasing holder's token, which the
// masters still hold, the end of its validity, and how many hand-overs in
// a row led to it.
type handover struct {
	tok    token
	until  time.Time
	passes int
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
		return room.keys[key] != nil
	}
	for _, k := range keys {
		if room.keys[k] != nil {
			return true
		}
	}
	return false
}

// join adds a waiter for keys (or key alone) at the end of their queues,
// and subscribes to their channels where that is not done yet (see
// subscribe). The caller must leave. settled reports that every key
// already had waiters here, subscribed on every pub/sub socket that is up:
// a release from then on wakes one of them, and the new waiter may wait
// its turn without an attempt of its own. Otherwise it must attempt once
// it has subscribed, since a release may have come before.
func (room *waitRoom) join(ctx context.Context, key string, keys []string) (w *waiter, settled bool) {
	w = &waiter{keys: keys, single: keys == nil, wake: make(chan struct{}, 1)}
	if keys == nil {
		w.keys = []string{key}
	}
	keys = w.keys
	settled = true
	room.mu.Lock()
	if room.keys == nil {
		room.keys = make(map[string]*keyWaiters)
	}
	w.ticket = room.joined
	room.joined++
	for _, k := range keys {
		kw := room.keys[k]
		if kw == nil {
			n := len(room.c.masters)
			kw = &keyWaiters{subGen: make([]uint64, n), tried: make([]uint64, n)}
			room.keys[k] = kw
			room.waiting.Add(1)
			settled = false
		}
		for i, sc := range room.subs {
			if sc == nil {
				continue
			}
			if info := sc.Info(); info != nil && sc.Err() == nil && kw.subGen[i] != info.Generation {
				settled = false
			}
		}
		kw.members++
		kw.queue = append(kw.queue, w)
	}
	w.queued = true
	settled = settled && room.subs != nil
	room.mu.Unlock()
	room.subscribe(ctx, w)
	return w, settled
}

// subscribe makes sure that every key of w is subscribed to on every
// master's current pub/sub socket, waiting up to MasterTimeout for the
// confirmations (less if ctx ends). A master that does not confirm in time
// (down, slow, or refusing SUBSCRIBE by ACL) is left out until the next
// call: its releases then reach w only through the other masters, or the
// retry delay.
func (room *waitRoom) subscribe(ctx context.Context, w *waiter) {
	type pending struct {
		kw  *keyWaiters
		i   int
		gen uint64
	}
	room.mu.Lock()
	if room.closed {
		room.mu.Unlock()
		return
	}
	fresh := room.subs == nil
	if fresh {
		room.open()
	}
	room.mu.Unlock()

	wctx, cancel := context.WithTimeout(ctx, room.c.cfg.MasterTimeout)
	defer cancel()
	if fresh {
		// Connecting in the background: give them until the deadline.
		for _, sc := range room.subs {
			if sc != nil {
				sc.WaitReady(wctx)
			}
		}
	}

	var todo []pending
	var reqs []*conn.Request
	notify := make(chan *conn.Request, len(w.keys)*len(room.subs))
	room.mu.Lock()
	if room.closed {
		room.mu.Unlock()
		return
	}
	// Sent under mu, so that a SUBSCRIBE and the UNSUBSCRIBE of a key whose
	// last waiter left (see leave) reach the master in the order of the
	// decisions that made them.
	for _, k := range w.keys {
		kw := room.keys[k]
		for i, sc := range room.subs {
			if sc == nil {
				continue
			}
			info := sc.Info()
			if info == nil || kw.subGen[i] == info.Generation {
				continue
			}
			r := conn.NewRequest()
			r.Cmd = resp.AppendCommand(r.Cmd[:0], "SUBSCRIBE", releasedChannelPrefix+k)
			r.Tag = len(todo)
			kw.tried[i] = info.Generation
			todo = append(todo, pending{kw: kw, i: i, gen: info.Generation})
			reqs = append(reqs, r)
			sc.Send(r, notify)
		}
	}
	room.mu.Unlock()

	for left := len(reqs); left > 0; left-- {
		select {
		case r := <-notify:
			if r.Err() == nil && subscribed(r.Reply()) {
				p := todo[r.Tag]
				room.mu.Lock()
				p.kw.subGen[p.i] = p.gen
				room.mu.Unlock()
			}
			reqs[r.Tag] = nil
			r.Release()
		case <-wctx.Done():
			late := 0
			for _, r := range reqs {
				if r != nil && !r.Abandon() {
					late++
				}
			}
			for ; late > 0; late-- {
				(<-notify).Release() // unconfirmed in time: left out
			}
			return
		}
	}
}

// subscribed reports whether a reply confirms a SUBSCRIBE.
func subscribed(vals []resp.Value) bool {
	return len(vals) == 4 && (vals[0].Type == resp.TypeArray || vals[0].Type == resp.TypePush) &&
		string(vals[1].Bytes) == "subscribe"
}

// open starts the pub/sub connections (mu held).
func (room *waitRoom) open() {
	room.subs = make([]*conn.Conn, len(room.c.masters))
	for i, m := range room.c.masters {
		opts := m.opts
		opts.Scripts = nil
		opts.OnMessage = room.onMessage
		opts.OnConnect = room.onConnect
		// The same options made the master's own Conn, so New cannot fail;
		// if it did, that master's releases would reach no one here, and the
		// retry delay would stand in.
		if sc, err := conn.New(opts); err == nil {
			room.subs[i] = sc
		}
	}
}

// onMessage takes a release's message from a master. The message that
// makes a quorum of them wakes the key's longest waiting waiter: the
// release then ran on a quorum of masters, so a quorum is free. (Waking at
// the first message would send the waiter to masters the release has not
// reached yet, its holder still sending it: a wasted attempt under load.)
// A release whose key was on fewer than a quorum of masters, or whose
// messages were lost, wakes no one: its waiters' own waits end.
func (room *waitRoom) onMessage(channel, payload []byte) {
	key, ok := bytes.CutPrefix(channel, []byte(releasedChannelPrefix))
	if !ok {
		return
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	kw := room.keys[string(key)]
	if kw == nil {
		return
	}
	var id [releaseIDLen]byte
	copy(id[:], payload)
	r := kw.release(id)
	if r == nil {
		r = &kw.seen[kw.nseen%seenReleases]
		if r.messages > 0 && !r.woke {
			// Forgotten before enough of its messages came (a master's
			// messages lag behind many releases): it ran somewhere, so
			// rather an early wake-up than none.
			room.wakeLocked(kw)
		}
		// The release of one of this Client's own failed attempts frees
		// nothing its waiters wait for: it published for other Clients'
		// waiters, which may have seen the attempt as the holder. Waking
		// one here would send the attempt's own Lock (or a Lock queued
		// behind it) at the masters again at once, and its failure would
		// publish again: a loop as fast as the round trip (#31).
		*r = seenRelease{id: id, woke: room.ownLocked(id) && !selfWake}
		kw.nseen++
	}
	r.messages++
	if !r.woke && r.messages >= room.enoughLocked(kw) {
		r.woke = true
		room.wakeLocked(kw)
	}
}

// noteOwn remembers id, the release id of a failed attempt of this
// Client whose release publishes, before that release is sent.
func (room *waitRoom) noteOwn(id [releaseIDLen]byte) {
	room.mu.Lock()
	room.own[room.nown%ownReleases] = id
	room.nown++
	room.mu.Unlock()
}

// ownLocked reports whether id is one of this Client's own failed
// attempts (see noteOwn) (mu held).
func (room *waitRoom) ownLocked(id [releaseIDLen]byte) bool {
	for i := range min(room.nown, ownReleases) {
		if room.own[i] == id {
			return true
		}
	}
	return false
}

// enoughLocked is how many messages of a release show that it ran on a
// quorum: a quorum of them, or as many as kw has confirmed subscriptions
// when that is fewer (a SUBSCRIBE not confirmed within MasterTimeout), but
// at least one (mu held).
func (room *waitRoom) enoughLocked(kw *keyWaiters) int {
	confirmed := 0
	for i, sc := range room.subs {
		if sc != nil {
			if info := sc.Info(); info != nil && kw.subGen[i] == info.Generation {
				confirmed++
			}
		}
	}
	return max(1, min(room.c.quorum, confirmed))
}

// release returns what kw saw of the release id, or nil.
func (kw *keyWaiters) release(id [releaseIDLen]byte) *seenRelease {
	for i := range min(kw.nseen, seenReleases) {
		if kw.seen[i].id == id {
			return &kw.seen[i]
		}
	}
	return nil
}

// onConnect learns that a pub/sub socket was (re)opened, without
// subscriptions: it wakes the longest waiting waiter of every key, which
// attempts, subscribes again (see wait), and attempts once more before it
// waits; releases missed meanwhile cost no more than that.
func (room *waitRoom) onConnect(info *conn.ServerInfo) {
	if info.Generation == 1 {
		return // the first connect: nothing was subscribed before
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	for _, kw := range room.keys {
		room.wakeLocked(kw)
	}
}

// wakeLocked wakes the longest waiting waiter of kw; if none is queued
// (each is making its attempt), the next one to wait takes the wake-up
// (see keyWaiters.unheard) (mu held).
func (room *waitRoom) wakeLocked(kw *keyWaiters) {
	if len(kw.queue) == 0 {
		kw.unheard = true
		return
	}
	w := kw.queue[0]
	room.dequeueLocked(w)
	select {
	case w.wake <- struct{}{}:
	default:
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

// staleLocked reports whether one of w's keys was not subscribed to on a
// pub/sub socket that is up (mu held). A SUBSCRIBE sent but not confirmed
// (refused, or late) is not tried again before a reconnect.
func (room *waitRoom) staleLocked(w *waiter) bool {
	for _, k := range w.keys {
		kw := room.keys[k]
		for i, sc := range room.subs {
			if sc == nil {
				continue
			}
			if info := sc.Info(); info != nil && sc.Err() == nil && kw.tried[i] != info.Generation {
				return true
			}
		}
	}
	return false
}

// leave takes w out of the room. A waiter that leaves without the lock
// passes a wake-up on to the next waiter of its keys, in case it took one
// it did not use. The last waiter of a key unsubscribes from its channel.
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
		kw.members--
		if kw.members > 0 {
			if !acquired {
				room.wakeLocked(kw)
			}
			continue
		}
		delete(room.keys, k)
		room.waiting.Add(-1)
		if room.closed {
			continue
		}
		for i, sc := range room.subs {
			if sc != nil && kw.tried[i] != 0 {
				r := conn.NewRequest()
				r.Cmd = resp.AppendCommand(r.Cmd[:0], "UNSUBSCRIBE", releasedChannelPrefix+k)
				sc.SendForget(r)
			}
		}
	}
	return gift, gifted
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

// close closes the pub/sub connections and wakes every waiter, so that
// Locks waiting in a closed Client return at once.
func (room *waitRoom) close() {
	room.mu.Lock()
	room.closed = true
	subs := room.subs
	for _, kw := range room.keys {
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

// contention sums up a failed waiting attempt, whose "taken" answers carry
// each holder's id and the key's PTTL (see noteHolder), and which heard
// every awaited master out. held reports that one holder, whose id is
// holder, has a quorum of masters: a release will come, or an expiry.
// Otherwise the votes split among contenders who all lost; every loser
// sees the same votes (each master answers each of them with whoever came
// first there), so they agree on one to try again first: the most votes,
// ties to the smallest id. elect reports that it is this attempt, whose
// token is tok. freeIn is how long until a quorum of masters is free by
// expiry alone, counting our own votes as free (the failed attempt
// releases them); -1 when no such bound is known.
func (o *op) contention(tok *token) (held bool, holder [releaseIDLen]byte, elect bool, freeIn time.Duration) {
	q := o.c.quorum
	const never = time.Duration(1<<63 - 1)
	mine, best := 0, 0
	var bestID [releaseIDLen]byte
	for i := range o.res {
		switch out := o.res[i].Outcome; {
		case out == OutcomeOK || out == OutcomeGuarded:
			o.free[i] = 0
			mine++
		case out == OutcomeTaken && o.hasHolder[i] && o.pttl[i] >= 0:
			o.free[i] = o.pttl[i]
		default:
			o.free[i] = never
		}
		if !o.hasHolder[i] || o.res[i].Outcome != OutcomeTaken {
			continue
		}
		votes := 0
		for j := range o.res {
			if o.hasHolder[j] && o.res[j].Outcome == OutcomeTaken && o.holder[j] == o.holder[i] {
				votes++
			}
		}
		if votes > best || votes == best && bytes.Compare(o.holder[i][:], bestID[:]) < 0 {
			best, bestID = votes, o.holder[i]
		}
	}
	held = best >= q
	if held {
		holder = bestID
	} else if mine > 0 {
		id := tok.releaseID()
		elect = mine > best || mine == best && bytes.Compare(id[:], bestID[:]) < 0
	}
	slices.Sort(o.free)
	if o.free[q-1] == never {
		return held, holder, elect, -1
	}
	return held, holder, elect, o.free[q-1]
}

// released reports whether w has seen the release of the holder with id
// (a quorum of messages on one of its keys' channels). A waiter whose
// attempt still finds that holder (a release published by some masters
// can reach others after the attempt) must not wait for a release that
// came.
func (room *waitRoom) released(w *waiter, id [releaseIDLen]byte) bool {
	room.mu.Lock()
	defer room.mu.Unlock()
	return room.releasedLocked(w, id)
}

// releasedLocked is released with mu held.
func (room *waitRoom) releasedLocked(w *waiter, id [releaseIDLen]byte) bool {
	for _, k := range w.keys {
		if kw := room.keys[k]; kw != nil {
			if r := kw.release(id); r != nil && r.messages >= room.enoughLocked(kw) {
				return true
			}
		}
	}
	return false
}

// waitDelay is how long w waits after failed attempt number attempt (a
// wake-up ends the wait sooner). When one holder has the key, the retry
// delay, or less if the key expires sooner. When nobody has it (votes split
// among contenders who all lost, and release), or its holder is releasing
// it (see released), a short random back-off of a few attempt durations,
// doubling with each such failure in a row (splits), so that contenders do
// not collide again; split reports this case. On faults, the retry delay.
func (c *Client) waitDelay(w *waiter, o *op, tok *token, br *burstResult, attempt, splits int, took time.Duration) (d time.Duration, split bool, holder [releaseIDLen]byte, held bool) {
	d = c.retryDelay(attempt)
	if br.ok >= c.quorum {
		// A quorum said yes but the validity ran out first (a TTL too
		// short for these masters, or a pause): no split, nobody to wait
		// for; trying again at once would fail the same way.
		return d, false, holder, false
	}
	held, holder, elect, freeIn := o.contention(tok)
	switch {
	case held && !c.room.released(w, holder):
		if freeIn >= 0 {
			d = min(d, freeIn+driftFloor)
		}
		return d, false, holder, true
	case elect && br.failed == 0:
		// First among the losers: again at once (the others' releases
		// may still be on their way: a back-off of about a round trip).
		return rand.N(took/2 + 1), true, holder, false
	case held || br.failed == 0: // its holder is releasing it, or a split
		window := max(2*took, 200*time.Microsecond) << min(splits, 6)
		return took + rand.N(min(window, d)+1), true, holder, false
	}
	return d, false, holder, false
}
