package pipe

import (
	"crypto/tls"
	"io"
	"net"
	"runtime"
	"sync"

	"github.com/volleylock/volley/resp"
)

// socket is one connected, handshaken network connection of a Conn and the
// two goroutines that serve it: readLoop and writeLoop. A socket is never
// reused: after a failure the Conn dials a new one. Both goroutines end when
// the socket is closed (by Conn.fail).
//
// On Linux a plain TCP or Unix socket, and the TCP connection under a TLS
// one, is detached from the runtime's network poller after its handshake
// (see detached, tlsAdapter). Its replies are then
// read by whoever reading names: the reader goroutine, or a caller that
// claimed the socket through a Group (see Batch.Claim) and reads its own replies, or nobody
// (nothing is owed, or only answers that nobody waits for, which wait for
// the next claim, or the reader after the Group's lateBound). Other
// sockets (pub/sub, custom dialers, other systems) are always read by
// their reader goroutine.
type socket struct {
	c    *Conn
	nc   net.Conn     // the connection, until it is detached
	det  *detached    // the detached connection (Linux), or nil
	ta   *tlsAdapter  // under a detached TLS connection (see tlsAdapter), or nil
	w    io.Writer    // where commands are written: nc, or det, or (TLS) the tls.Conn over det
	rd   *resp.Reader // owned by whoever reads (the handshake, then see reading)
	wbuf []byte       // owned by whoever set writing
	// rest is what a driver's write left for the writer goroutine when the
	// socket's buffer was full (see Conn.sendRound); guarded by c.mu, and
	// writing stays set until the writer has written it. flush is the
	// same for a detached TLS socket, whose rest is ciphertext waiting in
	// ta.
	rest  []byte
	flush bool

	writing bool                    // guarded by c.mu: someone is copying to or writing nc
	reading readerRole              // guarded by c.mu: who reads a detached socket
	inRead  bool                    // guarded by c.mu: the reader goroutine is reading it now
	step    func(epfd uintptr) bool // readStep, made once

	wake      chan struct{} // capacity 1: there is something in the queue
	dead      chan struct{} // closed by close
	closeOnce sync.Once
}

func newSocket(c *Conn, nc net.Conn) *socket {
	return &socket{
		c:    c,
		nc:   nc,
		w:    nc,
		rd:   resp.NewReader(nc, c.opts.ReadBufferSize, c.opts.Limits),
		wbuf: make([]byte, 0, c.opts.WriteBufferSize),
		wake: make(chan struct{}, 1),
		dead: make(chan struct{}),
	}
}

// wakeWriter tells writeLoop that the queue is not empty. It never blocks.
func (s *socket) wakeWriter() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// readerRole says who reads a detached socket's replies.
type readerRole uint8

const (
	readNone     readerRole = iota // nothing is owed: nobody reads
	readByLoop                     // the reader goroutine reads (always, for a socket not detached)
	readByCaller                   // a claim's caller reads its own replies
	readLazily                     // only answers nobody waits for are owed: the next claim reads them, or the reader once the Group's lateBound passed (see poller.readLate)
)

// detachFrom takes the handshaken connection out of the runtime's poller,
// where that is possible (see detach): not for pub/sub connections, whose
// messages come unasked and are read by the reader goroutine.
func (s *socket) detachFrom() {
	if s.c.opts.OnMessage != nil || s.rd.Buffered() > 0 {
		return
	}
	var r io.Reader
	if tc, ok := s.nc.(*tls.Conn); ok {
		// What the TLS layer has read and not yet given out stays in tc,
		// which keeps serving the socket over the detached descriptor.
		ta, ok := tc.NetConn().(*tlsAdapter)
		if !ok {
			return
		}
		if ta.det = detach(ta.Conn); ta.det == nil {
			return
		}
		s.det, s.ta, s.w, r = ta.det, ta, tc, tc
	} else {
		d := detach(s.nc)
		if d == nil {
			return
		}
		s.det, s.w, r = d, d, d
	}
	s.nc = nil
	s.step = s.readStep
	s.rd.Reset(r)
	s.reading = readNone
}

