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
	spec lockSpec // the writer's attempts
}

// RWMutex returns the read-write lock called name. On each master it is
// the keys name (the writer's: do not Lock it as a plain lock too),
// name+":readers" and name+":intent".
func (c *Client) RWMutex(name string) (*RWMutex, error) {
	rw := &RWMutex{c: c, name: name, keys: []string{name, name + ":readers", name + ":intent"}}
	rw.spec = lockSpec{cmd: &cmdRWLock, fenced: &cmdRWLockFenced, keys: rw.keys}
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
	if err := rw.c.checkTTL(ttl); err != nil {
		return Lock{}, err
	}
	return rw.c.acquire(ctx, rw.name, nil, &rw.spec, ttl, 1)
}

// Lock takes the write lock for ttl, waiting while a writer or readers
// hold it, as Client.Lock waits (woken by the writer's release, or by each
// reader's). Errors are those of Client.Lock.
func (rw *RWMutex) Lock(ctx context.Context, ttl time.Duration) (Lock, error) {
	if err := rw.c.checkTTL(ttl); err != nil {
		return Lock{}, err
	}
	return rw.c.acquire(ctx, rw.name, nil, &rw.spec, ttl, rw.c.cfg.Tries)
}

// DoWrite is Client.Do for the write lock: it takes it as Lock does, runs
// fn while the Client's renewer keeps it extended, and releases it.
func (rw *RWMutex) DoWrite(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return rw.c.do(ctx, rw.name, nil, &rw.spec, ttl, fn)
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

// DoRead takes a read lock (as RLock does), runs fn while keeping it
// extended, and releases it, as Semaphore.Do does for a permit.
func (rw *RWMutex) DoRead(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return rw.c.doHold(ctx, rw.name, ttl, fn, func(ctx context.Context) (heldValue, error) {
		r, err := rw.RLock(ctx, ttl)
		return &r, err
	})
}

func (rw *RWMutex) rlock(ctx context.Context, ttl time.Duration, tries int) (ReadLock, error) {
	c := rw.c
	o := c.getOp()
	defer c.putOp(o)
	tok, until, err := c.acquireHold(ctx, o, (*rwReader)(rw), ttl, tries)
	if err != nil {
		return ReadLock{}, err
	}
	return ReadLock{rw: rw, tok: tok, ttl: ttl, until: until}, nil
}

// rwReader is the RWMutex as a holdKind: its readers' attempts.
type rwReader RWMutex

func (r *rwReader) holdName() string { return r.name }
func (r *rwReader) shared() bool     { return true }

func (r *rwReader) attemptHold(o *op, ttl time.Duration, done <-chan struct{}) (br burstResult, until time.Time, ok bool) {
	o.encode(&cmdRWRLock, r.name, r.keys, &o.holdTok, o.ttlArg(ttl), nil, nil)
	br = o.run(done)
	o.report(OpLock)
	until = r.c.validUntil(br.start, ttl)
	return br, until, !br.cancelled && br.ok >= r.c.quorum && time.Now().Before(until)
}

// releaseHold removes a failed attempt's reader from every master that
// may hold it. The release publishes (scripts.RWRUnlock always does):
// waiters woken by it find the lock as it was, and wait again.
func (r *rwReader) releaseHold(o *op, _ bool) {
	o.encode(&cmdRWRUnlock, r.name, r.keys, &o.holdTok, nil, nil, nil)
	o.sendForget(true)
}

func (r *rwReader) refused(o *op) error {
	if o.mismatched() {
		return ErrWrongKind
	}
	return nil
}

func (r *rwReader) freeOnQuorum(*op) bool { return false }
