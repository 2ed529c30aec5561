package redlock

import (
	"context"
	"time"
)

// RWMutex is a read-write lock over the Client's masters: many readers at
// once, or one writer, never both (see "Read-write locks" in the package
// documentation). A writer holds a Lock of the name, extended and released
// as any Lock; a reader holds a ReadLock. Writers are not starved by a
// stream of readers: a writer that finds readers marks the name on the
// masters (its intent, which lasts its TTL from its latest attempt), and
// from then on new readers wait until a writer has taken and released it.
//
// An RWMutex is made once (Client.RWMutex) and shared: it is safe for
// concurrent use, holds no connection and needs no closing; it is valid as
// long as its Client.
type RWMutex struct {
	c    *Client
	name string
	// keys are the writer's key (the name), the readers' and the
	// intent's, as every script of the read-write lock takes them.
	keys []string
}

// RWMutex returns the read-write lock called name. On each master it is
// the keys name (the writer's: do not Lock it as a plain lock too),
// name+":readers" and name+":intent".
func (c *Client) RWMutex(name string) (*RWMutex, error) {
	rw := &RWMutex{c: c, name: name, keys: []string{name, name + ":readers", name + ":intent"}}
	if err := c.checkKeys(name, rw.keys); err != nil {
		return nil, err
	}
	return rw, nil
}

// Name returns the read-write lock's name.
func (rw *RWMutex) Name() string { return rw.name }

// TryLock makes one attempt to take the write lock for ttl: it fails, as
// TryLock on a taken key does, while a writer or a reader holds it. The
// Lock it returns is extended (Extend, or DoWrite's renewal) and released
// (Unlock) as any Lock; with Config.Fencing it carries a fencing token
// (Lock.Fence), as a Lock of the name would.
func (rw *RWMutex) TryLock(ctx context.Context, ttl time.Duration) (Lock, error) {
	return rw.lock(ctx, ttl, 1)
}

// Lock takes the write lock for ttl, waiting while a writer or readers
// hold it, as Client.Lock waits (woken by the writer's release, or by each
// reader's). Errors are those of Client.Lock.
func (rw *RWMutex) Lock(ctx context.Context, ttl time.Duration) (Lock, error) {
	return rw.lock(ctx, ttl, rw.c.cfg.Tries)
}

// TryRLock makes one attempt to take a read lock for ttl: it fails with
// ErrNotAcquired (as TryLock does) while a writer holds the lock or waits
// for readers to leave.
func (rw *RWMutex) TryRLock(ctx context.Context, ttl time.Duration) (ReadLock, error) {
	return rw.rlock(ctx, ttl, 1)
}

// RLock takes a read lock for ttl, waiting while a writer holds the lock
// or waits for it; the writer's release wakes every reader of this Client
// that waits for it. Errors are those of Client.Lock.
func (rw *RWMutex) RLock(ctx context.Context, ttl time.Duration) (ReadLock, error) {
	return rw.rlock(ctx, ttl, rw.c.cfg.Tries)
}

// lock takes the write lock by the acquire loop.
func (rw *RWMutex) lock(ctx context.Context, ttl time.Duration, tries int) (Lock, error) {
	c := rw.c
	if err := c.checkTTL(ttl); err != nil {
		return Lock{}, err
	}
	o := c.getOp()
	defer c.putOp(o)
	got, err := c.acquire(ctx, o, (*rwWriter)(rw), ttl, tries)
	if err != nil {
		return Lock{}, err
	}
	return c.held(o, got, rw.name, nil, ttl), nil
}

func (rw *RWMutex) rlock(ctx context.Context, ttl time.Duration, tries int) (ReadLock, error) {
	c := rw.c
	if err := c.checkTTL(ttl); err != nil {
		return ReadLock{}, err
	}
	o := c.getOp()
	defer c.putOp(o)
	got, err := c.acquire(ctx, o, (*rwReader)(rw), ttl, tries)
	if err != nil {
		return ReadLock{}, err
	}
	return ReadLock{rw: rw, hold: hold{tok: o.tok, ttl: ttl, until: got.until}}, nil
}

// rwWriter is the RWMutex as a kind (see acquire): its writer's attempts.
// The lock it takes is a Lock of the name, extended and released as any.
type rwWriter RWMutex

// traits: a writer waits as a Lock of its name does, and may be handed
// the lock by an Unlock of the name in this Client.
func (w *rwWriter) traits() kindTraits {
	return kindTraits{name: w.name, wrongKind: ErrWrongKind, exclusive: true}
}

// attempt runs scripts.RWLock, which also looks at the readers' and the
// intent's keys; fenced as a Lock's attempt is.
func (w *rwWriter) attempt(o *call, ttl time.Duration, done <-chan struct{}) (burstResult, taken, bool) {
	fenced := o.c.cfg.Fencing
	cmd := &cmdRWLock
	if fenced {
		cmd = &cmdRWLockFenced
	}
	a := args{key: w.name, keys: w.keys, tok: &o.tok, arg: o.ttlArg(ttl), arg2: flag(o.waiting)}
	return o.c.rounds(o, cmd, a, fenced, w.name, nil, ttl, done)
}

func (w *rwWriter) releaseFailed(o *call, wake bool) {
	o.releaseAfterFailure(w.name, nil, &o.tok, wake)
}

// rwReader is the RWMutex as a kind: its readers' attempts.
type rwReader RWMutex

// traits: readers share the name; a taken answer names the writer, but
// a reader waits for any release of the name (a writer's or a
// reader's), bounded by the retry delay.
func (r *rwReader) traits() kindTraits {
	return kindTraits{name: r.name, wrongKind: ErrWrongKind, shared: true}
}

// attempt: a reader is never fenced. One that waits marks a taken name
// for its release (see scripts.ListenSuffix).
func (r *rwReader) attempt(o *call, ttl time.Duration, done <-chan struct{}) (burstResult, taken, bool) {
	a := args{key: r.name, keys: r.keys, tok: &o.tok, arg: o.ttlArg(ttl), arg2: flag(o.waiting)}
	return o.c.rounds(o, &cmdRWRLock, a, false, "", nil, ttl, done)
}

// releaseFailed removes a failed attempt's reader from every master that
// may hold it. The release publishes (scripts.RWRUnlock always does):
// waiters woken by it find the lock as it was, and wait again.
func (r *rwReader) releaseFailed(o *call, _ bool) {
	o.encode(&cmdRWRUnlock, args{key: r.name, keys: r.keys, tok: &o.tok})
	o.sendForget(true)
}
