package pipe

import (
	"math"
	"runtime"
	"sync"
	"time"
)

// driver is a Group's driver goroutine: it writes the commands of every
// driven round (see Batch.Drive) to their Conns, several callers' in one
// write per Conn, and, holding the Group's claim while it has rounds in
// flight, reads every reply itself and hands it to its round's answer
// function (Batch.Hear) in place, on its own goroutine. A caller is woken
// once, when its answer function says the round is decided, or at the
// round's deadline; it sets no timer and takes no reply off a channel.
// Under load that replaces, per command, the hand-overs between the
// caller, the Conn's writer and its reader goroutine (a mutex, a copy of
// the reply, a channel operation and a wake-up each) with one entry in a
// round.
//
// A command goes as a ticket (see ticket.go) when its socket can take
// the write at once: the driver copies the round's commands for a Conn
// into one buffer and the socket owes each reply to an entry that names
// the round and slot, with no Request per command. Everything else stays
// the Conn's: its queue when the socket is busy being written or the
// master is behind (the lag policy), where the commands go as Requests,
// MaxPending, the sticky error and reconnects, the replay of releases a
// reset dropped, the NOSCRIPT answer and the reply checks (see
// Conn.sendTickets, Conn.sendRound and socket.deliver). When the driver cannot take the claim (a lone caller
// holds it, a socket is not detached or owes replies to someone else),
// it writes its rounds all the same and the Conns' reader goroutines
// deliver their replies to the answer functions.
//
// Ownership: its Group starts it at the first Drive and stops it at
// Close. incoming is guarded by mu; the rest is the driver goroutine's.
type driver struct {
	p *poller

	mu       sync.Mutex
	incoming []*Batch // rounds submitted since the driver last took them; listed set
	started  bool
	stopped  bool
	poke     chan struct{} // capacity 1: incoming is not empty
	stop     chan struct{} // closed by close
	done     chan struct{} // closed when the goroutine ends

	// writing is held while write stages rounds and hands them to their
	// Conns: a round's End waits on it when the round is staged (see
	// Batch.endDriven).
	writing sync.Mutex

	active  []*Batch    // rounds the driver serves: listed
	outConn []*Conn     // per write to a Conn, the Conn
	out     [][]byte    // per write, the commands staged (see stage)
	tix     [][]staged  // per write, their tickets
	reqs    []*Request  // scratch of sendTickets
	timer   *time.Timer // for the deadlines of a round without the claim
}

