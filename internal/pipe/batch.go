package pipe

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/resp"
)

// Batch is a fan-out: requests sent together to several Conns, one per
// slot, and the channel their completions arrive on. It carries out the
// Request lifetime contract (see Request) for the caller: a slot's Request
// is made once and reused by every Send of that slot, a caller that gives
// up abandons what is still pending (the Conns recycle those), and the
// completions that raced with the giving up are received, not lost.
//
// Use: a round is Claim (optional, for a Batch of a Group), Send to each
// slot, then Next until the answers needed have come, then End, which
// gives up on what is left. Send a slot again once its answer has come (a
// retry) or in the next round. Release when done with the Batch for good.
// A driven round (drive.go) is Queue to each slot, Drive, Await, End: the
// Group's driver writes it with other callers' rounds and Hear reads its
// answers where they are read; rounds of both kinds may follow each other.
//
// Ownership: the creator owns the Batch and every Request in it, except
// those pending at End, which go to their Conns. A driven round's
// commands are the Batch's copies until the driver writes them; the
// Requests the driver makes of them (see armRound, requestsOf) are the
// driver's and the Conns'. A Request that Next returns is the caller's
// to read until its slot is sent again, End, or Release; the caller
// never releases or abandons it itself. A Batch is for one goroutine at
// a time.
type Batch struct {
	// Check is the check (SetCheck) of the requests Send sends from now on:
	// nil, or a function of the reply alone (see SetCheck).
	Check func(reply []resp.Value) bool
	// ReplayUntil is the Request.ReplayUntil of the requests Send sends
	// from now on (not of the commands that follow them in SendWith).
	ReplayUntil time.Time

	reqs    []*Request // per slot; nil until its first Send and after End gave it up
	sent    []bool     // the slot's request is pending or on notify, not yet returned by Next
	pending int        // slots with sent set
	notify  chan *Request

	// The wake-up of a caller that waits for several completions (see
	// NextOf): ready counts the requests put on notify and not yet taken
	// off it (each completer adds one after its send, so ready never
	// exceeds what notify holds); want is what the caller waits for; wake
	// (capacity 1) is signalled by the completer that makes ready reach
	// want. A signal nobody waits for any more is stale: a waiter that
	// finds nothing on notify waits again.
	ready atomic.Int32
	want  atomic.Int32
	wake  chan struct{}

	// stamp is the clock reading of the Sends since the last Next (see
	// monoNow): a fan-out's requests leave together, one reading serves
	// them all; 0 when none is taken yet.
	stamp int64

	// Hear reads each answer of a driven round (see Drive), on the
	// goroutine that reads it, with the Batch's mu held: r (its Tag,
	// Cmd, reply, error and arrival) is valid during the call only.
	// late says that the round is woken already (decided, past its
	// deadline, or given up), and its caller not yet at End. It reports whether the round is decided: its caller
	// is woken then. Before it is late, it may Queue (or QueueWith) r's
	// slot again, to the same or another Conn: the driver writes that as
	// it writes the round's other slots (a refused form sent again in
	// another). Set by the Batch's creator, once.
	Hear func(r *Request, late bool) (decided bool)

	// A driven round's state, guarded by mu (listed by the driver's).
	mu       sync.Mutex
	driven   bool    // the round is driven (Drive until End)
	queued   []int   // slots the driver has yet to write
	conns    []*Conn // per slot, the Conn of a driven round's command
	woken    bool    // the caller is woken, or gave up
	why      uint8   // why it was woken: see Await
	deadline int64   // a monoNow reading
	listed   bool    // in the driver's rounds (see driver.submit)
	// staged is set while the driver hands the round's staged commands
	// to their Conns (see driver.write, Batch.endDriven).
	staged atomic.Bool

	// queue holds, per slot, what Queue filled (guarded by mu). gen is
	// the driven round's generation: End adds one, so that the answers
	// of an ended round, to tickets and Requests that carry the one
	// before, are told apart and dropped (see heardTicket). heardReq is
	// what Hear is given for a ticket's answer (mu held).
	queue    []queuedSlot
	gen      atomic.Uint32
	heardReq Request

	group   *Group      // nil for a Batch made by NewBatch
	claimed bool        // this round holds the group's claim
	timer   *time.Timer // made at the first Next with a deadline and no claim
	armed   time.Time   // the deadline timer is armed for; zero when stopped
}

// queuedSlot is a driven round's slot as Queue filled it (copied): the
// driver writes it as a ticket (see ticket.go), or makes a Request of it
// where a ticket cannot go.
type queuedSlot struct {
	cmd, mate   []byte
	check       func(reply []resp.Value) bool
	mateCheck   func(reply []resp.Value) bool
	mateFirst   bool // mate prepares cmd (QueueAfter)
	hasMate     bool
	replayUntil time.Time
}

