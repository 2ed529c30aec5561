package pipe

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
)

// Conn is a pipelined, multiplexed connection to one master: one socket
// carries the commands of every goroutine that uses it. See the package
// documentation for its life cycle and concurrency.
type Conn struct {
	opts Options

	mu        sync.Mutex
	up        bool              // a socket is connected and handshaken
	closed    bool              // Close was called
	err       error             // why not up (sticky until the next successful connect)
	sock      *socket           // the current socket when up
	queue     []*Request        // accepted, waiting for the writer
	inflight  fifo              // written, waiting for replies, in order
	replayLog replayLog         // the commands of the tickets in flight that asked for replay (see ticket.go)
	progress  int64             // when the current socket last delivered a reply, or connected (a monoNow reading)
	replays   []replay          // requests a reset dropped, to send again after the next connect (see Request.ReplayUntil)
	scripts   map[string]string // Options.Scripts by their hex SHA-1 (see evalInstead); nil for none

	ctx    context.Context // cancelled by Close: ends a dial or handshake under way
	cancel context.CancelFunc

	info     atomic.Pointer[ServerInfo]
	latency  atomic.Int64  // of the latest reply, Send to arrival, in ns; 0 after a connect
	connects atomic.Uint64 // successful connects so far

	ready     chan struct{} // closed when the first connect attempt has ended
	closing   chan struct{} // closed by Close
	closeOnce sync.Once
	done      sync.WaitGroup // the manager goroutine and the socket goroutines
}

// ServerInfo is what the Conn learned about the master at its latest
// connect, from INFO server.
type ServerInfo struct {
	RunID       string        // changes when the master process restarts
	Uptime      time.Duration // the master's uptime when the Conn connected
	ConnectedAt time.Time     // when the INFO reply arrived (monotonic clock reading)
	Generation  uint64        // 1 for the first successful connect, then +1 each reconnect
	// Mode is the server's redis_mode (Valkey: server_mode): "standalone",
	// "cluster" or "sentinel".
	Mode string
	// Role is INFO replication's role: "master", or "slave" for a replica;
	// "" when the server did not say.
	Role string
	// Server is the server's name: INFO server's server_name ("valkey"),
	// or "redis" when it has none (Redis, and forks that do not say).
	Server string
	// Version is the server's own version: valkey_version for Valkey
	// (whose redis_version stays 7.2.4), else redis_version; "" when INFO
	// says neither.
	Version string
}

// VersionAtLeast reports whether Version is major.minor or later. A
// Version that does not start with two numbers ("8.6.3", "9.1") is
// earlier than any.
func (i *ServerInfo) VersionAtLeast(major, minor int) bool {
	maj, rest, ok := leadingNumber(i.Version)
	if !ok || maj != major {
		return ok && maj > major
	}
	if len(rest) == 0 || rest[0] != '.' {
		return false
	}
	mnr, _, ok := leadingNumber(rest[1:])
	return ok && mnr >= minor
}

// leadingNumber reads the decimal number at the start of s (at most six
// digits) and returns it and what follows.
func leadingNumber(s string) (n int, rest string, ok bool) {
	i := 0
	for ; i < len(s) && i < 6 && '0' <= s[i] && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n, s[i:], i > 0
}

// StartedAt estimates when the master process started: ConnectedAt - Uptime.
// Since ConnectedAt is taken after the master answered, the estimate is late
// by the reply's travel time plus up to one second (Redis computes uptime
// from whole unix seconds and may round it up); callers that need a bound on
// the true start add that second.
func (i *ServerInfo) StartedAt() time.Time { return i.ConnectedAt.Add(-i.Uptime) }

