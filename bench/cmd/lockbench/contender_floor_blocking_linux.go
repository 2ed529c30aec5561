//go:build linux

package main

import (
	"context"
	"sync"
	"time"
)

// floorBlocking is the floor-blocking contender (floor_blocking.go): one
// driver goroutine owns one floorSet and serves every caller's Lock and
// Unlock, each caller parked on its own channel until the driver has its
// answer.
//
// Concurrency: LockUnlock and NewHolder are safe for concurrent use; a
// Holder is one goroutine's; Close comes after every call has returned.
// Callers append to the queue under mu and poke wake; the driver alone
// touches the set, and a call's fields belong to the driver from its
// append until the driver's send on the call's done channel.
type floorBlocking struct {
	setup  Setup
	set    *floorSet
	tokens *floorTokens

	mu     sync.Mutex
	queue  []*floorCall // queued Locks and Unlocks, in order
	closed bool

	wake  chan struct{} // cap 1: something was queued
	stop  chan struct{} // closed by Close
	ended chan struct{} // closed by the driver when it returns

	calls sync.Pool // *floorCall
}

// floorCall is one caller's lock: its key and token, the TTL of its Lock,
// whether the call queued is its release, and the driver's answer. done
// (cap 1) carries the answer's arrival.
type floorCall struct {
	key     []byte
	tok     [floorTokenLen]byte
	ttl     time.Duration
	release bool
	ok      bool
	done    chan struct{}

	// The driver's, while the call is in flight: when it was written, and
	// how many masters answered it, and how many as wanted.
	sent          time.Time
	answered, yes int
}

// newFloorBlocking dials one set, loads the release script and starts the
// driver, which Close stops. A MasterTimeout of 0 means 50ms.
func newFloorBlocking(s Setup) (Contender, error) {
	if s.MasterTimeout <= 0 {
		s.MasterTimeout = 50 * time.Millisecond
	}
	tokens, err := newFloorTokens()
	if err != nil {
		return nil, err
	}
	set, err := dialFloorSet(s, floorScriptSHA(), tokens)
	if err != nil {
		return nil, err
	}
	if err := set.loadScript(); err != nil {
		set.close()
		return nil, err
	}
	f := &floorBlocking{
		setup:  s,
		set:    set,
		tokens: tokens,
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		ended:  make(chan struct{}),
	}
	f.calls.New = func() any {
		return &floorCall{key: make([]byte, 0, 64), done: make(chan struct{}, 1)}
	}
	go f.drive()
	return f, nil
}

func (f *floorBlocking) Name() string { return nameFloorBlocking }

func (f *floorBlocking) Note() string {
	return "the floor's sockets behind a blocking call: callers queue and park, one driver goroutine writes what is queued (raw epoll, up to 256 in flight) and wakes each caller once every master answered; no retry, no reconnect"
}

func (f *floorBlocking) LockUnlock(ctx context.Context, key string, ttl time.Duration) error {
	h := floorBlockingHolder{f: f}
	if err := h.Lock(ctx, key, ttl); err != nil {
		return err
	}
	return h.Unlock(ctx)
}

// lock takes c.key with a fresh token: one SET NX PX, queued for the driver.
func (f *floorBlocking) lock(ctx context.Context, c *floorCall, ttl time.Duration) error {
	f.tokens.put(&c.tok, f.tokens.next(1))
	c.ttl, c.release = ttl, false
	if err := f.call(ctx, c); err != nil {
		return err
	}
	if !c.ok {
		return errFloorNotAcquired
	}
	return nil
}

// unlock releases c's lock: the release script, queued for the driver.
func (f *floorBlocking) unlock(ctx context.Context, c *floorCall) error {
	c.release = true
	if err := f.call(ctx, c); err != nil {
		return err
	}
	if !c.ok {
		return errFloorNotReleased
	}
	return nil
}

// call queues c and waits for the driver's answer. It does not leave on
// ctx: the driver answers within MasterTimeout of writing c's command
// (which waits for room when 256 are in flight), and the caller must not
// reuse c before.
func (f *floorBlocking) call(ctx context.Context, c *floorCall) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return errFloorClosed
	}
	f.queue = append(f.queue, c)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	<-c.done
	return nil
}

// drive serves the queue until Close. It writes what is queued whenever
// the driver comes round, while earlier commands are still unanswered, up
// to floorBlockingInFlight commands in flight: every master gets the same
// commands in the same order, so a master's k-th reply since the start
// answers the k-th command written (its cursor). A call is answered once
// every master has answered it, failed, or let MasterTimeout pass since it
// was written; a master that let it pass owes its unanswered replies
// (floorConn stale) and is skipped for those commands.
func (f *floorBlocking) drive() {
	defer close(f.ended)
	s := f.set
	d := &floorDriver{cursor: make([]int, len(s.conns)), yes: make([]int32, floorBlockingInFlight)}
	for {
		if len(d.ring) == 0 { // stop only once nothing is in flight
			select {
			case <-f.wake:
			case <-f.stop:
				return
			}
		}
		f.write(d)
		if len(d.ring) == 0 {
			continue
		}
		n, _ := s.waitEvents(d.nextDeadline(s, f.setup.MasterTimeout))
		for _, ev := range s.events[:n] {
			f.read(d, int(ev.Fd))
		}
		now := time.Now()
		for i := range s.conns {
			if d.cursor[i] < d.end() && !now.Before(d.call(d.cursor[i]).sent.Add(f.setup.MasterTimeout)) {
				f.skip(d, i) // timed out: its replies are owed
			}
		}
		d.trim()
	}
}

