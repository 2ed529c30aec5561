//go:build linux

package main

import (
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// floorConn is the floor's socket to one master: a non-blocking TCP socket
// with TCP_NODELAY, its read buffer, and the count of replies it owes.
//
// Replies on one socket arrive in the order of the commands, so a reply is
// matched to its command by position: first the stale replies, owed to
// commands of operations that returned before every master answered (they
// are read and dropped), then the want replies of the current exchange.
// A reply beyond those is a protocol error.
//
// A floorConn belongs to its floorSet, used by one goroutine at a time. It
// never reconnects: after any I/O or protocol error it is closed (fd -1)
// and counts as a failed master from then on.
type floorConn struct {
	fd    int
	buf   [floorReadBuf]byte
	r, w  int // buf[r:w]: read, not yet parsed
	stale int // replies owed to commands of returned operations
	want  int // replies the current exchange expects
	got   int // of which received
}

// dialFloor connects a non-blocking TCP socket with TCP_NODELAY to addr
// ("host:port") within timeout and returns its descriptor, which the
// caller owns.
func dialFloor(addr string, timeout time.Duration) (int, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return -1, err
	}
	family, sa := unix.AF_INET6, unix.Sockaddr(nil)
	if ip4 := ta.IP.To4(); ip4 != nil {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: ta.Port, Addr: [4]byte(ip4)}
	} else {
		sa = &unix.SockaddrInet6{Port: ta.Port, Addr: [16]byte(ta.IP.To16())}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, fmt.Errorf("lockbench: floor: %s: socket: %w", addr, err)
	}
	err = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if err == nil {
		err = unix.Connect(fd, sa)
	}
	if err == unix.EINPROGRESS {
		err = floorConnected(fd, timeout)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("lockbench: floor: %s: connect: %w", addr, err)
	}
	return fd, nil
}

// floorConnected waits for a non-blocking connect on fd to complete and
// returns its outcome.
func floorConnected(fd int, timeout time.Duration) error {
	if !floorPoll(fd, unix.POLLOUT, time.Now().Add(timeout)) {
		return unix.ETIMEDOUT
	}
	soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if soErr != 0 {
		return unix.Errno(soErr)
	}
	return nil
}

// floorPoll waits until fd is ready for events or deadline passes, and
// reports whether it is ready (an error or hang-up counts as ready: the
// next call on fd reports it).
func floorPoll(fd int, events int16, deadline time.Time) bool {
	for {
		ms := msUntil(deadline)
		if ms <= 0 {
			return false
		}
		pfd := [1]unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(pfd[:], ms)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// msUntil is the time to deadline in whole milliseconds, rounded up (epoll
// and poll count in milliseconds), or 0 once it has passed.
func msUntil(deadline time.Time) int {
	d := time.Until(deadline)
	if d <= 0 {
		return 0
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

// live reports whether the socket is still open.
func (c *floorConn) live() bool { return c.fd >= 0 }

// pending reports whether the current exchange waits for this master.
func (c *floorConn) pending() bool { return c.got < c.want }

// fail closes the socket (which also takes it out of its epoll set); the
// master counts as failed from then on.
func (c *floorConn) fail() {
	if c.fd >= 0 {
		unix.Close(c.fd)
	}
	c.fd = -1
	c.r, c.w, c.stale, c.want, c.got = 0, 0, 0, 0, 0
}

// write writes all of b by the deadline, waiting for room when the socket
// buffer is full, so that a command is never half sent; on failure the
// connection fails and write reports false.
func (c *floorConn) write(b []byte, deadline time.Time) bool {
	for len(b) > 0 {
		n, err := unix.Write(c.fd, b)
		switch {
		case err == nil:
			b = b[n:]
		case err == unix.EINTR:
		case err == unix.EAGAIN && floorPoll(c.fd, unix.POLLOUT, deadline):
		default:
			c.fail()
			return false
		}
	}
	return true
}

// read reads what the socket holds (one read) and parses every complete
// reply: stale ones are dropped, each of the current exchange counts in
// yes at its position when it matches want.
func (c *floorConn) read(want floorWant, yes []int32) {
	if c.r > 0 {
		c.w = copy(c.buf[:], c.buf[c.r:c.w])
		c.r = 0
	}
	if c.w == len(c.buf) { // cannot happen: a complete reply fits (floorReadBuf)
		c.fail()
		return
	}
	n, err := unix.Read(c.fd, c.buf[c.w:])
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return
	case err != nil || n == 0:
		c.fail()
		return
	}
	c.w += n
	c.parse(want, yes)
}

// parse consumes every complete reply in the buffer (see read).
func (c *floorConn) parse(want floorWant, yes []int32) {
	for c.r < c.w {
		rep, n, err := parseFloorReply(c.buf[c.r:c.w])
		if err == errFloorIncomplete {
			return
		}
		if err != nil {
			c.fail()
			return
		}
		c.r += n
		switch {
		case c.stale > 0:
			c.stale--
		case c.got < c.want:
			if want.matches(rep) {
				yes[c.got]++
			}
			c.got++
		default: // a reply to no command
			c.fail()
			return
		}
	}
}