// New validates opts and returns a Conn that connects in the background: it
// returns at once, and requests fail fast until the first connect succeeds.
// Use WaitReady or Dial to wait for it. The caller owns the Conn and must
// Close it.
func New(opts Options) (*Conn, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Conn{
		opts:    opts,
		scripts: scriptsBySHA(opts.Scripts),
		err:     &Error{Addr: opts.Addr, Op: OpDial, Err: errConnecting},
		ready:   make(chan struct{}),
		closing: make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.done.Add(1)
	go c.manage()
	return c, nil
}

// Dial is New followed by WaitReady: it returns a connected Conn, or the
// error of the first connect attempt (and closes the Conn).
func Dial(ctx context.Context, opts Options) (*Conn, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := c.WaitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// WaitReady waits until the first connect attempt has ended and returns its
// error (nil when connected), or ctx's error (matching both ctx.Err() and
// context.Cause(ctx) with errors.Is).
func (c *Conn) WaitReady(ctx context.Context) error {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return ctxerr.Of(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.up {
		return nil
	}
	return c.err
}

// Addr returns the master's address as configured.
func (c *Conn) Addr() string { return c.opts.Addr }

// Info returns what the Conn learned at its latest connect, or nil before
// the first one.
func (c *Conn) Info() *ServerInfo { return c.info.Load() }

// ReplyLatency returns how long the latest reply took, from Send to its
// arrival, whether or not its caller still waited for it; zero before the
// first reply of the current socket. A caller that needs an answer within
// a bound can tell from it that the master is answering later than that.
// A reply that nobody waited for any more may be read, and counted, later
// than it arrived, but no later than a Group's lateBound after it was
// sent: a latency above that bound is exact (see NewGroup).
func (c *Conn) ReplyLatency() time.Duration { return time.Duration(c.latency.Load()) }

// Err returns nil while connected, else why not.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.up {
		return nil
	}
	return c.err
}

// Close closes the socket, fails every pending request with ErrClosed, and
// stops every goroutine the Conn started before it returns. It is safe to
// call more than once and concurrently with requests.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		closedErr := &Error{Addr: c.opts.Addr, Op: OpClosed, Err: ErrClosed}
		c.mu.Lock()
		c.closed = true
		if !c.up {
			c.err = closedErr
		}
		c.mu.Unlock()
		close(c.closing)
		c.cancel()
		c.fail(nil, closedErr)
		c.done.Wait()
	})
	return nil
}

// Send queues r for the master and returns without waiting for the reply.
// Exactly one completion follows each Send: r arrives on notify (or, when
// notify is nil, on r's own channel, see Wait, made by the first such Send
// and kept until r is released) once its reply or its failure is in;
// unless the caller abandons r first. A Conn that is down fails r at
// once with the sticky connection error; it never queues behind an outage.
//
// notify must have room for every request sent with it and not yet received:
// the Conn never blocks on it. The Conn owns r from Send until r completes
// and Send has returned (a goroutine other than Send's caller may receive r
// from notify before Send returns); the caller must not touch r until then.
//
// When the socket is idle (nothing being written, at most one reply pending)
// the calling goroutine writes r itself, sparing a hand-off to the writer
// goroutine; otherwise r joins the batch of the next write, so that under
// load many callers' commands share one syscall.
//
// When a reply is owed and none has come for ReadTimeout, the master is
// hung: r fails at once with ErrReadTimeout, and the socket is reset and
// reconnected (see Options.ReadTimeout).
func (c *Conn) Send(r *Request, notify chan *Request) { c.send(r, notify, nil, monoNow()) }

// SendWith is Send of r followed by then, a command whose answer nobody
// reads (as SendForget sends it: the Conn recycles then, and the caller
// must not use it again). The two join the socket together, in one write
// when the socket is idle, and nothing comes between them: for a command
// that announces what r did, such as the PUBLISH of a release. then's
// answer is read and dropped; its Check, when set, still vets it.
func (c *Conn) SendWith(r *Request, notify chan *Request, then *Request) {
	c.sendWith(r, notify, then, monoNow())
}

// sendWith is SendWith with the clock reading at, which a Batch takes once
// for the requests of a fan-out (see Batch.SendWith); mate goes right
// before r instead of right after it when it prepares r (see
// Batch.SendAfter).
func (c *Conn) sendWith(r *Request, notify chan *Request, mate *Request, at int64) {
	mate.forget = true
	c.send(r, notify, mate, at)
	if !mate.Abandon() {
		mate.recycle() // completed already (failed fast, or answered at once)
	}
}

