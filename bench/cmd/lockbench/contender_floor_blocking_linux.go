//go:build linux

package main

import (
	"context"
	"sync"
	"time"
)

// floorBlocking is the floor-blocking contender (floor_blocking.go): one
// driver goroutine owns one floorSet and serves every caller's Lock and
// Unlock in batches, each caller parked on its own channel until the
// driver has its answer.
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
	return "floor-pipelined's batches behind a blocking call: one driver goroutine, raw epoll, each caller parked until its batch is answered; no retry, no reconnect"
}

func (f *floorBlocking) LockUnlock(ctx context.Context, key string, ttl time.Duration) error {
	c := f.calls.Get().(*floorCall)
	defer f.calls.Put(c)
	c.key = append(c.key[:0], key...)
	err := f.lock(ctx, c, ttl)
	if err == nil {
		return f.unlock(ctx, c)
	}
	if ctx.Err() == nil {
		f.unlock(ctx, c) // a minority may hold it
	}
	return err
}

// lock takes c.key with a fresh token: one SET NX PX in the next batch.
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

// unlock releases c's lock: the release script in the next batch.
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
// ctx: the driver answers within MasterTimeout of the call's batch, and
// the caller must not reuse c before.
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

// drive serves the queue until Close: it takes every queued call and
// answers them in batches of at most floorDepth.
func (f *floorBlocking) drive() {
	defer close(f.ended)
	var calls []*floorCall
	for {
		select {
		case <-f.wake:
		case <-f.stop:
			return
		}
		for {
			f.mu.Lock()
			calls, f.queue = f.queue, calls[:0]
			f.mu.Unlock()
			if len(calls) == 0 {
				break
			}
			f.serve(calls)
		}
	}
}

// serve answers calls, floorDepth at a time: one write of their commands
// (SETs and releases mixed, in queue order) per master, then every
// master's replies or MasterTimeout. A Lock is ok when a quorum said +OK
// within its TTL, an Unlock when a quorum deleted.
func (f *floorBlocking) serve(calls []*floorCall) {
	s := f.set
	for len(calls) > 0 {
		batch := calls[:min(len(calls), floorDepth)]
		calls = calls[len(batch):]
		s.wbuf = s.wbuf[:0]
		for _, c := range batch {
			if c.release {
				s.wbuf = appendFloorUnlock(s.wbuf, s.sha, c.key, c.tok[:])
			} else {
				s.wbuf = appendFloorSet(s.wbuf, c.key, c.tok[:], c.ttl)
			}
		}
		start := time.Now()
		yes := s.exchange(context.Background(), len(batch), floorDone, start.Add(f.setup.MasterTimeout), false)
		took := time.Since(start)
		for i, c := range batch {
			c.ok = int(yes[i]) >= s.quorum && (c.release || took < c.ttl)
			c.done <- struct{}{}
		}
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
			h.f.unlock(ctx, c)
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
