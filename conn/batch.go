package conn

import "time"

// Batch is a fan-out: requests sent together to several Conns, one per
// slot, and the channel their completions arrive on. It carries out the
// Request lifetime contract (see Request) for the caller: a slot's Request
// is made once and reused by every Send of that slot, a caller that gives
// up abandons what is still pending (the Conns recycle those), and the
// completions that raced with the giving up are received, not lost.
//
// Use: Send to each slot, then Next (or TryNext, beside a Poller) until
// the answers needed have come, then Abandon what is left. Send a slot
// again once its answer has come (a retry), or, after Abandon, to start the
// next round. Release when done with the Batch for good.
//
// Ownership: the creator owns the Batch and every Request in it, except
// those pending at Abandon, which go to their Conns. A Request that Next
// returns is the caller's to read until its slot is sent again, Abandon, or
// Release; the caller never releases or abandons it itself. A Batch is for
// one goroutine at a time.
type Batch struct {
	reqs    []*Request // per slot; nil until its first Send and after Abandon gave it up
	sent    []bool     // the slot's request is pending or on notify, not yet returned by Next
	pending int        // slots with sent set
	notify  chan *Request
}

// NewBatch returns a Batch of slots slots.
func NewBatch(slots int) *Batch {
	return &Batch{
		reqs:   make([]*Request, slots),
		sent:   make([]bool, slots),
		notify: make(chan *Request, slots),
	}
}

// Slots returns the number of slots.
func (b *Batch) Slots() int { return len(b.reqs) }

// Pending returns how many requests were sent and not yet returned by Next.
func (b *Batch) Pending() int { return b.pending }

// Send sends cmd (copied) to c as the request of slot, whose Tag is slot.
// The slot must not be pending.
func (b *Batch) Send(slot int, c *Conn, cmd []byte) {
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
	b.sent[slot] = true
	b.pending++
	c.Send(r, b.notify)
}

// Next waits for a pending request to complete and returns it; or returns
// nil when timeout or done fires first (either may be nil: never fires),
// or at once when nothing is pending.
func (b *Batch) Next(timeout <-chan time.Time, done <-chan struct{}) *Request {
	if b.pending == 0 {
		return nil
	}
	select {
	case r := <-b.notify:
		return b.received(r)
	case <-timeout:
		return nil
	case <-done:
		return nil
	}
}

// TryNext returns a completed request if one is there, else nil, without
// waiting.
func (b *Batch) TryNext() *Request {
	select {
	case r := <-b.notify:
		return b.received(r)
	default:
		return nil
	}
}

func (b *Batch) received(r *Request) *Request {
	b.sent[r.Tag] = false
	b.pending--
	return r
}

// Abandon gives up on every pending request. Those still pending go to
// their Conns (which recycle them when their replies come), and their slots
// get new Requests at their next Send; those that completed meanwhile are
// received and passed to late, when not nil, as Next would have returned
// them. Afterwards nothing is pending.
func (b *Batch) Abandon(late func(r *Request)) {
	if b.pending == 0 {
		return
	}
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

// Release abandons what is pending and returns every Request to the pool.
// The Batch must not be used afterwards.
func (b *Batch) Release() {
	b.Abandon(nil)
	for i, r := range b.reqs {
		if r != nil {
			r.Release()
			b.reqs[i] = nil
		}
	}
}