// send is Send, with mate (when not nil) right behind r, or right before
// it when it prepares r (see Request.prepares), stamped at (a reading of
// monoNow taken at or just before the call).
func (c *Conn) send(r *Request, notify chan *Request, mate *Request, at int64) {
	if notify == nil && !r.forget {
		if r.own == nil {
			r.own = make(chan *Request, 1) // kept until r is released
		}
		notify = r.own
	}
	r.arm(notify, at)
	n := 1
	if mate != nil {
		mate.notify, mate.err, mate.sent, mate.arrived = nil, nil, r.sent, 0
		mate.state.Store(statePending)
		n = 2
	}

	c.mu.Lock()
	if !c.up {
		err := c.err
		if !c.closed {
			c.keepForReplay(r, at)
		}
		c.mu.Unlock()
		failBoth(r, mate, err)
		return
	}
	s := c.sock
	if c.stalled(r.sent) {
		// The master has answered nothing for ReadTimeout while a reply
		// is owed: it is hung, paused or cut off. Reset the socket, which
		// drops the backlog and reconnects.
		c.keepForReplay(r, at)
		c.mu.Unlock()
		err := c.lagError()
		c.fail(s, err)
		failBoth(r, mate, err)
		return
	}
	if c.inflight.len()+len(c.queue)+n > c.opts.MaxPending {
		c.mu.Unlock()
		failBoth(r, mate, &Error{Addr: c.opts.Addr, Op: OpLimit, Err: ErrTooManyPending})
		return
	}
	s.needReader()
	if s.writing || len(c.queue) > 0 || c.inflight.len() > 1 && s.reading != readByCaller || c.late(r.sent) {
		// Someone is writing, or the socket is busy with replies pending:
		// join the next batch, which the writer sends with everything queued
		// by then in one syscall. (One pending reply is the common straggler
		// of a lock decided at quorum; it does not make the socket busy.)
		// Or the master is behind: the writer holds the queue (see late).
		c.queue = appendPair(c.queue, r, mate)
		c.mu.Unlock()
		s.wakeWriter()
		return
	}
	// Idle socket: write it ourselves, sparing a hand-off to the writer.
	// The write buffer is ours while s.writing is set (as it is the
	// writer's, see writeLoop); a pair is copied in under the lock, as
	// the writer does, since a failure may complete them at once.
	s.writing = true
	cmd := r.Cmd
	if mate == nil {
		c.inflight.push(r)
	} else {
		cmd = s.wbuf[:0]
		var two [2]*Request
		for _, q := range appendPair(two[:0], r, mate) {
			c.inflight.push(q)
			cmd = append(cmd, q.Cmd...)
		}
		s.wbuf = cmd[:0]
	}
	c.mu.Unlock()

	_, err := s.w.Write(cmd)
	if err == nil && s.ta != nil {
		err = s.ta.flush() // what the socket did not take (see tlsAdapter)
	}
	if err != nil {
		c.fail(s, &Error{Addr: c.opts.Addr, Op: OpWrite, Err: err})
	}
	c.mu.Lock()
	s.writing = false
	more := c.sock == s && len(c.queue) > 0
	c.mu.Unlock()
	if more {
		s.wakeWriter()
	}
}

// sendRound is send for the requests of a driver's round to this Conn
// (armed, see Request.arm), with send's checks (down, stalled,
// MaxPending): one write for all of them when the socket is detached and
// free, else the queue. The driver serves every master: it never waits
// for one socket's room. What a detached socket's buffer does not take
// at once goes to the writer goroutine (see socket.rest and socket.flush),
// as does every write to a socket that is not detached. The requests that
// fail, fail after c.mu is let go.
func (c *Conn) sendRound(reqs []*Request, at int64) {
	c.mu.Lock()
	if !c.up {
		err := c.err
		if !c.closed {
			for _, r := range reqs {
				c.keepForReplay(r, at)
			}
		}
		c.mu.Unlock()
		failAll(reqs, err)
		return
	}
	s := c.sock
	if c.stalled(at) {
		for _, r := range reqs {
			c.keepForReplay(r, at)
		}
		c.mu.Unlock()
		err := c.lagError()
		c.fail(s, err)
		failAll(reqs, err)
		return
	}
	keep := min(max(c.opts.MaxPending-c.inflight.len()-len(c.queue), 0), len(reqs))
	if keep > 0 && keep < len(reqs) && reqs[keep-1].prepares == reqs[keep] {
		keep-- // a command that prepares the next goes with it, or not at all
	}
	reqs, over := reqs[:keep], reqs[keep:]
	s.needReader()
	if s.det == nil || s.writing || len(c.queue) > 0 || c.late(at) {
		c.queue = append(c.queue, reqs...)
		c.mu.Unlock()
		s.wakeWriter()
		c.failOver(over)
		return
	}
	s.writing = true
	buf := c.admit(s.wbuf[:0], reqs)
	c.mu.Unlock()
	c.failOver(over)
	c.writeRound(s, buf, true)
}

