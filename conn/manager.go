package conn

import (
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net"
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
			backoff = min(backoff*2, c.opts.ReconnectMax)
			continue
		}
		backoff = c.opts.ReconnectMin
		c.done.Add(2)
		go s.readLoop()
		go s.writeLoop()
		c.watch(s)
	}
}

// watch returns when s dies. It fails s when requests are pending and no
// reply has arrived for at least ReadTimeout: a master that stopped answering
// (hung, paused, partitioned) is recycled instead of swallowing requests.
func (c *Conn) watch(s *socket) {
	t := time.NewTicker(c.opts.ReadTimeout / 2)
	defer t.Stop()
	last, stalled := c.replies.Load(), 0
	for {
		select {
		case <-s.dead:
			return
		case <-t.C:
		}
		c.mu.Lock()
		pending := c.sock == s && c.inflight.len() > 0
		c.mu.Unlock()
		n := c.replies.Load()
		if pending && n == last {
			stalled++
		} else {
			stalled = 0
		}
		last = n
		// Three ticks without progress: the oldest pending request has waited
		// at least two ticks, one ReadTimeout.
		if stalled >= 3 {
			c.fail(s, &Error{Addr: c.opts.Addr, Op: "timeout", Err: ErrReadTimeout})
			return
		}
	}
}

// connect dials, wraps TLS, and runs the handshake, all within DialTimeout
// and cut short by Close.
func (c *Conn) connect() (*socket, *ServerInfo, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.DialTimeout)
	defer cancel()
	fail := func(op string, err error) (*socket, *ServerInfo, error) {
		if c.ctx.Err() != nil {
			err = ErrClosed
		}
		return nil, nil, &Error{Addr: c.opts.Addr, Op: op, Err: err}
	}

	dial := c.opts.Dialer
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, c.opts.Network, c.opts.Addr)
	if err != nil {
		return fail("dial", err)
	}
	if c.opts.TLS != nil {
		cfg := c.opts.TLS
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			if host, _, err := net.SplitHostPort(c.opts.Addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return fail("tls", err)
		}
		nc = tc
	}
	// The handshake reads and writes under the dial deadline; Close or the
	// deadline interrupts it.
	deadline, _ := ctx.Deadline()
	nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	s := newSocket(c, nc)
	info, err := s.handshake()
	if !stop() || err != nil {
		nc.Close()
		if err == nil {
			err = ctx.Err()
		}
		return fail("handshake", err)
	}
	nc.SetDeadline(time.Time{})
	return s, info, nil
}
