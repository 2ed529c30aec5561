package redlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResume: a lock taken by one Client is extended and released by
// another that resumes it from its key, token and validity; a third can
// then take it. A wrong token extends and releases nothing, a malformed
// one is refused, and an unknown validity leaves only Unlock.
func TestResume(t *testing.T) {
	servers := masters(t, 3)
	a := client(t, servers, Config{})
	b := client(t, servers, Config{})
	third := client(t, servers, Config{})
	const key = "resume:k"

	l, err := a.Lock(bg, key, 10*time.Second)
	require.NoError(t, err)
	tok, until := l.Token(), time.Now().Add(l.Validity())
	require.Len(t, tok, 32)

	for _, bad := range []string{"", "xyz", tok[:31], tok + "0", "ABCDEF0123456789ABCDEF0123456789", "g" + tok[1:]} {
		_, err := b.Resume(key, bad, until)
		require.ErrorIs(t, err, ErrBadToken, "%q", bad)
	}

	other := newToken()
	wrong, err := b.Resume(key, string(other[:]), until)
	require.NoError(t, err)
	require.ErrorIs(t, wrong.Extend(bg, 10*time.Second), ErrNotHeld, "a wrong token extends nothing")
	require.ErrorIs(t, wrong.Unlock(bg), ErrNotHeld, "a wrong token releases nothing")
	_, err = third.TryLock(bg, key, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "the lock is still held")

	r, err := b.Resume(key, tok, until)
	require.NoError(t, err)
	assert.Equal(t, key, r.Key())
	assert.Equal(t, tok, r.Token())
	assert.Positive(t, r.Validity())
	assert.LessOrEqual(t, r.Validity(), 10*time.Second)
	require.NoError(t, r.Extend(bg, 10*time.Second))
	assert.Equal(t, 10*time.Second, r.TTL())
	_, err = third.TryLock(bg, key, time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "the resumed lock still excludes")
	require.NoError(t, r.Unlock(bg))

	l3, err := third.TryLock(bg, key, time.Second)
	require.NoError(t, err, "released by the resumed lock")
	require.ErrorIs(t, l.Unlock(bg), ErrNotHeld, "the original holder's copy no longer holds it")

	// Validity unknown: no Extend, but Unlock releases.
	r3, err := a.Resume(key, l3.Token(), time.Time{})
	require.NoError(t, err)
	assert.LessOrEqual(t, r3.Validity(), time.Duration(0))
	require.ErrorIs(t, r3.Extend(bg, time.Second), ErrNotHeld)
	require.NoError(t, r3.Unlock(bg))
	_, err = b.TryLock(bg, key, time.Second)
	require.NoError(t, err)

	var zero Lock
	assert.Empty(t, zero.Token())
}