// writeRound writes buf, a round's commands that are in flight already,
// to s, which the caller marked as being written (s.writing), without
// c.mu: what the socket's buffer does not take goes to the writer
// goroutine (see socket.rest and socket.flush), which clears s.writing
// once it has written it; else writeRound clears it. own says that buf
// is s.wbuf's, kept for the next round's commands.
func (c *Conn) writeRound(s *socket, buf []byte, own bool) {
	var n int
	var err error
	if s.ta == nil {
		n, err = s.det.writeSome(buf)
	} else {
		n, err = s.w.Write(buf) // TLS: all of it, some perhaps left in s.ta
	}
	c.mu.Lock()
	keep := own && cap(buf) <= maxKeptBuffer
	if err == nil && (n < len(buf) || s.ta != nil && s.ta.hasPending()) {
		// The socket's buffer is full: the writer writes the rest, and
		// everything after it, waiting for room (s.writing stays set).
		if s.ta == nil {
			s.rest = append(s.rest[:0], buf[n:]...)
		} else {
			s.flush = true
			if keep {
				s.wbuf = buf[:0]
			}
		}
		c.mu.Unlock()
		s.wakeWriter()
		return
	}
	if keep {
		s.wbuf = buf[:0]
	}
	s.writing = false
	more := c.sock == s && len(c.queue) > 0
	c.mu.Unlock()
	if err != nil {
		c.fail(s, &Error{Addr: c.opts.Addr, Op: OpWrite, Err: err})
	} else if more {
		s.wakeWriter()
	}
}

// admit appends the commands of reqs, in order, to buf, and puts their
// requests in flight, all but those nobody wants any more (see
// Request.unwanted), which it recycles: the master is spared the work
// (under load, most of a backlog). A command that prepares the next (see
// Batch.SendAfter) goes with it, decided once for both: a lone ASKING
// would apply to whatever came next. c.mu must be held.
func (c *Conn) admit(buf []byte, reqs []*Request) []byte {
	prepared := false // the request before this one prepared it and was admitted
	for _, r := range reqs {
		drop := r.unwanted()
		if r.prepares != nil {
			drop = r.prepares.unwanted()
		} else if prepared {
			drop = false
		}
		prepared = !drop && r.prepares != nil
		if drop {
			r.recycle()
			continue
		}
		buf = append(buf, r.Cmd...)
		c.inflight.push(r)
	}
	return buf
}

// failOver fails the requests past MaxPending (see sendRound).
func (c *Conn) failOver(over []*Request) {
	if len(over) > 0 {
		failAll(over, &Error{Addr: c.opts.Addr, Op: OpLimit, Err: ErrTooManyPending})
	}
}

// failAll fails each of reqs with err.
func failAll(reqs []*Request, err error) {
	for _, r := range reqs {
		r.complete(nil, err)
	}
}

// failBoth fails r and, when not nil, mate (see send).
func failBoth(r, mate *Request, err error) {
	r.complete(nil, err)
	if mate != nil {
		mate.complete(nil, err)
	}
}

// appendPair appends r and mate (when not nil) to q in the order send
// writes them: mate first when it prepares r.
func appendPair(q []*Request, r, mate *Request) []*Request {
	switch {
	case mate == nil:
		return append(q, r)
	case mate.prepares == r:
		return append(q, mate, r)
	default:
		return append(q, r, mate)
	}
}

// late reports whether the oldest request written to the current socket
// has waited for its reply for longer than ReadTimeout at now: the master
// answers slower than requests arrive, and every request written behind
// that one would wait at least as long. The writer then holds what is
// queued until the master catches up, so that the backlog on the master
// stops growing and requests whose callers give up meanwhile are never
// sent. c.mu must be held.
func (c *Conn) late(now int64) bool {
	sent, ok := c.inflight.oldestSent()
	return ok && time.Duration(now-sent) > c.opts.ReadTimeout
}