func newDriver(p *poller) *driver {
	return &driver{p: p, poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// submit hands round b to the driver; false when the driver is stopped.
func (d *driver) submit(b *Batch) bool {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return false
	}
	if !d.started {
		d.started = true
		d.timer = time.NewTimer(time.Hour)
		d.timer.Stop()
		go d.loop()
	}
	if !b.listed {
		b.listed = true
		d.incoming = append(d.incoming, b)
	}
	d.mu.Unlock()
	select {
	case d.poke <- struct{}{}:
	default:
	}
	return true
}

// close stops the driver and waits for it. The rounds it served are woken
// as timed out; their Conns' answers still reach them until they End.
func (d *driver) close() {
	d.mu.Lock()
	started := d.started
	if !d.stopped {
		d.stopped = true
		close(d.stop)
	}
	d.mu.Unlock()
	if started {
		<-d.done
	}
}

func (d *driver) loop() {
	defer close(d.done)
	for {
		select {
		case <-d.poke:
		case <-d.stop:
		}
		select {
		case <-d.stop:
			d.take()
			for _, b := range d.active {
				b.expire(1<<63 - 1)
			}
			return
		default:
		}
		d.drive()
	}
}

// noDeadline is write's answer when no round waits for its deadline. A
// deadline is a monoNow reading, which may be 0 or less: inside a
// testing/synctest bubble, whose clock starts in 2000, every reading is
// far below epoch's.
const noDeadline = math.MaxInt64

// maxDriveWait bounds one wait of a driver that holds the claim: a round
// submitted meanwhile is written no later than that (an epoll wait
// cannot select on the poke channel).
const maxDriveWait = time.Millisecond

// drive serves rounds until none is left.
func (d *driver) drive() {
	claimed := d.p.claimFor(true)
	defer func() {
		if claimed {
			d.p.release()
		}
	}()
	for {
		d.gather()
		d.take()
		if len(d.active) == 0 {
			return
		}
		deadline := d.write(monoNow())
		if claimed {
			wait := maxDriveWait
			if deadline != noDeadline {
				wait = min(wait, time.Duration(deadline-monoNow()))
			}
			if !d.p.read(wait) || d.p.wanted.Load() > 0 {
				// A socket failed (its Conn reconnects, and the new one
				// is not claimed) or Replace or Close waits for the
				// claim: let go, and claim again on the next round.
				d.p.release()
				claimed = false
			}
			d.prune(monoNow())
		} else {
			// The readers deliver: a deadline counts deadlineGrace more,
			// as NextOf's does, for replies that reached the sockets in
			// time while the readers were off the processor.
			if deadline != noDeadline {
				deadline += int64(deadlineGrace)
			}
			d.idle(deadline)
			d.prune(monoNow() - int64(deadlineGrace))
			claimed = d.p.wanted.Load() == 0 && d.p.claimFor(true)
		}
		select {
		case <-d.stop:
			return
		default:
		}
	}
}

// gather lets the callers that the last replies woke submit their next
// rounds before the driver takes them (see socket.writeLoop's yields):
// it yields once, and again while that brought more, up to
// maxWriteYields. It yields with nothing submitted too: the callers just
// woken have not run yet, and a driver that went on to wait in epoll
// would write their rounds only after the next reply (with few callers,
// that is most of a round trip).
func (d *driver) gather() {
	d.mu.Lock()
	n := len(d.incoming)
	d.mu.Unlock()
	for range maxWriteYields {
		runtime.Gosched()
		d.mu.Lock()
		m := len(d.incoming)
		d.mu.Unlock()
		if m <= n {
			break
		}
		n = m
	}
}

// take moves the submitted rounds to active.
func (d *driver) take() {
	d.mu.Lock()
	d.active = append(d.active, d.incoming...)
	clear(d.incoming)
	d.incoming = d.incoming[:0]
	d.mu.Unlock()
}

// write sends every active round's unsent commands, one write per Conn,
// and returns the earliest deadline of the rounds not yet woken (a monoNow
// reading), noDeadline for none. A round it stages is marked so until
// each of its commands is written or queued on its Conn: its End waits
// for that (see Batch.endDriven).
func (d *driver) write(now int64) (soonest int64) {
	soonest = noDeadline
	d.writing.Lock()
	defer d.writing.Unlock()
	for _, b := range d.active {
		b.mu.Lock()
		if !b.woken {
			if len(b.queued) > 0 {
				b.staged.Store(true)
			}
			gen := b.gen.Load()
			for _, slot := range b.queued {
				d.stage(b, slot, gen, now)
			}
			if b.deadline < soonest {
				soonest = b.deadline
			}
		}
		b.queued = b.queued[:0]
		b.mu.Unlock()
	}
	for j, c := range d.outConn {
		d.reqs = c.sendTickets(d.out[j], d.tix[j], now, d.reqs)
		d.out[j] = d.out[j][:0]
		clear(d.tix[j])
		d.tix[j] = d.tix[j][:0]
		d.outConn[j] = nil
	}
	d.outConn = d.outConn[:0]
	for _, b := range d.active {
		b.staged.Store(false)
	}
	return soonest
}

// stage copies the command of round b's slot, and the one queued with it
// (QueueWith, QueueAfter) in the order they are written, into the
// driver's write to the slot's Conn, each with its ticket (b.mu held;
// gen is b's generation).
func (d *driver) stage(b *Batch, slot int, gen uint32, now int64) {
	c := b.conns[slot]
	j := 0
	for j < len(d.outConn) && d.outConn[j] != c {
		j++
	}
	if j == len(d.outConn) {
		d.outConn = append(d.outConn, c)
		if j == len(d.out) {
			d.out = append(d.out, nil)
			d.tix = append(d.tix, nil)
		}
	}
	q := &b.queue[slot]
	cmd := staged{entry: entry{b: b, check: q.check, sent: now, replayBy: replayDeadline(q.replayUntil), slot: int32(slot), gen: gen}}
	if !q.hasMate {
		d.put(j, q.cmd, cmd)
		return
	}
	mate := staged{entry: entry{b: b, check: q.mateCheck, sent: now, slot: int32(slot), gen: gen, forget: true}, prepares: q.mateFirst}
	if q.mateFirst {
		d.put(j, q.mate, mate)
		d.put(j, q.cmd, cmd)
	} else {
		d.put(j, q.cmd, cmd)
		d.put(j, q.mate, mate)
	}
}

// put appends cmd, with its ticket t, to the driver's write j.
func (d *driver) put(j int, cmd []byte, t staged) {
	t.start = len(d.out[j])
	d.out[j] = append(d.out[j], cmd...)
	t.end = len(d.out[j])
	d.tix[j] = append(d.tix[j], t)
}

// idle waits, without the claim, for a submitted round or the deadline
// (noDeadline: none) while the Conns' readers deliver the replies.
func (d *driver) idle(deadline int64) {
	wait := time.Duration(1<<63 - 1)
	if deadline != noDeadline {
		if wait = time.Duration(deadline - monoNow()); wait <= 0 {
			return
		}
	}
	d.timer.Reset(wait)
	select {
	case <-d.poke:
	case <-d.timer.C:
	case <-d.stop:
	}
	d.timer.Stop()
	select {
	case <-d.timer.C:
	default:
	}
}

// prune wakes the callers of the rounds whose deadline is at or before
// now, and drops the rounds that are woken and have nothing left to
// write; a round its caller submits again stays or comes back (see
// submit).
func (d *driver) prune(now int64) {
	kept := d.active[:0]
	d.mu.Lock()
	for _, b := range d.active {
		b.mu.Lock()
		if !b.woken && b.deadline <= now {
			b.wake1(WokeDeadline)
		}
		if b.woken && len(b.queued) == 0 {
			b.listed = false
		} else {
			kept = append(kept, b)
		}
		b.mu.Unlock()
	}
	d.mu.Unlock()
	clear(d.active[len(kept):])
	d.active = kept
}
