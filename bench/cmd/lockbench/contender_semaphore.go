package main

import (
	"context"
	"sync"
	"time"

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
