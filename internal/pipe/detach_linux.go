package pipe

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// detached is a socket's network connection taken out of the Go runtime's
// network poller (Linux): a non-blocking file descriptor of its own, read
// either by the socket's reader goroutine, which waits in an epoll set of
// its own, or by a caller that claimed the socket through a Group (see Batch.Claim) and
// waits for its replies itself (see poller). The runtime's poller would
// otherwise wake a thread for every reply that arrives, whoever reads it:
// on a machine whose cores the masters share, that wake-up is the largest
// cost of a lock after the system calls themselves.
//
// The descriptor is reference-counted, as the runtime counts its own: each
// read, write and the socket itself hold a reference, shutdown wakes every
// wait on it (reads see EOF, writes an error, epoll a hang-up), and the
// last reference closes it, so that a descriptor number is never reused
// while someone still uses it.
type detached struct {
	fd      int
	refs    atomic.Int32 // the socket's own reference, plus one per call in progress
	closing atomic.Bool
	// drained says that the last Read was short: the socket had nothing
	// more then. Whoever reads (see socket.reading) owns it.
	drained bool
	// The reader goroutine's epoll set: fd, always for hang-ups, for
	// input while it reads. The set is itself in the runtime's poller
	// (epoll sets nest): the reader parks there like any goroutine waiting
	// on a socket, and is woken only when the set reports something.
	epfd *os.File
	erc  syscall.RawConn

	// watching says whether the set reports input (guarded by the
	// Conn's mutex, like watch, the scratch of watchInput); modify is the
	// function watchInput gives erc, made once so that it does not
	// allocate. events is hungUp's scratch (the reader's).
	watching bool
	watch    unix.EpollEvent
	modify   func(epfd uintptr)
	events   [1]unix.EpollEvent

	// look is hungUpIdle's function for erc.Control, made once so that
	// it does not allocate; lookEvents and lookUp its scratch and
	// result. The Conn's liveness check owns them.
	look       func(epfd uintptr)
	lookEvents [1]unix.EpollEvent
	lookUp     bool
}

// detach takes nc out of the runtime's poller: it duplicates nc's
// descriptor, closes nc (which unregisters it from the poller; the
// connection stays open through the duplicate) and returns the duplicate,
// ready for the reader's epoll set. It returns nil, leaving nc as it was,
// for connections it cannot detach: anything but plain TCP or Unix
// sockets (a custom Dialer's connection; TLS detaches the TCP connection
// under it, see socket.detachFrom).
func detach(nc net.Conn) *detached {
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nil
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(f uintptr) {
		fd, dupErr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil || dupErr != nil {
		return nil
	}
	// O_NONBLOCK belongs to the open file, which the runtime set up
	// non-blocking; say so anyway, in case that ever changes.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		unix.Close(fd)
		return nil
	}
	ev := unix.EpollEvent{Events: unix.EPOLLRDHUP}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil || unix.SetNonblock(epfd, true) != nil {
		unix.Close(epfd)
		unix.Close(fd)
		return nil
	}
	// A non-blocking descriptor given to os.NewFile goes into the
	// runtime's poller.
	epf := os.NewFile(uintptr(epfd), "volley-epoll")
	erc, err := epf.SyscallConn()
	if err != nil {
		epf.Close()
		unix.Close(fd)
		return nil
	}
	nc.Close()
	d := &detached{fd: fd, epfd: epf, erc: erc}
	d.modify = d.modifyWatch
	d.look = d.lookHungUp
	d.refs.Store(1)
	return d
}

// acquire takes a reference for one call; false once the socket is closing.
func (d *detached) acquire() bool {
	for {
		n := d.refs.Load()
		if n <= 0 || d.closing.Load() {
			return false
		}
		if d.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the descriptor.
func (d *detached) release() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
	}
}

// shutdown ends the connection: every wait on it wakes, and the
// descriptor closes when its last call returns. Safe to call more than
// once.
func (d *detached) shutdown() {
	if d.closing.Swap(true) {
		return
	}
	unix.Shutdown(d.fd, unix.SHUT_RDWR)
	d.release()
}

// errWouldBlock is a detached socket's Read with nothing to read: the
// resp.Reader returns it, and the read resumes when epoll says there is
// input. It is a temporary net.Error, so that crypto/tls returns it from
// a TLS socket's Read without keeping it (see tlsAdapter).
var errWouldBlock = &wouldBlock{}

type wouldBlock struct{}

