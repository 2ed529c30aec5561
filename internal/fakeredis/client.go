package fakeredis

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/tidwall/redcon"
)

// maxKeptOutput is the largest output buffer a connection keeps between
// batches; a bigger one (a huge reply) is dropped after use.
const maxKeptOutput = 64 << 10

// client is one connection. Its fields below "connection state" are owned
// by its serve goroutine (those a command changes, such as proto, change
// under the server's mu); those of "pub/sub" and dead are guarded by the
// server's mu.
type client struct {
	s    *Server
	nc   net.Conn
	wmu  sync.Mutex // held while writing to nc
	in   readRecorder
	rd   *redcon.Reader
	kill chan struct{} // closed by dropLocked
	dead bool          // dropped or gone: run nothing more
	id   int64         // CLIENT ID, set before serve starts

	// pub/sub
	subs [numNamespaces]map[string]struct{} // channels subscribed to, by namespace
	msgs []byte                             // messages published to c, not yet in out nor written
	idle bool                               // the serve goroutine waits for input: push writes msgs
	wake chan struct{}                      // wakes push; made by the first (S)SUBSCRIBE, read by serve unlocked

	// connection state
	out     []byte // replies not yet written
	replyAt int    // where in out exec appended its reply
	proto   int    // 2 or 3, switched by HELLO
	db      int    // SELECTed database
	authed  bool
	name    string // CLIENT SETNAME
	quit    bool   // close once the replies so far are written
	lower   [32]byte
	lower2  [32]byte
}

// readRecorder passes reads through and remembers the last read error, so
// that an error from the command reader can be told apart: the connection's
// own error, or a protocol error found by the parser.
type readRecorder struct {
	r   io.Reader
	err error
}

func (r *readRecorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

func newClient(s *Server, nc net.Conn) *client {
	c := &client{
		s:      s,
		nc:     nc,
		kill:   make(chan struct{}),
		proto:  2,
		authed: s.opts.Password == "",
	}
	c.in.r = nc
	c.rd = redcon.NewReader(&c.in)
	return c
}

// dropLocked closes the connection from the server's side and forgets its
// subscriptions. The caller holds s.mu and removes c from s.clients.
func (c *client) dropLocked() {
	if c.dead {
		return
	}
	c.dead = true
	close(c.kill)
	c.nc.Close()
	c.s.forgetSubscriptionsLocked(c)
}

// serve reads commands and answers them until the connection ends.
func (c *client) serve() {
	defer c.s.wg.Done()
	defer c.s.removeClient(c)
	defer c.nc.Close()
	for {
		// A connection that has subscribed can be sent messages at any
		// time: while it waits for input, its push goroutine writes them.
		pubsub := c.wake != nil
		if pubsub {
			c.setIdle(true)
		}
		cmds, err := c.read()
		if pubsub {
			c.setIdle(false)
		}
		if err != nil {
			if err != c.in.err {
				// As Redis does: report the protocol error, then close.
				c.out = appendError(c.out, "ERR "+err.Error())
				c.flush()
			}
			return
		}
		for i := range cmds {
			if len(cmds[i].Args) == 0 {
				continue
			}
			if !c.handle(cmds[i].Args) {
				if c.quit {
					c.flush()
				}
				return
			}
		}
		if !c.flush() {
			return
		}
	}
}

// read returns the commands that are complete in the input, waiting for
// at least one. A frame that makes the parser panic (redcon does not check
// lengths for overflow) is reported as a protocol error.
func (c *client) read() (cmds []redcon.Command, err error) {
	defer func() {
		if r := recover(); r != nil {
			//lint:ignore ST1005 Redis's own reply text, sent as -ERR Protocol error: ...
			cmds, err = nil, fmt.Errorf("Protocol error: malformed frame (%v)", r)
		}
	}()
	return c.rd.ReadCommands()
}

// flush writes the pending replies; false means the connection is broken.
func (c *client) flush() bool {
	if len(c.out) == 0 {
		return true
	}
	err := c.write(c.out)
	if cap(c.out) > maxKeptOutput {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	return err == nil
}

// write writes b to the connection, holding the write lock, so that it
// never interleaves with the messages written by the push goroutine.
func (c *client) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.nc.Write(b)
	return err
}

// handle runs one command, or applies its fault, appending the reply to
// c.out. It returns false when the connection must be closed.
func (c *client) handle(args [][]byte) bool {
	c.s.commands.Add(1)
	name, ok := lowerInto(c.lower[:], args[0])
	if !ok {
		name = bytes.ToLower(args[0])
	}
	f, faulted := c.s.takeFault(name)
	if !faulted {
		c.exec(name, args)
		return !c.quit
	}

	if f.Hang {
		c.flush()
		c.hang()
		return false
	}
	if f.CloseBefore {
		if f.Latency > 0 && !(c.flush() && c.sleep(f.Latency)) {
			return false
		}
		c.flush()
		return false
	}
	mark := len(c.out)
	executed := false
	switch {
	case f.Raw != nil:
		c.out = append(c.out, f.Raw...)
	case f.NoScript && string(name) == "evalsha":
		c.out = append(c.out, replyNoScript...)
	default:
		c.exec(name, args)
		executed = true
		mark = c.replyAt // messages moved in first are not part of the reply
	}
	if f.Latency > 0 {
		// Earlier replies go now, this one after the delay.
		if mark > 0 {
			if err := c.write(c.out[:mark]); err != nil {
				return false
			}
			c.out = c.out[:copy(c.out, c.out[mark:])]
			mark = 0
		}
		if !c.sleep(f.Latency) {
			return false
		}
	}
	if f.CloseMidReply && executed {
		if reply := len(c.out) - mark; reply > 0 {
			c.out = c.out[:mark+max(reply/2, 1)]
		}
		c.flush()
		return false
	}
	return !c.quit
}

// hang discards input until the connection is closed by either side.
func (c *client) hang() {
	var buf [512]byte
	for {
		if _, err := c.nc.Read(buf[:]); err != nil {
			return
		}
	}
}

// sleep waits for d; false means the server dropped the connection first.
func (c *client) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.kill:
		return false
	}
}
