package redlock

import (
	"context"
	"time"
)

// Permit is a held permit of a Semaphore: a small value, returned without
// allocation. Copy it freely, but Extend and Release one copy only: Extend
// updates the copy it is called on. The zero Permit holds nothing.
type Permit struct {
	s      *Semaphore
	permit int
	hold
	fence uint64
}

// Fence returns the permit's fencing token with Config.Fencing: strictly
// greater than the token of every earlier holder of the same permit
// (Index) among clients with Config.Fencing, as Lock.Fence is for a key;
// 0 when the Client does not fence. A resource that P holders may use at
// once keeps the highest token accepted per permit index and refuses a
// lower one for that index.
func (p *Permit) Fence() uint64 { return p.fence }

// Semaphore returns the permit's semaphore; nil for the zero Permit.
func (p *Permit) Semaphore() *Semaphore { return p.s }

// Index returns which of the semaphore's permits this is, from 0 to
// Permits-1. No other holder holds the same index at the same time.
func (p *Permit) Index() int { return p.permit }

// Until returns when the permit's validity ends (a monotonic clock
// reading, as Lock.Until).
func (p *Permit) Until() time.Time { return p.until }

// Validity returns how long the permit is still valid; zero or negative
// means it must be taken as lost.
func (p *Permit) Validity() time.Duration {
	if p.s == nil {
		return 0
	}
	return p.validity()
}

// TTL returns the TTL the permit was acquired or last extended with.
func (p *Permit) TTL() time.Duration { return p.ttl }

// Extend resets the permit's TTL to ttl on every master that still holds
// it, as Lock.Extend does, with its results and errors: nil (the validity
// renewed), ErrNotHeld (possibly inside an *Error) when the permit is
// lost, ErrExtendFailed when a quorum could not be reached, or ctx's
// error.
func (p *Permit) Extend(ctx context.Context, ttl time.Duration) error {
	s := p.s
	if s == nil || p.Validity() <= 0 {
		return ErrNotHeld
	}
	h := p.extendOp()
	_, err := s.c.extendHeld(ctx, &h, &p.hold, ttl)
	return err
}

// extendOp is how the permit is extended (by Extend and Do's renewal).
func (p *Permit) extendOp() heldOp {
	s := p.s
	return heldOp{name: s.name, cmd: &cmdSemExtend, keys: s.pair[p.permit][:], arg2: s.permitsArg}
}

// Release gives the permit back on every master and wakes a waiter of
// the semaphore, as Lock.Unlock does (without hand-overs), with its
// results and errors. It is meant for defer: it sends the release even
// when ctx has already ended. Afterwards this Permit, and every copy of
// it, holds nothing.
func (p *Permit) Release(ctx context.Context) error {
	s := p.s
	if s == nil {
		return ErrNotHeld
	}
	h := heldOp{name: s.name, cmd: &cmdSemRelease, keys: s.keys, arg: s.index[p.permit], arg2: flagWake}
	_, err := s.c.releaseHeld(ctx, &h, &p.tok)
	if err != ErrClosed {
		p.until = time.Time{}
	}
	return err
}
