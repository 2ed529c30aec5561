package pipe

import (
	"time"

	"github.com/volleylock/volley/resp"
)

// Why Await returned.
const (
	woke         = iota // nothing yet
	WokeDecided         // Hear said the round is decided
	WokeDeadline        // the round's deadline passed first
	WokeDone            // done closed first
)

// Queue fills slot of a driven round with cmd (copied into the Batch),
// for c: the command Drive hands to the Group's driver. The slot must not
// be pending. Check and ReplayUntil apply as for Send.
func (b *Batch) Queue(slot int, c *Conn, cmd []byte) { b.QueueWith(slot, c, cmd, nil, nil) }

// QueueWith is Queue of cmd followed by then (copied, when not nil) in
// the same write, whose answer nobody reads, vetted by thenCheck when not
// nil: SendWith for a driven round.
func (b *Batch) QueueWith(slot int, c *Conn, cmd, then []byte, thenCheck func(reply []resp.Value) bool) {
	b.queuePair(slot, c, cmd, then, thenCheck, false)
}

// QueueAfter is Queue of cmd right after first (copied), whose answer
// nobody reads: SendAfter for a driven round. Nothing comes between them
// on the connection, and neither is written without the other.
func (b *Batch) QueueAfter(slot int, c *Conn, first, cmd []byte) {
	b.queuePair(slot, c, cmd, first, nil, true)
}

// queuePair is Queue of cmd with mate (when not nil) right behind it, or
// right before it when mateFirst. The bytes are copied into the slot's
// own buffers of the Batch: the driver writes them as tickets, with no
// Request (see ticket.go), so that the caller touches none.
func (b *Batch) queuePair(slot int, c *Conn, cmd, mate []byte, mateCheck func(reply []resp.Value) bool, mateFirst bool) {
	if b.sent[slot] {
		panic("conn: Batch.Queue to a pending slot")
	}
	q := &b.queue[slot]
	q.cmd = append(q.cmd[:0], cmd...)
	q.check = b.Check
	q.replayUntil = b.ReplayUntil
	q.hasMate = mate != nil
	q.mateCheck, q.mateFirst = nil, false
	if q.hasMate {
		q.mate = append(q.mate[:0], mate...)
		q.mateCheck, q.mateFirst = mateCheck, mateFirst
	}
	b.sent[slot] = true
	b.pending++
	b.conns[slot] = c
}

// armRound makes slot's queued command a Request, armed as sent at now,
// and hands it to out with c, with the command queued with it
// (QueueWith, QueueAfter), which goes to the Conn, in the order they are
// written (b.mu held). It serves a round that no driver writes (see
// dispatch).
func (b *Batch) armRound(slot int, now int64, out func(c *Conn, r *Request)) {
	q, c := &b.queue[slot], b.conns[slot]
	r := NewRequest()
	r.Cmd = append(r.Cmd[:0], q.cmd...)
	r.Tag = slot
	r.check = q.check
	r.ReplayUntil = q.replayUntil
	r.batch = b
	r.driven = true
	r.gen = b.gen.Load()
	r.arm(nil, now)
	if !q.hasMate {
		out(c, r)
		return
	}
	t := mateOf(r, q.mate, q.mateCheck, q.mateFirst)
	t.arm(nil, now)
	t.state.Store(stateAbandoned) // the Conn's from now on: it recycles it once answered or failed
	var two [2]*Request
	for _, p := range appendPair(two[:0], r, t) {
		out(c, p)
	}
}

// Drive hands the round's queued slots (see Queue) to the Group's driver,
// which writes them with other callers' commands and gives each answer
// to Hear, until deadline; then Await waits for the decision. A Batch
// without a Group, or whose Group is closed, writes them itself.
func (b *Batch) Drive(deadline time.Time) {
	b.mu.Lock()
	b.driven = true
	b.woken = false
	b.why = woke
	b.deadline = int64(deadline.Sub(epoch))
	for i, sent := range b.sent {
		if sent {
			b.queued = append(b.queued, i)
		}
	}
	b.mu.Unlock()
	b.dispatch()
}

// dispatch hands the round's queued slots to the Group's driver, or
// writes them itself when there is none (no Group, or it is closed).
func (b *Batch) dispatch() {
	if b.group != nil && b.group.d.submit(b) {
		return
	}
	now := monoNow()
	type out struct {
		c    *Conn
		reqs []*Request
	}
	var outs []out
	b.mu.Lock()
	for _, slot := range b.queued {
		b.armRound(slot, now, func(c *Conn, r *Request) {
			if n := len(outs); n > 0 && outs[n-1].c == c {
				outs[n-1].reqs = append(outs[n-1].reqs, r)
				return
			}
			outs = append(outs, out{c, []*Request{r}})
		})
	}
	b.queued = b.queued[:0]
	b.mu.Unlock()
	for _, o := range outs {
		o.c.sendRound(o.reqs, now)
	}
}

