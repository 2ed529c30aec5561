//go:build !race

package redlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAllocs pins the steady-state allocations of the lock operations on
// five real masters: zero, on success and on a plain "taken" failure.
func TestAllocs(t *testing.T) {
	servers := masters(t, 5)
	c := client(t, servers, Config{NodeTimeout: time.Second})
	other := client(t, servers, Config{NodeTimeout: time.Second})
	const ttl = 10 * time.Second

	lockUnlock := func() {
		l, err := c.TryLock(bg, "alloc", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	lockUnlock() // warm up pools and buffers
	require.Zero(t, testing.AllocsPerRun(200, lockUnlock), "TryLock+Unlock")

	held, err := c.TryLock(bg, "alloc", ttl)
	require.NoError(t, err)
	extend := func() {
		if err := held.Extend(bg, ttl); err != nil {
			t.Fatal(err)
		}
	}
	extend()
	require.Zero(t, testing.AllocsPerRun(200, extend), "Extend")

	taken := func() {
		if _, err := other.TryLock(bg, "alloc", ttl); err != ErrNotAcquired {
			t.Fatal(err)
		}
	}
	taken()
	require.Zero(t, testing.AllocsPerRun(200, taken), "TryLock on a taken key")
	require.NoError(t, held.Unlock(bg))

	keys := []string{"alloc:d", "alloc:b", "alloc:c", "alloc:a"}
	lockUnlockMulti := func() {
		l, err := c.TryLockMulti(bg, keys, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	lockUnlockMulti()
	require.Zero(t, testing.AllocsPerRun(200, lockUnlockMulti), "TryLockMulti+Unlock of 4 keys")

	heldMulti, err := c.TryLockMulti(bg, keys, ttl)
	require.NoError(t, err)
	extendMulti := func() {
		if err := heldMulti.Extend(bg, ttl); err != nil {
			t.Fatal(err)
		}
	}
	extendMulti()
	require.Zero(t, testing.AllocsPerRun(200, extendMulti), "Extend of 4 keys")
	takenMulti := func() {
		if _, err := other.TryLockMulti(bg, keys, ttl); err != ErrNotAcquired {
			t.Fatal(err)
		}
	}
	takenMulti()
	require.Zero(t, testing.AllocsPerRun(200, takenMulti), "TryLockMulti on taken keys")
	require.NoError(t, heldMulti.Unlock(bg))
}