// NewBatch returns a Batch of slots slots.
func NewBatch(slots int) *Batch {
	return &Batch{
		reqs:   make([]*Request, slots),
		sent:   make([]bool, slots),
		notify: make(chan *Request, slots),
		conns:  make([]*Conn, slots),
		queue:  make([]queuedSlot, slots),
		wake:   make(chan struct{}, 1),
	}
}

// Pending returns how many requests were sent and not yet returned by Next.
func (b *Batch) Pending() int { return b.pending }

// Send sends cmd (copied) to c as the request of slot, whose Tag is slot.
// The slot must not be pending.
func (b *Batch) Send(slot int, c *Conn, cmd []byte) { b.SendWith(slot, c, cmd, nil, nil) }

// SendWith is Send of cmd followed by then (copied, when not nil), whose
// answer nobody reads (see Conn.SendWith), vetted by thenCheck when not
// nil.
func (b *Batch) SendWith(slot int, c *Conn, cmd, then []byte, thenCheck func(reply []resp.Value) bool) {
	b.sendPair(slot, c, cmd, then, thenCheck, false)
}

// SendAfter is Send of cmd right after first (copied), whose answer nobody
// reads: nothing comes between them on the connection, as for a command
// that prepares the next one (a cluster's ASKING before the command an
// -ASK redirected).
func (b *Batch) SendAfter(slot int, c *Conn, first, cmd []byte) {
	b.sendPair(slot, c, cmd, first, nil, true)
}

// sendPair is Send of cmd with mate (when not nil) right behind it, or
// right before it when mateFirst.
func (b *Batch) sendPair(slot int, c *Conn, cmd, mate []byte, mateCheck func(reply []resp.Value) bool, mateFirst bool) {
	r := b.fill(slot, cmd)
	if b.stamp == 0 {
		b.stamp = monoNow()
	}
	if mate == nil {
		c.send(r, b.notify, nil, b.stamp)
		return
	}
	c.sendWith(r, b.notify, mateOf(r, mate, mateCheck, mateFirst), b.stamp)
}

// mateOf returns a Request of mate (copied), the command that goes with
// r: right behind it, or right before it when first (it prepares r).
// Nobody reads its answer; check, when not nil, vets it.
func mateOf(r *Request, mate []byte, check func(reply []resp.Value) bool, first bool) *Request {
	t := NewRequest()
	t.Cmd = append(t.Cmd[:0], mate...)
	t.check = check
	t.forget = true
	if first {
		t.prepares = r
	}
	return t
}

// fill makes slot's request, for Send, hold cmd (copied) and the
// Batch's Check and ReplayUntil, and counts the slot pending. The slot
// must not be pending.
func (b *Batch) fill(slot int, cmd []byte) *Request {
	if b.sent[slot] {
		panic("conn: Batch.Send to a pending slot")
	}
	r := b.reqs[slot]
	if r == nil {
		r = NewRequest()
		b.reqs[slot] = r
	}
	r.Cmd = append(r.Cmd[:0], cmd...)
	r.Tag = slot
	r.check = b.Check
	r.ReplayUntil = b.ReplayUntil
	r.batch = b
	r.driven = false
	b.sent[slot] = true
	b.pending++
	return r
}

// Claim, before a round's first Send, makes this Batch the reader of its
// Group's Conns until End, if each is up, detached (Linux, plain TCP or
// Unix socket, not pub/sub), and owes no reply that someone else waits
// for, and no other claim holds anywhere in the process. It reports
// whether it did; without a claim the round works the same, through the
// Conns' reader goroutines. A Batch without a Group never claims.
//
// With the claim, Next waits in epoll_wait, holding the goroutine's
// processor: that is what brings a lone caller's burst to the machine's
// floor, and why a claim waits that way for at most a millisecond in all
// before Next lets go of it and waits on the reader goroutines as without
// one (short enough, too, that done is noticed in time: an epoll wait
// cannot select on a channel).
func (b *Batch) Claim() bool {
	if b.group == nil || b.claimed {
		return b.claimed
	}
	b.claimed = b.group.p.tryClaim()
	return b.claimed
}

// Next waits for a pending request to complete and returns it; or returns
// nil at deadline (zero: none; see deadlineGrace for what it waits past
// it) or when done closes (nil: never), or at once when nothing is
// pending.
func (b *Batch) Next(deadline time.Time, done <-chan struct{}) *Request {
	return b.NextOf(1, deadline, done)
}