// claimable reports whether a claim may take the socket (c.mu held):
// nobody reads it, or the reader goroutine is between reads and only
// answers nobody waits for are owed (or any, for a driver's claim) (those of an earlier claim, handed
// to the reader by the poller's late timer or by a claim that could not
// be made).
func (s *socket) claimable(driver bool) bool {
	switch s.reading {
	case readNone, readLazily:
		return true
	case readByLoop:
		return !s.inRead && (driver || s.c.inflight.unwaited())
	}
	return false
}

// needReader makes the reader goroutine read a detached socket that
// nobody reads, now that a request waits for its reply (c.mu held).
func (s *socket) needReader() {
	if s.det == nil || s.reading == readByLoop || s.reading == readByCaller {
		return
	}
	s.reading = readByLoop
	s.det.watchInput(true)
}

// close closes the network connection, which ends readLoop, and signals
// writeLoop and the liveness check to end. Safe to call more than once.
func (s *socket) close() {
	s.closeOnce.Do(func() {
		close(s.dead)
		if s.det != nil {
			s.det.shutdown()
			return
		}
		s.nc.Close()
	})
}

// writeLoop writes queued requests, all that are queued at once in one write,
// until the socket dies. Woken, it first yields the processor
// (runtime.Gosched), so that callers already runnable queue their requests
// before it takes the queue: under many callers that cuts the write system
// calls per request by 2.5 to 5 times (on loopback their cost was most of
// the client's CPU), and with one caller there is nobody to yield to. It
// yields again, up to maxWriteYields times in all, while a yield brought
// more requests in: a write costs more than a round of the scheduler.
func (s *socket) writeLoop() {
	defer s.c.done.Done()
	c := s.c
	for {
		select {
		case <-s.wake:
		case <-s.dead:
			return
		}
		c.mu.Lock()
		// A rest or a flush is handed over with writing set: only then is
		// writing the writer's to clear. (rest keeps its buffer, empty,
		// between hand-overs: its length, not nil, says there is one.)
		rest, flush := s.rest, s.flush
		if len(rest) > 0 {
			s.rest = nil
		}
		s.flush = false
		c.mu.Unlock()
		if len(rest) > 0 || flush {
			var err error
			if len(rest) > 0 {
				_, err = s.w.Write(rest)
			} else {
				err = s.ta.flush()
			}
			c.mu.Lock()
			s.rest = rest[:0]
			s.writing = false
			c.mu.Unlock()
			if err != nil {
				c.fail(s, &Error{Addr: c.opts.Addr, Op: OpWrite, Err: err})
				return
			}
		}
		c.mu.Lock()
		queued := len(c.queue)
		c.mu.Unlock()
		for range maxWriteYields {
			runtime.Gosched()
			c.mu.Lock()
			before := queued
			queued = len(c.queue)
			c.mu.Unlock()
			if queued <= before {
				break
			}
		}
		for {
			c.mu.Lock()
			if c.sock != s || s.writing || len(c.queue) == 0 || c.late(monoNow()) {
				// Nothing to write, or the master is behind: what is queued
				// waits until it catches up (a reply wakes the writer, see
				// deliver), and its callers may give up on it meanwhile.
				c.mu.Unlock()
				break
			}
			s.writing = true
			// Copy under the lock: once a request is in inflight a failure may
			// complete it, and its owner may then reuse its Cmd.
			buf := c.admit(s.wbuf[:0], c.queue)
			clear(c.queue)
			c.queue = c.queue[:0]
			if len(buf) == 0 {
				s.writing = false
				c.mu.Unlock()
				continue
			}
			c.mu.Unlock()

			_, err := s.w.Write(buf)
			if err == nil && s.ta != nil {
				err = s.ta.flush() // what the socket did not take (see tlsAdapter)
			}
			if cap(buf) <= maxKeptBuffer {
				s.wbuf = buf[:0]
			}
			c.mu.Lock()
			s.writing = false
			c.mu.Unlock()
			if err != nil {
				c.fail(s, &Error{Addr: c.opts.Addr, Op: OpWrite, Err: err})
				return
			}
		}
	}
}

