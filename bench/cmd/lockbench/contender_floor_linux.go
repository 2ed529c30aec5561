//go:build linux

package main

import (
	"context"
	"sync"
	"time"
)

// floor is the floor contender (floor.go): a pool of socket sets
// (floorSet), one per concurrent caller.
//
// Concurrency: LockUnlock, NewHolder and Pipelined are safe for concurrent
// use; a Holder is one goroutine's; Close comes after every call has
// returned. A call takes a set from the pool (a mutex-guarded free list)
// for the length of one operation (LockUnlock) or of one held lock (a
// Holder, from Lock to Unlock) and puts it back after; a set is dialled
// when the pool is empty, so there are as many sets as the most callers at
// once, each a socket per master and an epoll descriptor, and every set
// lives until Close. A caller blocked in epoll_wait holds an OS thread
// (that is the point: no netpoller), so G goroutines in the throughput
// mode run on G threads; with G well above the cores, some operations
// outlast MasterTimeout waiting for a core, and count as errors.
type floor struct {
	setup  Setup
	sha    string
	tokens *floorTokens

	mu   sync.Mutex
	free []*floorSet
	all  []*floorSet
}

// newFloor dials a first set and loads the release script on every
// master. A MasterTimeout of 0 means 50ms, lockbench's default.
func newFloor(s Setup) (Contender, error) {
	if s.MasterTimeout <= 0 {
		s.MasterTimeout = 50 * time.Millisecond
	}
	tokens, err := newFloorTokens()
	if err != nil {
		return nil, err
	}
	f := &floor{setup: s, sha: floorScriptSHA(), tokens: tokens}
	set, err := f.dial()
	if err != nil {
		return nil, err
	}
	if err := set.loadScript(); err != nil {
		f.Close()
		return nil, err
	}
	f.put(set)
	return f, nil
}

func (f *floor) Name() string { return nameFloor }

func (f *floor) Note() string {
	note := "raw epoll, no netpoller: a socket per master per caller, one write per master, return at a quorum; no reconnect, no drift margin"
	if f.setup.Defaults {
		note += "; defaults: none of its own, the shared settings"
	}
	return note
}

// dial makes a new set and records it for Close.
func (f *floor) dial() (*floorSet, error) {
	set, err := dialFloorSet(f.setup, f.sha, f.tokens)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.all = append(f.all, set)
	f.mu.Unlock()
	return set, nil
}

// get takes a set from the pool, or dials one.
func (f *floor) get() (*floorSet, error) {
	f.mu.Lock()
	if n := len(f.free); n > 0 {
		set := f.free[n-1]
		f.free = f.free[:n-1]
		f.mu.Unlock()
		return set, nil
	}
	f.mu.Unlock()
	return f.dial()
}

// put returns a set to the pool.
func (f *floor) put(set *floorSet) {
	f.mu.Lock()
	f.free = append(f.free, set)
	f.mu.Unlock()
}

func (f *floor) LockUnlock(ctx context.Context, key string, ttl time.Duration) error {
	set, err := f.get()
	if err != nil {
		return err
	}
	defer f.put(set)
	if err := set.lock(ctx, key, ttl); err != nil {
		return err
	}
	return set.unlock(ctx)
}

func (f *floor) NewHolder() Holder { return &floorHolder{f: f} }

// Close closes every set, held ones included: call it once every
// operation has returned.
func (f *floor) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, set := range f.all {
		set.close()
	}
	f.all, f.free = nil, nil
	return nil
}

// Pipelined measures floor-pipelined (see floorSet.pipelined) on one set,
// from one goroutine.
func (f *floor) Pipelined(ctx context.Context, prefix string, ttl, d time.Duration) (pairs, failed int64, elapsed time.Duration, err error) {
	set, err := f.get()
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.put(set)
	pairs, failed, elapsed = set.pipelined(ctx, prefix, ttl, d)
	return pairs, failed, elapsed, nil
}

func (f *floor) PipelinedName() string { return nameFloorPipelined }

func (f *floor) PipelinedNote() string {
	return "the masters' capacity, whatever G: one goroutine, one socket per master, batches of 64 SETs then 64 releases, one write per master each"
}

// floorHolder keeps its set from Lock to Unlock.
type floorHolder struct {
	f   *floor
	set *floorSet
}

func (h *floorHolder) Lock(ctx context.Context, key string, ttl time.Duration) error {
	set, err := h.f.get()
	if err != nil {
		return err
	}
	if err := set.lock(ctx, key, ttl); err != nil {
		h.f.put(set)
		return err
	}
	h.set = set
	return nil
}

func (h *floorHolder) Unlock(ctx context.Context) error {
	set := h.set
	if set == nil {
		return errFloorNotHeld
	}
	h.set = nil
	defer h.f.put(set)
	return set.unlock(ctx)
}
