package torture

import (
	"context"
	"sync"
	"time"

	"github.com/volleylock/volley/redlock"
)

// Read-write locks under torture (Config.ReadShare): every key is a
// read-write lock, a round takes its read lock or its write lock, and the
// checker lets read locks overlap each other, never a write lock.

// RWLocker is a Locker of read-write locks: Lock takes a key's write
// lock, RLock its read lock.
type RWLocker interface {
	Locker
	RLock(ctx context.Context, key string, ttl time.Duration) (Held, error)
}

// rwLocker takes redlock RWMutex locks. With broken, its read locks are
// a semaphore's permits of a name of their own: they never see the
// writer, as a read lock that forgot to check for one would (the broken
// variant the checker must catch).
type rwLocker struct {
	*redlockLocker
	broken bool
	mu     sync.Mutex
	rws    map[string]*redlock.RWMutex
	sems   map[string]*redlock.Semaphore
}

// NewRWLocker returns an RWLocker of redlock RWMutexes on a
// redlock.Client made as NewRedlockLocker makes it.
func NewRWLocker(cfg redlock.Config) (RWLocker, error) { return newRWLocker(cfg, false) }

// NewBrokenRWLocker returns an RWLocker whose read locks do not see the
// writer (see rwLocker).
func NewBrokenRWLocker(cfg redlock.Config) (RWLocker, error) { return newRWLocker(cfg, true) }

func newRWLocker(cfg redlock.Config, broken bool) (RWLocker, error) {
	lk, err := NewRedlockLocker(cfg)
	if err != nil {
		return nil, err
	}
	return &rwLocker{redlockLocker: lk.(*redlockLocker), broken: broken, rws: map[string]*redlock.RWMutex{}, sems: map[string]*redlock.Semaphore{}}, nil
}

func (l *rwLocker) rw(key string) (*redlock.RWMutex, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rw := l.rws[key]; rw != nil {
		return rw, nil
	}
	rw, err := l.c.RWMutex(key)
	if err != nil {
		return nil, err
	}
	l.rws[key] = rw
	return rw, nil
}

func (l *rwLocker) Lock(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	rw, err := l.rw(key)
	if err != nil {
		return nil, err
	}
	h := &redlockHeld{drift: l.drift}
	lock, err := rw.Lock(context.WithValue(ctx, votesKey{}, &h.lockVotes), ttl)
	if err != nil {
		return nil, err
	}
	h.l = lock
	return h, nil
}

func (l *rwLocker) RLock(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	if l.broken {
		l.mu.Lock()
		sem := l.sems[key]
		if sem == nil {
			var err error
			if sem, err = l.c.Semaphore(key+":broken-readers", redlock.MaxPermits); err != nil {
				l.mu.Unlock()
				return nil, err
			}
			l.sems[key] = sem
		}
		l.mu.Unlock()
		h := &permitHeld{drift: l.drift}
		p, err := sem.Acquire(context.WithValue(ctx, votesKey{}, &h.lockVotes), ttl)
		if err != nil {
			return nil, err
		}
		h.p = p
		return h, nil
	}
	rw, err := l.rw(key)
	if err != nil {
		return nil, err
	}
	h := &readHeld{drift: l.drift}
	r, err := rw.RLock(context.WithValue(ctx, votesKey{}, &h.lockVotes), ttl)
	if err != nil {
		return nil, err
	}
	h.r = r
	return h, nil
}

func (l *rwLocker) LockMulti(context.Context, []string, time.Duration) (Held, error) {
	return nil, errNoMulti
}

// readHeld is a redlock ReadLock.
type readHeld struct {
	r           redlock.ReadLock
	drift       float64
	lockVotes   string
	extendVotes string
}

// Started recovers the burst's start from the validity, as
// redlockHeld.Started does.
func (h *readHeld) Started() time.Time {
	ttl := h.r.TTL()
	return h.r.Until().Add(-(ttl - time.Duration(float64(ttl)*h.drift) - 2*time.Millisecond))
}
func (h *readHeld) Until() time.Time { return h.r.Until() }
func (h *readHeld) Extend(ctx context.Context, ttl time.Duration) error {
	var votes string
	err := h.r.Extend(context.WithValue(ctx, votesKey{}, &votes), ttl)
	if err == nil {
		h.extendVotes = votes
	}
	return err
}
func (h *readHeld) Votes() string {
	if h.extendVotes == "" {
		return "read lock: " + h.lockVotes
	}
	return "read lock: " + h.lockVotes + "; latest extend: " + h.extendVotes
}
func (h *readHeld) Unlock(ctx context.Context) error { return h.r.Unlock(ctx) }
func (h *readHeld) Fence() uint64                    { return 0 }
