package pipe

import (
	"time"

	"golang.org/x/sys/unix"
)

// pollSet is a poller's epoll set: the descriptor of each Conn's claimed
// socket, registered at its first claim, reporting input (level-triggered)
// with the Conn's index as its data.
type pollSet struct {
	epfd   int       // -1 when unavailable, or closed
	reg    []*socket // per index, the socket registered
	events []unix.EpollEvent
}

func (ps *pollSet) init(n int) {
	ps.reg = make([]*socket, n)
	ps.events = make([]unix.EpollEvent, n)
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		epfd = -1
	}
	ps.epfd = epfd
}

func (ps *pollSet) ok() bool { return ps.epfd >= 0 }

// watch makes sure that s, the socket of Conn i, is the one registered
// for i; false if it cannot be.
func (ps *pollSet) watch(i int, s *socket) bool {
	if ps.reg[i] == s {
		return true
	}
	if old := ps.reg[i]; old != nil && old.det.acquire() {
		// Still open: unregister it. (A closed one left the set.)
		unix.EpollCtl(ps.epfd, unix.EPOLL_CTL_DEL, old.det.fd, nil)
		old.det.release()
	}
	ps.reg[i] = nil
	if !s.det.acquire() {
		return false
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
	err := unix.EpollCtl(ps.epfd, unix.EPOLL_CTL_ADD, s.det.fd, &ev)
	if err == unix.EEXIST {
		err = unix.EpollCtl(ps.epfd, unix.EPOLL_CTL_MOD, s.det.fd, &ev)
	}
	s.det.release()
	if err != nil {
		return false
	}
	ps.reg[i] = s
	return true
}

// wait waits up to d (rounded up to a millisecond) for input and returns
// how many Conns have some; index(k) names them.
func (ps *pollSet) wait(d time.Duration) int {
	ms := 0
	if d > 0 {
		ms = int((d + time.Millisecond - 1) / time.Millisecond)
	}
	n, err := unix.EpollWait(ps.epfd, ps.events, ms)
	if err != nil {
		return 0 // EINTR: the caller polls again
	}
	return n
}

func (ps *pollSet) index(k int) int { return int(ps.events[k].Fd) }

func (ps *pollSet) close() {
	if ps.epfd >= 0 {
		unix.Close(ps.epfd)
		ps.epfd = -1
	}
}
