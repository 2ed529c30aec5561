package redlock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// MaxKeys is the most keys one lock may cover (see LockMulti). Each master
// runs the lock script over every key at once, blocking its other clients
// for that long: a few thousand keys already take about a millisecond.
const MaxKeys = 1024

// ErrNoKeys is returned by LockMulti, TryLockMulti and DoMulti when given
// no key. It matches ErrConfig.
var ErrNoKeys = invalidf("no key to lock")

// keySet is a multi-key lock's keys, sorted and deduplicated. A Lock owns
// its keySet from LockMulti until Unlock, which returns it to keySets: so
// that a steady stream of locks on the same number of keys allocates
// nothing.
type keySet struct{ keys []string }

var keySets = sync.Pool{New: func() any { return new(keySet) }}

// release returns ks to the pool; no one may use it afterwards.
func (ks *keySet) release() {
	clear(ks.keys) // drop the strings for the GC
	ks.keys = ks.keys[:0]
	keySets.Put(ks)
}

// releaseKeys gives a multi-key lock's keys back once it is unlocked. The
// Lock then holds nothing: a second Unlock returns ErrNotHeld.
func (l *Lock) releaseKeys() {
	if l.keys != nil {
		l.keys.release()
		l.keys = nil
		l.c = nil
	}
}

// TryLockMulti makes one attempt to acquire all of keys, or none, for ttl:
// see LockMulti. Errors are those of TryLock.
func (c *Client) TryLockMulti(ctx context.Context, keys []string, ttl time.Duration) (Lock, error) {
	return c.lockMulti(ctx, keys, ttl, 1)
}

// LockMulti acquires all of keys, or none, for ttl, retrying as Lock does.
// The result is one Lock: Extend and Unlock act on every key, and Validity,
// Until and Do's renewal mean what they do for a single key.
//
// On each master one script sets every key to the lock's token only if
// none of them exists, atomically; the quorum counts masters where the
// script set them all, in one burst, so a multi-key lock costs what a
// single one does plus the script's work per key. The keys are sorted and
// deduplicated first (keys itself is not modified); overlapping sets from
// different callers therefore contend like single keys do and cannot
// deadlock, since nobody ever holds part of a set. Between 1 and MaxKeys
// distinct keys are allowed. Hooks and errors name the first key in sorted
// order.
func (c *Client) LockMulti(ctx context.Context, keys []string, ttl time.Duration) (Lock, error) {
	return c.lockMulti(ctx, keys, ttl, c.cfg.Tries)
}

func (c *Client) lockMulti(ctx context.Context, keys []string, ttl time.Duration, tries int) (Lock, error) {
	if err := c.checkTTL(ttl); err != nil {
		return Lock{}, err
	}
	if len(keys) == 0 {
		return Lock{}, ErrNoKeys
	}
	ks := keySets.Get().(*keySet)
	ks.keys = append(ks.keys[:0], keys...)
	slices.Sort(ks.keys)
	ks.keys = slices.Compact(ks.keys)
	if n := len(ks.keys); n > MaxKeys {
		ks.release()
		return Lock{}, invalidf("%d keys in one lock: at most MaxKeys (%d)", n, MaxKeys)
	}
	if err := c.sameTag(ks.keys); err != nil {
		ks.release()
		return Lock{}, err
	}
	if len(ks.keys) == 1 {
		// One distinct key: the plain lock, whose SET is cheaper than a script.
		key := ks.keys[0]
		ks.release()
		return c.lock(ctx, key, nil, ttl, tries)
	}
	return c.lock(ctx, ks.keys[0], ks, ttl, tries)
}