// stalled reports whether the socket makes no progress at now: a reply is
// owed, and none has arrived for stallAfter, nor was the oldest owed one
// sent within it. The master is hung, paused or cut off; the socket is
// reset (see watch). A socket that still delivers replies is kept however
// far behind it is: a reset would drop the backlog the master is working
// through and make it answer a reconnect's handshake on top of it (a
// fleet of clients resetting at once is how a slow moment becomes an
// outage); it is late instead (see late). c.mu must be held.
func (c *Conn) stalled(now int64) bool {
	sent, ok := c.inflight.oldestSent()
	return ok && time.Duration(now-max(sent, c.progress)) > c.opts.stallAfter()
}

// minStall is the least time without a reply that makes a socket stalled
// (see Options.stallAfter).
const minStall = time.Second

// stallAfter is how long a socket that owes a reply may deliver none
// before it is reset: ReadTimeout, but at least minStall. A shorter
// ReadTimeout (redlock's is 100 ms) still holds the queue of a late
// master (see Conn.late); a reset is for a master that stopped, and on a
// machine so busy that the client's own reader is off the processor for
// a fraction of a second, a reset is the wrong cure (every client of
// every master reconnecting at once, #53).
func (o *Options) stallAfter() time.Duration { return max(o.ReadTimeout, minStall) }

// lagError is the failure of a socket that stalled (see stalled).
func (c *Conn) lagError() error {
	return &Error{Addr: c.opts.Addr, Op: OpTimeout, Err: ErrReadTimeout}
}

// Wait waits for a Request sent with a nil notify channel. On ctx's end it
// abandons r and returns an *Error with Op OpWait that wraps both ctx.Err()
// and context.Cause(ctx) (errors.Is matches either); r
// then belongs to the Conn and must not be used again. Otherwise it returns
// r.Err() and the caller owns r again.
func (c *Conn) Wait(ctx context.Context, r *Request) error {
	err, _ := c.wait(ctx, r)
	return err
}

// wait is Wait that also reports whether the caller still owns r.
func (c *Conn) wait(ctx context.Context, r *Request) (err error, owned bool) {
	select {
	case <-r.own:
		return r.err, true
	case <-ctx.Done():
		if r.Abandon() {
			return &Error{Addr: c.opts.Addr, Op: OpWait, Err: ctxerr.Of(ctx)}, false
		}
		<-r.own
		return r.err, true
	}
}

// fail ends socket s (the current one, if s is nil) with err: closes it and
// fails every queued and pending request. A failure of a socket that is no
// longer current is ignored: the first error wins.
func (c *Conn) fail(s *socket, err error) {
	c.mu.Lock()
	if c.sock == nil || (s != nil && c.sock != s) {
		c.mu.Unlock()
		return
	}
	s = c.sock
	c.up, c.sock, c.err = false, nil, err
	queue := c.queue
	c.queue = nil
	var pending []*Request
	var tickets []entry // those someone may wait for
	now := monoNow()
	for e, ok := c.inflight.pop(); ok; e, ok = c.inflight.pop() {
		switch {
		case e.r != nil:
			pending = append(pending, e.r)
			if !c.closed {
				c.keepForReplay(e.r, now)
			}
		case !c.closed:
			c.keepTicketForReplay(&e, now)
		}
		if e.r == nil && !e.forget {
			tickets = append(tickets, e)
		}
	}
	c.clearReplayLog()
	if !c.closed {
		for _, r := range queue {
			c.keepForReplay(r, now)
		}
	}
	c.mu.Unlock()

	s.close()
	for _, r := range pending {
		r.complete(nil, err)
	}
	for _, r := range queue {
		r.complete(nil, err)
	}
	for i := range tickets {
		tickets[i].b.heardTicket(&tickets[i], nil, err, 0)
	}
}

// SendForget sends r and gives it up at once: the Conn recycles r when its
// reply (or failure) comes. For commands whose reply does not matter, such as
// the release after a failed lock attempt. The caller must not use r again.
func (c *Conn) SendForget(r *Request) {
	r.forget = true
	c.Send(r, nil)
	// Send has returned: now whichever of us finishes second recycles r.
	if !r.Abandon() {
		r.recycle() // completed already (failed fast, or answered at once)
	}
}
