package pipe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"
)

// errConnecting is the cause of requests sent before the first connect.
var errConnecting = errors.New("not connected yet")

// manage is the Conn's one long-lived goroutine: it connects, starts the
// socket's goroutines, watches the socket's liveness, and reconnects with
// jittered exponential backoff after a failure, until Close.
func (c *Conn) manage() {
	defer c.done.Done()
	readyClosed := false
	backoff := c.opts.ReconnectMin
	for {
		s, info, err := c.connect()
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			if s != nil {
				s.close()
			}
			if !readyClosed {
				close(c.ready)
			}
			return
		}
		if err == nil {
			c.up, c.sock, c.err = true, s, nil
			c.progress = monoNow()
			c.latency.Store(0)
			info.Generation = c.connects.Add(1)
			c.info.Store(info)
		} else {
			c.err = err
		}
		c.mu.Unlock()
		if !readyClosed {
			close(c.ready)
			readyClosed = true
		}
		if err == nil && c.opts.OnConnect != nil {
			c.opts.OnConnect(info)
		}

		if err != nil {
			// Full jitter in [backoff/2, backoff], so that many clients do not
			// reconnect in lockstep.
			wait := backoff/2 + rand.N(backoff/2+1)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.closing:
				t.Stop()
				return
			}
			// Every failed attempt grows the backoff, one whose handshake
			// the master left unanswered too: a master too busy to answer
			// in time is not helped by more handshakes.
			backoff = min(backoff*2, c.opts.ReconnectMax)
			continue
		}
		backoff = c.opts.ReconnectMin
		c.done.Add(2)
		go s.readLoop()
		go s.writeLoop()
		c.sendReplays()
		c.watch(s)
		// The socket died. Reconnect after a random wait in [0,
		// ReconnectMin]: the clients of a master that stalled lose their
		// sockets together, and should not all knock at once.
		t := time.NewTimer(rand.N(c.opts.ReconnectMin + 1))
		select {
		case <-t.C:
		case <-c.closing:
			t.Stop()
			return
		}
	}
}

// notTLS reports whether a failed TLS handshake looks like a server that
// does not speak TLS on that port: it answered with something else than a
// TLS record, closed the connection, or said nothing until the dial
// timeout (a Redis without TLS waits for the end of a line that a
// ClientHello need not contain). A certificate that does not verify is
// not such a failure.
func notTLS(err error) bool {
	var record tls.RecordHeaderError
	return errors.As(err, &record) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
}

// watch returns when s dies. It fails s when a reply is owed and the
// socket has delivered none for ReadTimeout, and at least a second (see
// stalled): a master that
// stopped answering (hung, paused, partitioned) is recycled, so its
// backlog dies with the socket. A master that answers, however slowly,
// keeps its socket (see late). Send makes the same check on every
// request; this one catches it when no request comes. It also fails an
// idle detached socket whose master hung up: the reader's epoll set wakes
// it on edges only, and a hang-up that came with the last reply the
// reader read wakes it no more (see socket.readStep). It ticks every
// quarter of the stall's length, not of ReadTimeout: an idle process's
// Conns wake it that often (64 waiting processes, 10 Conns each, spent
// 0.7 of a core on ticks of ReadTimeout/4 = 25 ms). And the ticks of all
// the process's Conns fall on the same instants (untilWatch), so that
// they wake it once a period, not once a Conn: ticks of their own had 64
// waiting processes switch context twice as often, and took a fifth of
// the lock's grants (lockbench -mode fleet, docs/benchmarks.md).
func (c *Conn) watch(s *socket) {
	period := c.opts.stallAfter() / 4
	t := time.NewTimer(untilWatch(time.Now(), period))
	defer t.Stop()
	for {
		select {
		case <-s.dead:
			return
		case <-t.C:
			t.Reset(untilWatch(time.Now(), period))
			c.mu.Lock()
			late := c.sock == s && c.stalled(monoNow())
			idle := c.sock == s && s.det != nil && s.reading == readNone
			c.mu.Unlock()
			if late {
				c.fail(s, c.lagError())
				return
			}
			if idle && s.det.hungUpIdle() {
				c.mu.Lock()
				idle = c.sock == s && s.reading == readNone
				c.mu.Unlock()
				if idle {
					c.fail(s, &Error{Addr: c.opts.Addr, Op: OpRead, Err: io.EOF})
					return
				}
			}
		}
	}
}

// connect dials, wraps TLS, and runs the handshake, all within DialTimeout
// and cut short by Close.
func (c *Conn) connect() (*socket, *ServerInfo, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.DialTimeout)
	defer cancel()
	fail := func(op Op, err error) (*socket, *ServerInfo, error) {
		if c.ctx.Err() != nil {
			err = ErrClosed
		}
		return nil, nil, &Error{Addr: c.opts.Addr, Op: op, Err: err}
	}

	nc, err := c.dial(ctx)
	if err != nil {
		return fail(OpDial, err)
	}
	if c.opts.TLS != nil {
		cfg := c.opts.TLS
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			if host, _, err := net.SplitHostPort(c.opts.Addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(&tlsAdapter{Conn: nc}, cfg)
		if err := c.handshakeTLS(ctx, tc); err != nil {
			nc.Close()
			return fail(OpTLS, err)
		}
		nc = tc
	}
	// The handshake writes under the dial deadline; Close or the deadline
	// interrupts it. Its replies are pending requests like any other: a
	// master that leaves them unanswered as long as a stalled socket's
	// (stallAfter, see stalled) is too slow to use, and the manager tries
	// again, after its backoff, rather than wait out the whole
	// DialTimeout. A master that is only slow is waited for: at
	// ReadTimeout (100 ms in redlock), 64 processes opening their pub/sub
	// connections at once on a 2-core machine timed out dozens of
	// handshakes on one master, and each retry was a connection more (#53).
	deadline, _ := ctx.Deadline()
	nc.SetWriteDeadline(deadline)
	readDeadline := time.Now().Add(c.opts.stallAfter())
	if deadline.Before(readDeadline) {
		readDeadline = deadline
	}
	nc.SetReadDeadline(readDeadline)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	s := newSocket(c, nc)
	info, err := s.handshake()
	if !stop() || err != nil {
		nc.Close()
		if err == nil {
			err = ctx.Err()
		}
		if errors.Is(err, errHintTLS) && c.speaksTLS(ctx) {
			err = fmt.Errorf("%w: %s", ErrTLSMismatch, mismatchTLS)
		}
		return fail(OpHandshake, err)
	}
	nc.SetDeadline(time.Time{})
	s.detachFrom()
	return s, info, nil
}

// watchPhase offsets this process's watch ticks from those of other
// processes: drawn once, so that every Conn of the process ticks at the
// same instants (see untilWatch), and processes do not all tick at once.
var watchPhase = rand.Int64N(int64(time.Hour))

// untilWatch returns how long from now until this process's next watch
// tick of the given period: ticks fall on watchPhase plus whole periods,
// so the Conns of one process (10 for a Client of five masters) wake it
// once a period between them, not once each.
func untilWatch(now time.Time, period time.Duration) time.Duration {
	since := (now.UnixNano() - watchPhase) % int64(period)
	if since < 0 {
		since += int64(period)
	}
	return period - time.Duration(since)
}
