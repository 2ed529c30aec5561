//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

var (
	errFloorNotAcquired = errors.New("lockbench: floor: lock not acquired by a quorum")
	errFloorNotReleased = errors.New("lockbench: floor: lock not released by a quorum")
	errFloorNotHeld     = errors.New("lockbench: floor: Unlock without a held lock")
)

// floorSet is one socket per master and an epoll instance over them: what
// one caller uses for one operation at a time. It is not safe for
// concurrent use; the floor hands each set to one goroutine at a time
// (floor.get, floor.put).
//
// An exchange writes one buffer of commands to every master (one write()
// each) and reads replies as epoll reports them. A single Lock or Unlock
// returns at a quorum: the replies still in flight are owed (floorConn
// stale) and dropped by the reads of later operations, in order, before
// any reply of theirs is counted.
//
// The set owns its sockets, its epoll descriptor and its buffers until
// close; the key and token of the lock it holds live in key and tok.
type floorSet struct {
	conns  []floorConn
	ep     int
	events []unix.EpollEvent
	quorum int
	yes    []int32 // per command position of the current exchange: masters that answered as wanted
	wbuf   []byte
	key    []byte
	tok    [floorTokenLen]byte
	timer  *time.Timer // retry pauses

	sha    string
	tokens *floorTokens
	setup  Setup
}

// newFloorSet makes a set over connected non-blocking sockets (one per
// master), which it then owns, closing them on error too.
func newFloorSet(fds []int, sha string, tokens *floorTokens, s Setup) (*floorSet, error) {
	set := &floorSet{
		conns:  make([]floorConn, len(fds)),
		events: make([]unix.EpollEvent, len(fds)),
		quorum: len(fds)/2 + 1,
		yes:    make([]int32, floorDepth),
		wbuf:   make([]byte, 0, 256*floorDepth),
		key:    make([]byte, 0, 128),
		timer:  time.NewTimer(time.Hour),
		sha:    sha,
		tokens: tokens,
		setup:  s,
	}
	set.timer.Stop()
	for i, fd := range fds {
		set.conns[i].fd = fd
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	set.ep = ep
	for i := 0; err == nil && i < len(fds); i++ {
		err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fds[i], &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)})
	}
	if err != nil {
		set.close()
		return nil, fmt.Errorf("lockbench: floor: epoll: %w", err)
	}
	return set, nil
}

// dialFloorSet connects one socket to every master of s.
func dialFloorSet(s Setup, sha string, tokens *floorTokens) (*floorSet, error) {
	fds := make([]int, 0, len(s.Addrs))
	for _, a := range s.Addrs {
		fd, err := dialFloor(a, 5*time.Second)
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, err
		}
		fds = append(fds, fd)
	}
	return newFloorSet(fds, sha, tokens, s)
}

// close closes every socket and the epoll descriptor.
func (s *floorSet) close() {
	for i := range s.conns {
		s.conns[i].fail()
	}
	if s.ep >= 0 {
		unix.Close(s.ep)
		s.ep = -1
	}
}

// exchange writes wbuf, n commands, to every live master and reads replies
// until every master answered them, the deadline passed or ctx ended; with
// early, also as soon as the first position has a quorum of wanted replies
// or can no longer get one. Replies still in flight are then owed. It
// returns, per position, how many masters answered as wanted.
func (s *floorSet) exchange(ctx context.Context, n int, want floorWant, deadline time.Time, early bool) []int32 {
	yes := s.yes[:n]
	clear(yes)
	for i := range s.conns {
		c := &s.conns[i]
		if c.live() && c.write(s.wbuf, deadline) {
			c.want, c.got = n, 0
		}
	}
	for !s.settled(yes, early) && ctx.Err() == nil {
		if !s.wait(want, yes, deadline) {
			break
		}
	}
	s.owe()
	return yes
}

// settled reports whether the exchange has its answer (see exchange).
func (s *floorSet) settled(yes []int32, early bool) bool {
	pending := 0
	for i := range s.conns {
		if s.conns[i].pending() {
			pending++
		}
	}
	if pending == 0 {
		return true
	}
	return early && (int(yes[0]) >= s.quorum || int(yes[0])+pending < s.quorum)
}

// wait waits for replies until the deadline and reads every socket that
// has some; it reports false once the deadline has passed.
func (s *floorSet) wait(want floorWant, yes []int32, deadline time.Time) bool {
	n, ok := s.waitEvents(deadline)
	for _, ev := range s.events[:n] {
		s.conns[ev.Fd].read(want, yes)
	}
	return ok
}

// waitEvents waits until a socket has input or the deadline passes (once
// it has, it only looks), and returns how many of s.events report input;
// it reports false once the deadline has passed, or when epoll failed.
func (s *floorSet) waitEvents(deadline time.Time) (int, bool) {
	ms := msUntil(deadline)
	n, err := unix.EpollWait(s.ep, s.events, ms)
	switch {
	case err == unix.EINTR: // the runtime's preemption signal
		return 0, ms > 0
	case err != nil:
		return 0, false
	}
	return n, ms > 0
}

// owe turns the replies the current exchange still waits for into stale
// ones, to be dropped by later reads.
func (s *floorSet) owe() {
	for i := range s.conns {
		c := &s.conns[i]
		c.stale += c.want - c.got
		c.want, c.got = 0, 0
	}
}