// NextOf is Next for a caller that can do nothing with fewer than n more
// completions (a vote that needs a quorum): a completed request is
// returned at once if there is one; otherwise it waits until n of the
// pending requests (all of them, if fewer are pending) have completed,
// and is woken once for them rather than once per completion. Without a
// claim, that is; a claim reads the replies itself and returns each as
// it comes.
func (b *Batch) NextOf(n int, deadline time.Time, done <-chan struct{}) *Request {
	b.stamp = 0 // a Send after a wait takes a reading of its own
	if b.pending == 0 {
		return nil
	}
	for b.claimed {
		if r := b.tryNext(); r != nil {
			return r
		}
		select {
		case <-done:
			return nil
		default:
		}
		wait := time.Duration(1<<63 - 1)
		if !deadline.IsZero() {
			if wait = time.Until(deadline); wait <= 0 {
				// Replies may sit unread in the sockets: the reader
				// goroutines read them in the grace below.
				b.unclaim()
				break
			}
		}
		if !b.group.p.poll(wait) {
			// The claim waited its share: the rest are the reader
			// goroutines' from here on.
			b.unclaim()
		}
	}
	n = max(1, min(n, b.pending))
	graced := false
	for {
		if r := b.tryNext(); r != nil {
			return r
		}
		// Nothing on notify: wait until n are. The order of want's store
		// and ready's load here, and of ready's add and want's load in
		// completed, is what makes sure that one of the two sees the
		// other: no wake-up is lost.
		b.want.Store(int32(n))
		if b.ready.Load() >= int32(n) {
			continue
		}
		var timeout <-chan time.Time
		if !deadline.IsZero() {
			if !deadline.Equal(b.armed) {
				if b.timer == nil {
					b.timer = time.NewTimer(time.Until(deadline))
				} else {
					b.timer.Reset(time.Until(deadline))
				}
				b.armed = deadline
			}
			timeout = b.timer.C
		}
		select {
		case <-b.wake:
		case <-timeout:
			b.armed = time.Time{}
			if graced || deadlineGrace <= 0 {
				return nil
			}
			graced = true
			deadline = time.Now().Add(deadlineGrace)
		case <-done:
			return nil
		}
	}
}

// deadlineGrace is how long NextOf waits past its deadline, once per call,
// before it returns nil. A process that was off the processor when the
// deadline passed (a loaded machine, a fleet of processes on few cores)
// finds its deadline's timer due and its replies unread in the sockets when
// it runs again, and Go's scheduler runs due timers (and the goroutines
// they wake) before it polls the network: without the grace such a caller
// would judge answers lost that came in time, as an Unlock that released on
// every master and reported ErrUnlockFailed. Parking for the grace lets the
// runtime's poller hand the replies to the reader goroutines; what they
// deliver in it is returned as usual. A deadline that passes because the
// answers are late costs the grace more. Tests only change it.
var deadlineGrace = time.Millisecond

func (b *Batch) tryNext() *Request {
	select {
	case r := <-b.notify:
		return b.received(r)
	default:
		return nil
	}
}

func (b *Batch) received(r *Request) *Request {
	b.ready.Add(-1)
	b.sent[r.Tag] = false
	b.pending--
	return r
}

// completed is called by a request's completer right after it put the
// request on notify: it wakes the caller if that makes the completions it
// waits for (see NextOf).
func (b *Batch) completed() {
	if b.ready.Add(1) >= b.want.Load() {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

func (b *Batch) unclaim() {
	if b.claimed {
		b.group.p.release()
		b.claimed = false
	}
}

// End ends the round: it gives up on every pending request, stops the
// deadline's timer and lets go of the claim. Requests still pending go to
// their Conns (which recycle them when their replies come), and their
// slots get new Requests at their next Send; those that completed
// meanwhile are received and passed to late, when not nil, as Next would
// have returned them. Afterwards nothing is pending.
func (b *Batch) End(late func(r *Request)) {
	b.stamp = 0
	if b.driven {
		b.endDriven()
	}
	if b.pending > 0 {
		raced := 0
		for i, r := range b.reqs {
			if !b.sent[i] {
				continue
			}
			if r.Abandon() {
				b.reqs[i] = nil // its Conn owns it now
				b.sent[i] = false
				b.pending--
				continue
			}
			raced++ // completed while we gave up: it is on its way to notify
		}
		for ; raced > 0; raced-- {
			r := b.received(<-b.notify)
			if late != nil {
				late(r)
			}
		}
	}
	if !b.armed.IsZero() {
		b.timer.Stop()
		b.armed = time.Time{}
	}
	b.unclaim()
}

// Release ends the round (see End) and returns every Request to the pool.
// The Batch must not be used afterwards.
func (b *Batch) Release() {
	b.End(nil)
	for i, r := range b.reqs {
		if r != nil {
			r.Release()
			b.reqs[i] = nil
		}
	}
}