func (*wouldBlock) Error() string   { return "conn: no input yet" }
func (*wouldBlock) Timeout() bool   { return true }
func (*wouldBlock) Temporary() bool { return true }

// Read reads what is there without waiting: errWouldBlock when nothing
// is, io.EOF when the master closed the connection.
func (d *detached) Read(p []byte) (int, error) {
	if !d.acquire() {
		return 0, net.ErrClosed
	}
	defer d.release()
	for {
		n, err := unix.Read(d.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		d.drained = n < len(p)
		return n, nil
	}
}

// Write writes all of p, waiting for room in the socket's buffer when it
// is full (a shutdown ends the wait with an error).
func (d *detached) Write(p []byte) (int, error) { return d.write(p, true) }

// writeSome writes what of p the socket's buffer takes now, without
// waiting, and returns how much that was; an error only for a failed
// socket.
func (d *detached) writeSome(p []byte) (int, error) { return d.write(p, false) }

// write is Write, or writeSome without wait.
func (d *detached) write(p []byte, wait bool) (int, error) {
	if !d.acquire() {
		return 0, net.ErrClosed
	}
	defer d.release()
	n := 0
	for n < len(p) {
		m, err := unix.Write(d.fd, p[n:])
		if m > 0 {
			n += m
		}
		switch {
		case err == nil || err == unix.EINTR:
		case err == unix.EAGAIN && !wait:
			return n, nil
		case err == unix.EAGAIN:
			pfd := []unix.PollFd{{Fd: int32(d.fd), Events: unix.POLLOUT}}
			if _, err := unix.Poll(pfd, -1); err != nil && err != unix.EINTR {
				return n, err
			}
			if d.closing.Load() {
				return n, net.ErrClosed
			}
		default:
			return n, err
		}
	}
	return n, nil
}

// watchInput makes the reader's epoll set report input (on) or only
// hang-ups (off). The caller holds the Conn's mutex, so the changes are
// made in the order of the decisions.
func (d *detached) watchInput(on bool) {
	if d.watching == on || !d.acquire() {
		return
	}
	d.watching = on
	d.watch = unix.EpollEvent{Events: unix.EPOLLRDHUP}
	if on {
		d.watch.Events |= unix.EPOLLIN
	}
	d.erc.Control(d.modify)
	if on {
		// Input that arrived while unwatched may be there already, and
		// the change alone does not always wake the reader (epoll wakes
		// a set's own waiters only when the socket was not already on its
		// ready list): wake it, so that it looks.
		d.epfd.SetReadDeadline(aLongTimeAgo)
	}
	d.release()
}

// aLongTimeAgo is a deadline in the past: setting it wakes the reader.
var aLongTimeAgo = time.Unix(1, 0)

func (d *detached) modifyWatch(epfd uintptr) {
	unix.EpollCtl(int(epfd), unix.EPOLL_CTL_MOD, d.fd, &d.watch)
}

// park runs step, and runs it again each time the reader's epoll set
// reports something (input while watched, a hang-up, a shutdown), parked
// in the runtime's poller in between, until step returns true. It fails
// only when the set cannot be waited on.
func (d *detached) park(step func(epfd uintptr) bool) error {
	for {
		err := d.erc.Read(step)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		// Woken by watchInput: clear the deadline, then look again (a
		// wake-up after the clearing comes anew).
		d.epfd.SetReadDeadline(time.Time{})
	}
}

// hungUp reports whether the reader's epoll set says the connection hung
// up (or was shut down); epfd is the set, as park gives it to step.
func (d *detached) hungUp(epfd uintptr) bool { return setHungUp(epfd, &d.events) }

// hungUpIdle is hungUp for the Conn's liveness check (see Conn.watch),
// while nobody reads: it looks at the reader's epoll set without waiting.
// False once the reader closed the set.
func (d *detached) hungUpIdle() bool {
	d.lookUp = false
	d.erc.Control(d.look)
	return d.lookUp
}

func (d *detached) lookHungUp(epfd uintptr) { d.lookUp = setHungUp(epfd, &d.lookEvents) }

// setHungUp reports whether the epoll set epfd says, without waiting, that
// its connection hung up (or was shut down); events is the caller's
// scratch.
func setHungUp(epfd uintptr, events *[1]unix.EpollEvent) bool {
	n, err := unix.EpollWait(int(epfd), events[:], 0)
	return err == nil && n > 0 && events[0].Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
}

// closeEpoll closes the reader's epoll set; the reader calls it as it ends.
func (d *detached) closeEpoll() { d.epfd.Close() }