// floorBlockingInFlight bounds the commands in flight on each master.
const floorBlockingInFlight = 4 * floorDepth

// floorDriver is the driver's state: the calls in flight, oldest first,
// numbered from base; per master, the number of the next command it will
// answer.
type floorDriver struct {
	ring   []*floorCall
	base   int
	cursor []int
	yes    []int32 // scratch for one read
}

func (d *floorDriver) end() int                { return d.base + len(d.ring) }
func (d *floorDriver) call(seq int) *floorCall { return d.ring[seq-d.base] }

// nextDeadline is when the oldest command a master still owes times out.
func (d *floorDriver) nextDeadline(s *floorSet, timeout time.Duration) time.Time {
	var at time.Time
	for i := range s.conns {
		if d.cursor[i] < d.end() {
			if t := d.call(d.cursor[i]).sent.Add(timeout); at.IsZero() || t.Before(at) {
				at = t
			}
		}
	}
	return at
}

// trim drops the calls every master is past.
func (d *floorDriver) trim() {
	low := d.end()
	for _, c := range d.cursor {
		low = min(low, c)
	}
	if k := low - d.base; k > 0 {
		n := copy(d.ring, d.ring[k:])
		clear(d.ring[n:])
		d.ring = d.ring[:n]
		d.base = low
	}
}

// write takes what is queued, as room allows, and writes it to every live
// master in one write each; a dead master is skipped at once.
func (f *floorBlocking) write(d *floorDriver) {
	room := floorBlockingInFlight - len(d.ring)
	if room <= 0 {
		return
	}
	f.mu.Lock()
	take := min(room, len(f.queue))
	first := len(d.ring)
	d.ring = append(d.ring, f.queue[:take]...)
	n := copy(f.queue, f.queue[take:])
	clear(f.queue[n:])
	f.queue = f.queue[:n]
	f.mu.Unlock()
	if take == 0 {
		return
	}
	s := f.set
	s.wbuf = s.wbuf[:0]
	now := time.Now()
	for _, c := range d.ring[first:] {
		if c.release {
			s.wbuf = appendFloorUnlock(s.wbuf, s.sha, c.key, c.tok[:])
		} else {
			s.wbuf = appendFloorSet(s.wbuf, c.key, c.tok[:], c.ttl)
		}
		c.sent, c.answered, c.yes = now, 0, 0
	}
	for i := range s.conns {
		if c := &s.conns[i]; !c.live() || !c.write(s.wbuf, now.Add(f.setup.MasterTimeout)) {
			f.skip(d, i)
		}
	}
}

// read reads master i's replies and credits them to the calls they
// answer.
func (f *floorBlocking) read(d *floorDriver, i int) {
	c := &f.set.conns[i]
	owed := d.end() - d.cursor[i]
	yes := d.yes[:owed]
	clear(yes)
	c.want, c.got = owed, 0
	c.read(floorDone, yes)
	got := c.got
	c.want, c.got = 0, 0
	if !c.live() {
		f.skip(d, i)
		return
	}
	for k := range got {
		f.credit(d.call(d.cursor[i]+k), yes[k] > 0)
	}
	d.cursor[i] += got
}

// skip gives up on master i for every command it still owes: its replies
// to them are dropped when they come.
func (f *floorBlocking) skip(d *floorDriver, i int) {
	c := &f.set.conns[i]
	if c.live() {
		c.stale += d.end() - d.cursor[i]
	}
	for seq := d.cursor[i]; seq < d.end(); seq++ {
		f.credit(d.call(seq), false)
	}
	d.cursor[i] = d.end()
}

// credit counts one master's answer to c, and answers the caller once
// every master has: a Lock is ok when a quorum said +OK within its TTL,
// an Unlock when a quorum deleted.
func (f *floorBlocking) credit(c *floorCall, yes bool) {
	c.answered++
	if yes {
		c.yes++
	}
	if c.answered == len(f.set.conns) {
		c.ok = c.yes >= f.set.quorum && (c.release || time.Since(c.sent) < c.ttl)
		c.done <- struct{}{}
	}
}

func (f *floorBlocking) NewHolder() Holder { return &floorBlockingHolder{f: f} }

// Close stops the driver and closes the set: call it once every operation
// has returned.
func (f *floorBlocking) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	close(f.stop)
	<-f.ended
	f.set.close()
	return nil
}

// floorBlockingHolder keeps its call from Lock to Unlock.
type floorBlockingHolder struct {
	f *floorBlocking
	c *floorCall
}

func (h *floorBlockingHolder) Lock(ctx context.Context, key string, ttl time.Duration) error {
	c := h.f.calls.Get().(*floorCall)
	c.key = append(c.key[:0], key...)
	if err := h.f.lock(ctx, c, ttl); err != nil {
		if ctx.Err() == nil {
			h.f.unlock(ctx, c) // a minority may hold it
		}
		h.f.calls.Put(c)
		return err
	}
	h.c = c
	return nil
}

func (h *floorBlockingHolder) Unlock(ctx context.Context) error {
	c := h.c
	if c == nil {
		return errFloorNotHeld
	}
	h.c = nil
	defer h.f.calls.Put(c)
	return h.f.unlock(ctx, c)
}