// Await waits until the driven round is decided (Hear said so), its
// deadline passes, or done closes (nil: never), and says which
// (WokeDecided, WokeDeadline, WokeDone). Hear may still run for answers
// that come after it returns, until End.
func (b *Batch) Await(done <-chan struct{}) int {
	for {
		signalled := false
		if done == nil {
			<-b.wake
			signalled = true
		} else {
			select {
			case <-b.wake:
				signalled = true
			case <-done:
			}
		}
		b.mu.Lock()
		switch {
		case signalled && !b.woken:
			// Stale: left by a completion of an earlier round that was
			// not driven (see NextOf).
			b.mu.Unlock()
			continue
		case !signalled && b.woken:
			<-b.wake // sent as it was woken: not for the next round
		case !signalled:
			b.woken = true
			b.why = WokeDone
		}
		why := int(b.why)
		b.mu.Unlock()
		return why
	}
}

// heard completes r, a driven round's request, with a reply (vals, valid
// during the call) or a failure (err): Hear reads it, and wakes the
// caller when it says the round is decided. Then r is recycled: Hear
// keeps nothing of it. An abandoned r, or one of an ended round, is
// recycled unread.
func (b *Batch) heard(r *Request, vals []resp.Value, err error) {
	b.mu.Lock()
	if r.gen != b.gen.Load() || !r.state.CompareAndSwap(statePending, stateDone) {
		b.mu.Unlock()
		r.recycle() // abandoned at End, or its round ended: nobody reads it
		return
	}
	r.err = err
	own := r.vals
	r.vals = vals
	again := b.hear(r)
	b.mu.Unlock()
	r.vals = own[:0]
	r.recycle()
	if again {
		b.dispatch()
	}
}

// heardTicket is heard for the answer to a ticket (see ticket.go) e,
// read at now (a monoNow reading; 0 for a failure): an answer of an
// ended round is dropped.
func (b *Batch) heardTicket(e *entry, vals []resp.Value, err error, now int64) {
	b.mu.Lock()
	slot := int(e.slot)
	if e.gen != b.gen.Load() || !b.sent[slot] {
		b.mu.Unlock()
		return
	}
	r := &b.heardReq
	r.Tag, r.vals, r.err, r.Cmd, r.sent, r.arrived = slot, vals, err, b.queue[slot].cmd, e.sent, now
	again := b.hear(r)
	r.vals, r.err, r.Cmd = nil, nil, nil
	b.mu.Unlock()
	if again {
		b.dispatch()
	}
}

// hear gives r, the answer of slot r.Tag, to Hear, wakes the caller when
// Hear says the round is decided, and reports whether Hear queued the
// slot again (then the caller dispatches it, once it has let go of b.mu,
// held).
func (b *Batch) hear(r *Request) (again bool) {
	b.sent[r.Tag] = false
	b.pending--
	decided := b.Hear(r, b.woken)
	again = b.sent[r.Tag] // Hear queued the slot again (see Hear)
	if again {
		b.queued = append(b.queued, r.Tag)
	}
	if decided && !b.woken {
		b.wake1(WokeDecided)
	}
	return again
}

// wake1 wakes the caller of a driven round for why (b.mu held).
func (b *Batch) wake1(why uint8) {
	b.woken = true
	b.why = why
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// expire wakes the caller of a driven round whose deadline is at or
// before now.
func (b *Batch) expire(now int64) {
	b.mu.Lock()
	if b.driven && !b.woken && b.deadline <= now {
		b.wake1(WokeDeadline)
	}
	b.mu.Unlock()
}

// endDriven ends a driven round (see End): its generation ends, so the
// answers still to come, to its tickets and Requests, go to no one (the
// Conns recycle its Requests, and drop those still in their queues that
// are not for replay: see Request.unwanted); those the driver has not
// taken yet are dropped; Hear runs no more.
//
// A round the driver has staged, and not yet handed to every Conn, is
// waited for: a decision can come from the first masters' answers while
// the driver still writes to the others. Its commands are then written
// all the same, as a lone caller's are, so a lock lands on the masters
// past its quorum; and whatever the caller sends next (a failed
// attempt's release) goes after them on each connection, never before.
func (b *Batch) endDriven() {
	b.mu.Lock()
	b.woken = true // staged no more (see driver.write)
	if b.staged.Load() {
		b.mu.Unlock()
		b.group.d.writing.Lock() // the driver's write ends (see driver.write)
		//lint:ignore SA2001 the lock is the wait, nothing is guarded here
		b.group.d.writing.Unlock()
		b.mu.Lock()
	}
	b.queued = b.queued[:0]
	b.gen.Add(1)
	for i, sent := range b.sent {
		if !sent {
			continue
		}
		b.sent[i] = false
		b.pending--
	}
	b.driven = false
	b.woken = true
	select {
	case <-b.wake:
	default:
	}
	clear(b.conns)
	b.mu.Unlock()
}