// maxWriteYields bounds the yields of a woken writer (see writeLoop).
const maxWriteYields = 4

// readLoop reads replies and completes pending requests in FIFO order until
// the socket dies. The first read or protocol error fails the socket.
func (s *socket) readLoop() {
	if s.det != nil {
		s.readDetached()
		return
	}
	defer s.c.done.Done()
	c := s.c
	for {
		vals, err := s.rd.ReadReply()
		if err != nil {
			c.fail(s, &Error{Addr: c.opts.Addr, Op: OpRead, Err: err})
			return
		}
		if on := c.opts.OnMessage; on != nil {
			if ch, payload, ok := message(vals); ok {
				on(ch, payload)
				continue
			}
		} else if isPush(vals) {
			continue // out-of-band RESP3 data: no request waits for it
		}
		if !s.deliver(vals, monoNow()) {
			return
		}
	}
}

// deliver completes the oldest pending request (or ticket, see ticket.go)
// with the reply vals, read at now (a monoNow reading), and
// reports false when it did not: the socket is no longer current, or
// failed because no request waited for the reply or the request's Check
// refused it. The failure comes before the reader reads on, so no later
// reply reaches a request when the replies are out of step.
func (s *socket) deliver(vals []resp.Value, now int64) bool {
	c := s.c
	c.mu.Lock()
	if c.sock != s {
		c.mu.Unlock()
		return false
	}
	e, ok := c.inflight.pop()
	var logged *Request
	if ok && e.r == nil {
		logged = c.ticketPopped(&e, vals)
	}
	c.progress = now
	held := len(c.queue) > 0 && !s.writing // the writer may have held them (see late)
	c.mu.Unlock()
	if held {
		s.wakeWriter()
	}
	if !ok {
		c.fail(s, &Error{Addr: c.opts.Addr, Op: OpRead, Err: ErrUnexpectedReply})
		return false
	}
	if e.r == nil {
		return s.deliverTicket(&e, logged, vals, now)
	}
	r := e.r
	if r.check != nil && !r.check(vals) {
		err := &Error{Addr: c.opts.Addr, Op: OpRead, Err: ErrReplyMismatch}
		c.fail(s, err)
		r.complete(nil, err) // popped: fail no longer sees it
		return false
	}
	if isNoScript(vals) && c.evalInstead(s, r, now) {
		return true
	}
	r.arrived = now
	c.latency.Store(r.arrived - r.sent)
	r.complete(vals, nil) // copies the reply out of rd before anyone else may read
	return true
}

// isPush reports whether a reply is a RESP3 push, looking past an attribute.
func isPush(vals []resp.Value) bool {
	i := 0
	if len(vals) > 0 && vals[0].Type == resp.TypeAttribute {
		i = 1 + vals[0].Size
	}
	return i < len(vals) && vals[i].Type == resp.TypePush
}

// message reports whether a reply is a published message, RESP2's array
// ["message", channel, payload] (["smessage", ...] for a shard channel) or
// the RESP3 push of the same, and returns its channel and payload.
func message(vals []resp.Value) (channel, payload []byte, ok bool) {
	if len(vals) != 4 || (vals[0].Type != resp.TypeArray && vals[0].Type != resp.TypePush) || vals[0].Int != 3 {
		return nil, nil, false
	}
	if vals[1].Type != resp.TypeBulk || (string(vals[1].Bytes) != "message" && string(vals[1].Bytes) != "smessage") {
		return nil, nil, false
	}
	return vals[2].Bytes, vals[3].Bytes, true
}

