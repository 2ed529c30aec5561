package redlock

import (
	"context"
	"time"
)

// ReadLock is a held read lock of an RWMutex: a small value, returned
// without allocation. Copy it freely, but Extend and Unlock one copy only:
// Extend updates the copy it is called on. The zero ReadLock holds
// nothing.
type ReadLock struct {
	rw *RWMutex
	hold
}

// RWMutex returns the read lock's RWMutex; nil for the zero ReadLock.
func (r *ReadLock) RWMutex() *RWMutex { return r.rw }

// Until returns when the read lock's validity ends (a monotonic clock
// reading, as Lock.Until).
func (r *ReadLock) Until() time.Time { return r.until }

// Validity returns how long the read lock is still valid; zero or negative
// means it must be taken as lost.
func (r *ReadLock) Validity() time.Duration {
	if r.rw == nil {
		return 0
	}
	return r.validity()
}

// TTL returns the TTL the read lock was acquired or last extended with.
func (r *ReadLock) TTL() time.Duration { return r.ttl }

// Extend resets the read lock's TTL to ttl on every master that still
// holds it, with Lock.Extend's results and errors.
func (r *ReadLock) Extend(ctx context.Context, ttl time.Duration) error {
	rw := r.rw
	if rw == nil || r.Validity() <= 0 {
		return ErrNotHeld
	}
	h := r.extendOp()
	_, err := rw.c.extendHeld(ctx, &h, &r.hold, ttl)
	return err
}

// extendOp is how the read lock is extended (by Extend and DoRead's
// renewal).
func (r *ReadLock) extendOp() heldOp {
	return heldOp{name: r.rw.name, cmd: &cmdRWRExtend, keys: r.rw.keys}
}

// Unlock releases the read lock on every master, with Lock.Unlock's
// results and errors (without hand-overs); each reader's release wakes a
// writer that waits. It is meant for defer: it sends the release even
// when ctx has already ended.
func (r *ReadLock) Unlock(ctx context.Context) error {
	rw := r.rw
	if rw == nil {
		return ErrNotHeld
	}
	h := heldOp{name: rw.name, cmd: &cmdRWRUnlock, keys: rw.keys}
	_, err := rw.c.releaseHeld(ctx, &h, &r.tok)
	if err != ErrClosed {
		r.until = time.Time{}
	}
	return err
}