// post writes wbuf to every live master without waiting: every reply is
// owed.
func (s *floorSet) post(deadline time.Time) {
	for i := range s.conns {
		if c := &s.conns[i]; c.live() && c.write(s.wbuf, deadline) {
			c.stale++
		}
	}
}

// drain reads until no reply is owed or the deadline passes, and reports
// whether none is.
func (s *floorSet) drain(deadline time.Time) bool {
	for {
		owed := false
		for i := range s.conns {
			owed = owed || s.conns[i].stale > 0
		}
		if !owed {
			return true
		}
		if !s.wait(floorWant{}, nil, deadline) {
			return false
		}
	}
}

// deadline is when an operation started at start gives up on a master:
// Setup.MasterTimeout later, or ctx's deadline if sooner.
func (s *floorSet) deadline(ctx context.Context, start time.Time) time.Time {
	d := start.Add(s.setup.MasterTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(d) {
		return dl
	}
	return d
}

// loadScript loads floorUnlockScript on every master and checks its SHA.
func (s *floorSet) loadScript() error {
	s.wbuf = appendFloorScriptLoad(s.wbuf[:0])
	yes := s.exchange(context.Background(), 1, floorWant{'$', s.sha}, time.Now().Add(5*time.Second), false)
	if int(yes[0]) < len(s.conns) {
		return fmt.Errorf("lockbench: floor: SCRIPT LOAD answered with SHA %s by %d of %d masters", s.sha, yes[0], len(s.conns))
	}
	return nil
}

// lock takes key for ttl with a fresh token: SET key token NX PX ttl to
// every master, acquired when a quorum answered +OK within the TTL. A
// failed attempt posts the release to every master without waiting, then
// pauses Setup.retryDelay and tries again, up to Setup.Tries attempts or
// until ctx ends. The key and token stay in the set for unlock.
func (s *floorSet) lock(ctx context.Context, key string, ttl time.Duration) error {
	s.key = append(s.key[:0], key...)
	for try := 1; ; try++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.tokens.put(&s.tok, s.tokens.next(1))
		start := time.Now()
		s.wbuf = appendFloorSet(s.wbuf[:0], s.key, s.tok[:], ttl)
		yes := s.exchange(ctx, 1, floorOK, s.deadline(ctx, start), true)
		if int(yes[0]) >= s.quorum && time.Since(start) < ttl {
			return nil
		}
		s.wbuf = appendFloorUnlock(s.wbuf[:0], s.sha, s.key, s.tok[:])
		s.post(s.deadline(ctx, time.Now()))
		if try >= s.setup.Tries {
			return errFloorNotAcquired
		}
		if !s.pause(ctx, s.setup.retryDelay()) {
			return ctx.Err()
		}
	}
}

// unlock releases the lock of the last successful lock: the release
// script on every master, done at a quorum of deletions.
func (s *floorSet) unlock(ctx context.Context) error {
	s.wbuf = appendFloorUnlock(s.wbuf[:0], s.sha, s.key, s.tok[:])
	yes := s.exchange(ctx, 1, floorOne, s.deadline(ctx, time.Now()), true)
	if int(yes[0]) >= s.quorum {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errFloorNotReleased
}

// pause waits d, and reports false if ctx ended first.
func (s *floorSet) pause(ctx context.Context, d time.Duration) bool {
	s.timer.Reset(d)
	select {
	case <-s.timer.C:
		return true
	case <-ctx.Done():
		s.timer.Stop()
		return false
	}
}

// pipelined runs batches of floorDepth Lock+Unlock pairs for d and returns
// the pairs done, the pairs failed and the time it took. A batch is
// floorDepth SETs, on keys prefix+"0" to prefix+"63" with fresh tokens, in
// one write per master; once every master answered them (or MasterTimeout
// passed), floorDepth releases in one write per master. A pair counts when
// its SET had a quorum of +OK within the TTL and its release a quorum of
// deletions.
func (s *floorSet) pipelined(ctx context.Context, prefix string, ttl, d time.Duration) (pairs, failed int64, elapsed time.Duration) {
	t0 := time.Now()
	for ctx.Err() == nil && time.Since(t0) < d {
		first := s.tokens.next(floorDepth)
		s.wbuf = s.wbuf[:0]
		for i := range floorDepth {
			s.slot(prefix, i, first)
			s.wbuf = appendFloorSet(s.wbuf, s.key, s.tok[:], ttl)
		}
		start := time.Now()
		yes := s.exchange(ctx, floorDepth, floorOK, s.deadline(ctx, start), false)
		var held uint64 // bit i: pair i acquired
		if time.Since(start) < ttl {
			for i, y := range yes {
				if int(y) >= s.quorum {
					held |= 1 << i
				}
			}
		}
		s.wbuf = s.wbuf[:0]
		for i := range floorDepth {
			s.slot(prefix, i, first)
			s.wbuf = appendFloorUnlock(s.wbuf, s.sha, s.key, s.tok[:])
		}
		yes = s.exchange(ctx, floorDepth, floorOne, s.deadline(ctx, time.Now()), false)
		for i, y := range yes {
			if held&(1<<i) != 0 && int(y) >= s.quorum {
				pairs++
			} else {
				failed++
			}
		}
	}
	return pairs, failed, time.Since(t0)
}

// slot puts pair i's key (prefix+i) and token (number first+i) in the set.
func (s *floorSet) slot(prefix string, i int, first uint64) {
	s.key = strconv.AppendInt(append(s.key[:0], prefix...), int64(i), 10)
	s.tokens.put(&s.tok, first+uint64(i))
}