// readDetached is readLoop for a detached socket: it waits in its own
// epoll set, and reads only while reading names it; a hang-up of the
// master while nobody reads fails the socket at once, as a read of the
// end of the stream would.
func (s *socket) readDetached() {
	c := s.c
	defer c.done.Done()
	defer s.det.closeEpoll()
	// The reader holds the descriptor open for its whole life: closed
	// under its epoll wait, it would leave the set without an event, and
	// the shutdown's hang-up would never wake it.
	if !s.det.acquire() {
		return
	}
	defer s.det.release()
	if err := s.det.park(s.step); err != nil {
		c.fail(s, &Error{Addr: c.opts.Addr, Op: OpRead, Err: err})
	}
}

// readStep is one look of the reader goroutine at its detached socket
// (see park): true when the reader is done. While the reader reads
// (reading names it), it reads what has arrived, then parks until more
// does; otherwise it was woken by a hang-up, or by input that someone
// else reads.
//
// The runtime wakes the reader on the edges of its epoll set's readiness:
// a hang-up whose edge came before the reader read the replies that
// preceded it (a short read does not show the end of the stream) wakes
// it no more. The Conn's liveness check looks for such a hang-up while
// nobody reads (see Conn.watch); a step that finds one reads on at once
// when a request has made the reader its reader meanwhile.
func (s *socket) readStep(epfd uintptr) (done bool) {
	c := s.c
	for {
		select {
		case <-s.dead:
			return true
		default:
		}
		c.mu.Lock()
		if c.sock != s {
			c.mu.Unlock()
			return true
		}
		mine := s.reading == readByLoop
		s.inRead = mine
		c.mu.Unlock()
		if mine {
			ok := s.readAvailable(true)
			c.mu.Lock()
			s.inRead = false
			c.mu.Unlock()
			return !ok
		}
		if !s.det.hungUp(epfd) {
			return false
		}
		// A request may have made the reader its reader since mine was
		// read: then the master's last bytes are a reply of its, to read
		// first (a reply cut short then fails it with ErrUnexpectedEOF,
		// not a bare EOF).
		c.mu.Lock()
		mine = c.sock == s && s.reading == readByLoop
		c.mu.Unlock()
		if !mine {
			c.fail(s, &Error{Addr: c.opts.Addr, Op: OpRead, Err: io.EOF})
			return true
		}
	}
}

// clockEvery is how many replies readAvailable reads with one clock
// reading.
const clockEvery = 64

// readAvailable reads the replies that have arrived on a detached socket,
// without waiting, and completes their requests; false when the socket
// failed. The reader goroutine (byLoop) stops reading, and hands the
// socket back to nobody, once nothing is owed.
func (s *socket) readAvailable(byLoop bool) bool {
	c := s.c
	// One clock reading for what is there now (the replies read in one
	// look arrived by then), taken again every clockEvery replies.
	now := monoNow()
	for n := 1; ; n++ {
		if n%clockEvery == 0 {
			now = monoNow()
		}
		vals, err := s.rd.ReadReply()
		if err == errWouldBlock {
			return true
		}
		if err != nil {
			c.fail(s, &Error{Addr: c.opts.Addr, Op: OpRead, Err: err})
			return false
		}
		if isPush(vals) {
			continue // out-of-band RESP3 data: no request waits for it
		}
		if !s.deliver(vals, now) {
			return false
		}
		if byLoop {
			c.mu.Lock()
			idle := c.sock == s && c.inflight.len() == 0 && len(c.queue) == 0
			if idle {
				// Input stays watched: the next request's reply is likely
				// the reader's too; a claim turns it off.
				s.reading = readNone
			}
			c.mu.Unlock()
			if idle {
				return true
			}
		}
		if s.ta == nil && s.rd.Buffered() == 0 && s.det.drained {
			// The last read was short: nothing more had come. What comes
			// next, epoll reports (the reader's set and a poller's are
			// level-triggered), so the read that would only say EAGAIN
			// is spared: a system call per reply. (Not over TLS: the
			// TLS layer may hold whole records that epoll knows nothing
			// of, so it is read until it says errWouldBlock.)
			return true
		}
	}
}
