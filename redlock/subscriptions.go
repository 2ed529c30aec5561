package redlock

import (
	"bytes"
	"context"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// seenReleases is how many recent releases a key remembers, to count the
// messages of each (one per master that held the key).
const seenReleases = 16

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

// seenRelease is a release whose messages came, and how many did.
type seenRelease struct {
	id       [releaseIDLen]byte
	messages int
	woke     bool      // a quorum of its messages woke a waiter
	first    time.Time // when its first message came
	late     bool      // it woke a waiter before a quorum of its messages came (see wakeLate)
}

// subscribe makes sure that every key of w is subscribed to on every
// master's current pub/sub socket, waiting up to MasterTimeout for the
// confirmations (less if ctx ends). A master that does not confirm in time
// (down, slow, or refusing SSUBSCRIBE by ACL) is left out until the next
// call: its releases then reach w only through the other masters, or the
// retry delay.
func (room *waitRoom) subscribe(ctx context.Context, w *waiter) {
	type pending struct {
		kw      *keyWaiters
		i       int
		gen     uint64
		channel string
		pair    int // the index in confirmed of the key's two channels on master i
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
		room.mu.Lock()
		subs := room.allSubsLocked()
		room.mu.Unlock()
		for _, sc := range subs {
			if sc != nil {
				sc.WaitReady(wctx)
			}
		}
	}

	var todo []pending  // per slot of b
	var confirmed []int // per key and master, its channels confirmed
	b := pipe.NewBatch(2 * len(w.keys) * len(room.c.masters))
	defer b.Release() // unconfirmed in time: left out
	var cmd []byte
	room.mu.Lock()
	if room.closed {
		room.mu.Unlock()
		return
	}
	// Sent under mu, so that an SSUBSCRIBE and the SUNSUBSCRIBE of a key whose
	// last waiter left (see leave) reach the master in the order of the
	// decisions that made them.
	for _, k := range w.keys {
		kw := room.keys[k]
		for i := range room.c.masters {
			sc := room.subAtLocked(i, k)
			if sc == nil {
				continue
			}
			info := sc.Info()
			if info == nil || kw.subGen[i] == info.Generation {
				continue
			}
			kw.tried[i] = info.Generation
			for _, ch := range [2]string{room.channel(i, k), room.wakeChannel(i, k)} {
				cmd = appendShardSub(cmd[:0], "SSUBSCRIBE", ch)
				b.Send(len(todo), sc, cmd)
				todo = append(todo, pending{kw: kw, i: i, gen: info.Generation, channel: ch, pair: len(confirmed)})
			}
			confirmed = append(confirmed, 0)
		}
	}
	room.mu.Unlock()

	for b.Pending() > 0 {
		r := b.Next(time.Time{}, wctx.Done())
		if r == nil {
			return
		}
		if p := todo[r.Tag]; r.Err() == nil && subscribed(r.Reply(), p.channel) {
			if confirmed[p.pair]++; confirmed[p.pair] == 2 {
				room.mu.Lock()
				p.kw.subGen[p.i] = p.gen
				room.mu.Unlock()
			}
		}
	}
}

// channel is the shard channel on which master i publishes the releases
// of key: the release scripts' releasedChannelPrefix and their key, which
// for a cluster copy starts with the copy's tag (see wire), so that the
// channel is in the copy's slot: the scripts' SPUBLISH stays on that
// shard (a PUBLISH would cross the cluster bus to every node).
func (room *waitRoom) channel(i int, key string) string {
	return releasedChannelPrefix + room.c.tagFor(i, room.c.placement(key)) + key
}

// wakeChannel is the shard channel on which master i tells this Client
// that a release of key took it off the key's waiters (see waiters.go):
// the key's channel followed by the Client's wakeSuffix, in its slot.
func (room *waitRoom) wakeChannel(i int, key string) string {
	return room.channel(i, key) + room.c.wakeSuffix
}

// subAtLocked returns the pub/sub connection on which master i's releases
// of key are heard: the master's own, or over a Redis Cluster that of the
// node that serves the key's copy i, made at its first use; nil until
// someone first waits (mu held).
func (room *waitRoom) subAtLocked(i int, key string) *pipe.Conn {
	if room.subs == nil {
		return nil
	}
	cs := room.c.cluster
	if cs == nil {
		return room.subs[i]
	}
	n := cs.view.Load().owner[cs.copySlot(i, room.c.placement(key))]
	sc := room.nodeSubs[n]
	if sc == nil && !room.closed {
		sc = room.newSub(cs.entry.nodeOptions(n.addr))
		room.nodeSubs[n] = sc
	}
	return sc
}

// allSubsLocked returns every pub/sub connection of the room (mu held).
func (room *waitRoom) allSubsLocked() []*pipe.Conn {
	if room.c.cluster == nil {
		return room.subs
	}
	out := make([]*pipe.Conn, 0, len(room.nodeSubs))
	for _, sc := range room.nodeSubs {
		out = append(out, sc)
	}
	return out
}

// rerouted learns that some of cluster copy i's slots have a new node: its
// keys' subscriptions for copy i are made again where they are now (the
// longest waiting waiter of each key is woken to do it, as after a
// reconnect).
func (room *waitRoom) rerouted(i int) {
	room.mu.Lock()
	defer room.mu.Unlock()
	for _, kw := range room.keys {
		kw.subGen[i], kw.tried[i] = 0, 0
		room.wakeLocked(kw)
	}
	for _, l := range room.idle {
		l.subGen[i], l.tried[i] = 0, 0
	}
}

// dropped closes the pub/sub connections to nodes that the cluster no
// longer names.
func (room *waitRoom) dropped(nodes []*node) {
	var old []*pipe.Conn
	room.mu.Lock()
	for _, n := range nodes {
		if sc := room.nodeSubs[n]; sc != nil {
			old = append(old, sc)
			delete(room.nodeSubs, n)
		}
	}
	room.mu.Unlock()
	for _, sc := range old {
		sc.Close() // not under mu: its reader may be in onMessage
	}
}

// subscribed reports whether a reply confirms the SSUBSCRIBE of channel.
// The channel is checked, not the kind alone: a cluster node that loses a
// slot sends its subscribers an SUNSUBSCRIBE unasked, which the Conn pairs
// with the oldest pending request; every confirmation after it is then
// paired one request late, and none confirms (until the surplus reply,
// with no request left, fails the socket and the Conn reconnects).
func subscribed(vals []resp.Value, channel string) bool {
	return len(vals) == 4 && (vals[0].Type == resp.TypeArray || vals[0].Type == resp.TypePush) &&
		string(vals[1].Bytes) == "ssubscribe" && string(vals[2].Bytes) == channel
}

// moved learns that master i moved to the server that opts name (see
// Client.move): from now on its pub/sub connection goes there too, and
// every key's waiters subscribe there again (the longest waiting of each
// is woken to do it, as after a reconnect).
func (room *waitRoom) moved(i int, opts pipe.Options) {
	room.mu.Lock()
	room.c.masters[i].opts = opts
	var old *pipe.Conn
	if room.subs != nil && room.subs[i] != nil && !room.closed {
		old = room.subs[i]
		room.subs[i] = room.newSub(opts)
		for _, kw := range room.keys {
			kw.subGen[i], kw.tried[i] = 0, 0
			room.wakeLocked(kw)
		}
		for _, l := range room.idle {
			l.subGen[i], l.tried[i] = 0, 0
		}
	}
	room.mu.Unlock()
	if old != nil {
		old.Close() // not under mu: its reader may be in onMessage
	}
}

// open starts the pub/sub connections (mu held): one per master, or over
// a Redis Cluster one per node.
func (room *waitRoom) open() {
	room.subs = make([]*pipe.Conn, len(room.c.masters))
	if cs := room.c.cluster; cs != nil {
		room.nodeSubs = map[*node]*pipe.Conn{}
		for _, n := range cs.view.Load().nodes {
			room.nodeSubs[n] = room.newSub(cs.entry.nodeOptions(n.addr))
		}
		return
	}
	for i, m := range room.c.masters {
		room.subs[i] = room.newSub(m.opts)
	}
}

// newSub returns a pub/sub connection made with a master's opts, or nil.
// The same options made the master's own Conn, so pipe.New cannot fail;
// if it did, that master's releases would reach no one here, and the
// retry delay would stand in.
func (room *waitRoom) newSub(opts pipe.Options) *pipe.Conn {
	opts.Scripts = nil
	opts.OnMessage = room.onMessage
	opts.OnConnect = room.onConnect
	sc, err := pipe.New(opts)
	if err != nil {
		return nil
	}
	return sc
}

// onMessage takes a release's message from a master. The message that
// makes a quorum of them wakes the key's longest waiting waiter, unless
// the messages name another Client to wake (see waiters.go): the
// release then ran on a quorum of masters, so a quorum is free. (Waking at
// the first message would send the waiter to masters the release has not
// reached yet, its holder still sending it: a wasted attempt under load.)
// A release whose key was on fewer than a quorum of masters, or whose
// messages were lost, wakes no one: its waiters' own waits end.
func (room *waitRoom) onMessage(channel, payload []byte) {
	key, ok := bytes.CutPrefix(channel, []byte(releasedChannelPrefix))
	if !ok || len(key) < room.c.tagLen {
		return
	}
	key = key[room.c.tagLen:] // a cluster copy's tag (see channel)
	room.mu.Lock()
	defer room.mu.Unlock()
	kw := room.keys[string(key)]
	if named, ok := bytes.CutSuffix(key, []byte(room.c.wakeSuffix)); ok && kw == nil {
		// This Client's channel of the key (see wakeChannel).
		kw = room.keys[string(named)]
		key = named
	}
	if kw == nil {
		return
	}
	if string(payload) == announcedPayload {
		// A new leader's announcement (see Election): no release.
		kw.alertLocked()
		return
	}
	var id [releaseIDLen]byte
	copy(id[:], payload)
	r := kw.release(id)
	if r == nil {
		r = &kw.seen[kw.nseen%seenReleases]
		if r.messages > 0 && !r.woke && !r.late {
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
		*r = seenRelease{id: id, woke: room.ownLocked(id) && !selfWake, first: time.Now()}
		kw.nseen++
	}
	r.messages++
	if r.woke {
		return
	}
	if r.messages >= room.enoughLocked(kw, string(key)) {
		// Also after a late wake-up (see wakeLate): the waiter it sent may
		// have attempted before the release reached a quorum, and wait for
		// its holder's release, which this is.
		r.woke = true
		room.wakeLocked(kw)
		return
	}
	if !r.late {
		room.armLateLocked(kw, string(key), room.lateWait(string(key)))
	}
}

// armLateLocked makes sure that a release of key whose messages reached
// this Client from fewer masters than it waits for wakes a waiter anyway
// after MasterTimeout (see wakeLate) (mu held). Such a release ran on
// every master that published, and the others' messages went to other
// Clients: where the masters' waiters' sets disagree (a master that
// missed an enrolment), a release tells one Client on some masters and
// another on the rest, and none hears a quorum. Without this, each would
// wait for the next release or its RetryDelay. The wait is twice the
// quorum's latest reply latency (at least a millisecond, at most
// MasterTimeout): with MasterTimeout (50 ms) instead, lockbench's
// handoff mode (4 processes of 4 goroutines) made 584-772 acquisitions/s
// with a hand-off p99 of 29-37 ms, against 962-1,074 and 6-7 ms.
func (room *waitRoom) armLateLocked(kw *keyWaiters, key string, d time.Duration) {
	if kw.lateArmed || room.closed {
		return
	}
	kw.lateArmed = true
	if kw.late == nil {
		kw.late = time.AfterFunc(d, func() { room.wakeLate(kw, key) })
		return
	}
	kw.late.Reset(d)
}

// minLateWake is the least wait for a release's other messages (see
// armLateLocked).
const minLateWake = time.Millisecond

// lateWait is how long after a release's first message its other
// messages may still come (see armLateLocked): one release's messages
// leave the masters within about a round trip of each other (the release
// went to all of them in one write).
func (room *waitRoom) lateWait(key string) time.Duration {
	return min(room.c.cfg.MasterTimeout, max(minLateWake, 2*room.c.quorumLatency(room.c.placement(key))))
}

// wakeLate wakes a waiter of key for the releases that reached this
// Client from fewer masters than it waits for (see armLateLocked), once
// their first message is lateWait old; it arms the timer again for those
// that are younger (a release that began after the timer was armed). kw
// is key's waiters when the timer was armed: if they left meanwhile,
// nothing is woken.
func (room *waitRoom) wakeLate(kw *keyWaiters, key string) {
	room.mu.Lock()
	defer room.mu.Unlock()
	kw.lateArmed = false
	if room.closed || room.keys[key] != kw {
		return
	}
	d := room.lateWait(key)
	now := time.Now()
	wake, next := false, time.Duration(0)
	for i := range min(kw.nseen, seenReleases) {
		r := &kw.seen[i]
		if r.messages == 0 || r.woke || r.late {
			continue
		}
		if age := now.Sub(r.first); age < d {
			if next == 0 || d-age < next {
				next = d - age
			}
			continue
		}
		r.late = true
		wake = true
	}
	if wake {
		room.wakeLocked(kw)
	}
	if next > 0 {
		room.armLateLocked(kw, key, next)
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
// when that is fewer (an SSUBSCRIBE not confirmed within MasterTimeout), but
// at least one (mu held).
func (room *waitRoom) enoughLocked(kw *keyWaiters, key string) int {
	confirmed := 0
	for i := range room.c.masters {
		if sc := room.subAtLocked(i, key); sc != nil {
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

// lastRelease sets *id to the release of key whose message reached this
// Client last, and reports whether there is one.
func (room *waitRoom) lastRelease(key string, id *[releaseIDLen]byte) bool {
	room.mu.Lock()
	defer room.mu.Unlock()
	kw := room.keys[key]
	if kw == nil || kw.nseen == 0 {
		return false
	}
	*id = kw.seen[(kw.nseen-1)%seenReleases].id
	return true
}

// onConnect learns that a pub/sub socket was (re)opened, without
// subscriptions: it wakes the longest waiting waiter of every key, which
// attempts, subscribes again (see wait), and attempts once more before it
// waits; releases missed meanwhile cost no more than that.
func (room *waitRoom) onConnect(info *pipe.ServerInfo) {
	if info.Generation == 1 {
		return // the first connect: nothing was subscribed before
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	for _, kw := range room.keys {
		room.wakeLocked(kw)
	}
}

// staleLocked reports whether one of w's keys was not subscribed to on a
// pub/sub socket that is up (mu held). An SSUBSCRIBE sent but not confirmed
// (refused, or late) is not tried again before a reconnect.
func (room *waitRoom) staleLocked(w *waiter) bool {
	for _, k := range w.keys {
		kw := room.keys[k]
		for i := range room.c.masters {
			sc := room.subAtLocked(i, k)
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

// released reports whether w has seen the release of the holder with id
// (a quorum of messages on one of its keys' channels) and the release is
// for this Client: it named this Client, or no Client (see waiters.go). A
// waiter whose attempt still finds that holder (a release published by
// some masters can reach others after the attempt) must not wait for a
// release that came for it; one named for another Client is that
// Client's to take, and this one waits on.
func (room *waitRoom) released(w *waiter, id [releaseIDLen]byte) bool {
	room.mu.Lock()
	defer room.mu.Unlock()
	return room.releasedLocked(w, id)
}

// releasedLocked is released with mu held.
func (room *waitRoom) releasedLocked(w *waiter, id [releaseIDLen]byte) bool {
	for _, k := range w.keys {
		if kw := room.keys[k]; kw != nil {
			if r := kw.release(id); r != nil && r.messages >= room.enoughLocked(kw, k) {
				return true
			}
		}
	}
	return false
}

// subscriptionLinger is how long a key's subscriptions outlive its last
// waiter. A Client whose Locks wait on the same key again soon (a fleet's
// hot lock: at 64 processes on one key each process began a wait about
// twice a second) then finds them made, and neither unsubscribes nor
// subscribes again: four commands per master each time, a tenth of the
// commands per grant. At most maxLingering keys linger; past that, a
// key's subscriptions end with its last waiter. A lingering key's
// messages wake no one (it has no waiters).
const (
	subscriptionLinger = 2 * time.Second
	maxLingering       = 64
)

// lingering is the subscription state of a key without waiters (see
// keyWaiters.subGen), kept until until.
type lingering struct {
	subGen, tried []uint64
	until         time.Time
}

// lingerLocked keeps the subscriptions of key, whose last waiter left
// (kw its state, no longer in room.keys), for subscriptionLinger; or ends
// them at once when maxLingering keys linger already (mu held).
func (room *waitRoom) lingerLocked(key string, kw *keyWaiters) {
	if len(room.idle) >= maxLingering {
		room.unsubscribeLocked(key, kw.tried)
		return
	}
	if room.idle == nil {
		room.idle = make(map[string]*lingering)
	}
	room.idle[key] = &lingering{subGen: kw.subGen, tried: kw.tried, until: time.Now().Add(subscriptionLinger)}
	if !room.sweepArmed {
		room.sweepArmed = true
		if room.sweeper == nil {
			room.sweeper = time.AfterFunc(subscriptionLinger, room.sweep)
		} else {
			room.sweeper.Reset(subscriptionLinger)
		}
	}
}

// unsubscribeLocked sends key's SUNSUBSCRIBEs to the masters whose
// pub/sub sockets tried says an SSUBSCRIBE of it went to (mu held).
func (room *waitRoom) unsubscribeLocked(key string, tried []uint64) {
	for i := range room.c.masters {
		if tried[i] == 0 {
			continue
		}
		if sc := room.subAtLocked(i, key); sc != nil {
			for _, ch := range [2]string{room.channel(i, key), room.wakeChannel(i, key)} {
				r := pipe.NewRequest()
				r.Cmd = appendShardSub(r.Cmd[:0], "SUNSUBSCRIBE", ch)
				sc.SendForget(r)
			}
		}
	}
}

// sweep is the sweeper's: it ends the subscriptions that lingered their
// time, and arms itself again for the others.
func (room *waitRoom) sweep() {
	room.mu.Lock()
	defer room.mu.Unlock()
	room.sweepArmed = false
	if room.closed {
		return
	}
	now := time.Now()
	var next time.Time
	for k, l := range room.idle {
		if now.Before(l.until) {
			if next.IsZero() || l.until.Before(next) {
				next = l.until
			}
			continue
		}
		delete(room.idle, k)
		room.unsubscribeLocked(k, l.tried)
	}
	if !next.IsZero() {
		room.sweepArmed = true
		room.sweeper.Reset(time.Until(next))
	}
}
