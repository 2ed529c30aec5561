package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/torture"
	"github.com/volleylock/volley/redlock"
)

// The semaphore mode's Go contenders. Each is a Contender whose key names
// a semaphore of Setup.Permits permits: LockUnlock takes a permit and
// gives it back, a Holder's Lock takes one and its Unlock gives it back.
// They run in the mode's child processes (handoff_child.go), which build
// them by name like any other.

const (
	nameVolleySemaphore = "volley-semaphore"
	nameMajorityCounter = "majority-counter"
)

// volleySemaphore is Volley's redlock Semaphore, on a Client made as the
// volley contender's.
type volleySemaphore struct {
	*volley
	permits int
	mu      sync.Mutex
	sems    map[string]*redlock.Semaphore // by name, made on first use
}

func newVolleySemaphore(s Setup) (Contender, error) {
	c, err := newVolley(s)
	if err != nil {
		return nil, err
	}
	return semaphoresOf(c.(*volley), s.Permits), nil
}

// semaphoresOf is the semaphores of permits permits on v's Client.
func semaphoresOf(v *volley, permits int) *volleySemaphore {
	return &volleySemaphore{volley: v, permits: permits, sems: map[string]*redlock.Semaphore{}}
}

func (v *volleySemaphore) Name() string { return nameVolleySemaphore }

func (v *volleySemaphore) Note() string {
	return v.volley.Note() + "; Client.Semaphore(name, P).Acquire, Permit.Release: a permit is a lock of its own, waiters woken by releases"
}

func (v *volleySemaphore) semaphore(name string) (*redlock.Semaphore, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s := v.sems[name]; s != nil {
		return s, nil
	}
	s, err := v.c.Semaphore(name, v.permits)
	if err != nil {
		return nil, err
	}
	v.sems[name] = s
	return s, nil
}

func (v *volleySemaphore) LockUnlock(ctx context.Context, key string, ttl time.Duration) error {
	s, err := v.semaphore(key)
	if err != nil {
		return err
	}
	p, err := s.Acquire(ctx, ttl)
	if err != nil {
		return err
	}
	return p.Release(ctx)
}

func (v *volleySemaphore) NewHolder() Holder { return &permitHolder{v: v} }

type permitHolder struct {
	v *volleySemaphore
	p redlock.Permit
}

func (h *permitHolder) Lock(ctx context.Context, key string, ttl time.Duration) error {
	s, err := h.v.semaphore(key)
	if err != nil {
		return err
	}
	p, err := s.Acquire(ctx, ttl)
	if err != nil {
		return err
	}
	h.p = p
	return nil
}

func (h *permitHolder) Unlock(ctx context.Context) error {
	err := h.p.Release(ctx)
	h.p = redlock.Permit{}
	return err
}

// majorityCounter is internal/torture's naive semaphore: each master
// admits at most P tokens in a sorted set, a holder needs a majority of
// admissions. Majorities of different holders need not share a master
// that counted them all, so it can admit more than P holders: the mode
// shows it, it does not fail for it.
type majorityCounter struct {
	l torture.Locker
}

func newMajorityCounter(s Setup) (Contender, error) {
	// A seed per process: its tokens are drawn from it.
	l, err := torture.NewMajorityCounterLocker(s.Addrs, conn.Options{}, s.Permits, rand.Uint64())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.WaitReady(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("majority counter: %w", err)
	}
	return &majorityCounter{l: l}, nil
}

func (m *majorityCounter) Name() string { return nameMajorityCounter }

func (m *majorityCounter) Note() string {
	return "internal/torture's naive semaphore: a sorted set per master admits at most P, a holder needs a majority; EVAL on each master one after another; its own retry pause, uniform in [0, 5ms), and no try limit; not safe by design"
}

func (m *majorityCounter) LockUnlock(ctx context.Context, key string, ttl time.Duration) error {
	h, err := m.l.Lock(ctx, key, ttl)
	if err != nil {
		return err
	}
	return h.Unlock(ctx)
}

func (m *majorityCounter) NewHolder() Holder { return &counterHolder{l: m.l} }

func (m *majorityCounter) Close() error { return m.l.Close() }

type counterHolder struct {
	l torture.Locker
	h torture.Held
}

func (h *counterHolder) Lock(ctx context.Context, key string, ttl time.Duration) error {
	held, err := h.l.Lock(ctx, key, ttl)
	if err != nil {
		return err
	}
	h.h = held
	return nil
}

func (h *counterHolder) Unlock(ctx context.Context) error {
	err := h.h.Unlock(ctx)
	h.h = nil
	return err
}
