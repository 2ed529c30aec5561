package conn

import (
	"net"
	"sync"
	"time"

	"github.com/volleylock/volley/resp"
)

// socket is one connected, handshaken network connection of a Conn and the
// two goroutines that serve it: readLoop and writeLoop. A socket is never
// reused: after a failure the Conn dials a new one. Both goroutines end when
// the socket is closed (by Conn.fail).
type socket struct {
	c    *Conn
	nc   net.Conn
	rd   *resp.Reader // owned by readLoop once it runs (by the handshake before)
	wbuf []byte       // owned by whoever set writing

	writing bool // guarded by c.mu: someone is copying to or writing nc

	wake      chan struct{} // capacity 1: there is something in the queue
	dead      chan struct{} // closed by close
	closeOnce sync.Once
}

func newSocket(c *Conn, nc net.Conn) *socket {
	return &socket{
		c:    c,
		nc:   nc,
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

// close closes the network connection, which ends readLoop, and signals
// writeLoop and the liveness check to end. Safe to call more than once.
func (s *socket) close() {
	s.closeOnce.Do(func() {
		close(s.dead)
		s.nc.Close()
	})
}

// writeLoop writes queued requests, all that are queued at once in one write,
// until the socket dies.
func (s *socket) writeLoop() {
	defer s.c.done.Done()
	c := s.c
	for {
		select {
		case <-s.wake:
		case <-s.dead:
			return
		}
		for {
			c.mu.Lock()
			if c.sock != s || s.writing || len(c.queue) == 0 {
				c.mu.Unlock()
				break
			}
			s.writing = true
			// Copy under the lock: once a request is in inflight a failure may
			// complete it, and its owner may then reuse its Cmd.
			buf := s.wbuf[:0]
			for i, r := range c.queue {
				buf = append(buf, r.Cmd...)
				c.inflight.push(r)
				c.queue[i] = nil
			}
			c.queue = c.queue[:0]
			c.mu.Unlock()

			_, err := s.nc.Write(buf)
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

// readLoop reads replies and completes pending requests in FIFO order until
// the socket dies. The first read or protocol error fails the socket.
func (s *socket) readLoop() {
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
		c.mu.Lock()
		if c.sock != s {
			c.mu.Unlock()
			return
		}
		r := c.inflight.pop()
		c.mu.Unlock()
		if r == nil {
			c.fail(s, &Error{Addr: c.opts.Addr, Op: OpRead, Err: ErrUnexpectedReply})
			return
		}
		c.latency.Store(int64(time.Since(r.sent)))
		r.complete(vals, nil)
	}
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
// ["message", channel, payload] or the RESP3 push of the same, and returns
// its channel and payload.
func message(vals []resp.Value) (channel, payload []byte, ok bool) {
	if len(vals) != 4 || (vals[0].Type != resp.TypeArray && vals[0].Type != resp.TypePush) || vals[0].Int != 3 {
		return nil, nil, false
	}
	if vals[1].Type != resp.TypeBulk || string(vals[1].Bytes) != "message" {
		return nil, nil, false
	}
	return vals[2].Bytes, vals[3].Bytes, true
}
