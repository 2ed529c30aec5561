package fakeredis_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/redlock"
)

// TestFencingOnFakeMasters runs a fencing redlock.Client on three fake
// masters, end to end: tokens grow; a master that restarts (a new run_id,
// no keys) is set aside by its handshake's scripts.FenceCheck; and once its
// clock says it has been unsure for longer than the repair's wait, a
// repair gives it its counter back.
func TestFencingOnFakeMasters(t *testing.T) {
	ctx := context.Background()
	servers := make([]*fakeredis.Server, 3)
	clocks := make([]*fakeredis.ManualClock, 3)
	addrs := make([]string, 3)
	for i := range servers {
		clocks[i] = fakeredis.NewManualClock(time.Now())
		servers[i] = fakeredis.StartT(t, fakeredis.Options{Clock: clocks[i]})
		clocks[i].Advance(time.Hour) // up for an hour: the restart guard lets it vote
		addrs[i] = servers[i].Addr()
	}
	c, err := redlock.New(ctx, redlock.Config{
		Addrs: addrs, Fencing: true, MaxTTL: 300 * time.Millisecond,
		Conn: redlock.Connection{ReconnectMin: time.Millisecond, ReconnectMax: 5 * time.Millisecond},
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	counter := func(s *fakeredis.Server) (uint64, bool) {
		v, _, ok := s.Lookup("volley:fence")
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseUint(v, 10, 64)
		return n, err == nil
	}
	for i, s := range servers {
		_, ok := counter(s)
		require.True(t, ok, "New gives fresh master %d a counter", i)
	}
	var last uint64
	// lock takes and releases a lock, and checks its token: larger than
	// the last one, and on a quorum of masters. It runs in Eventually's
	// goroutine too, so it reports rather than fails.
	lock := func() error {
		l, err := c.TryLock(ctx, "k", 200*time.Millisecond)
		if err != nil {
			return err
		}
		assert.Greater(t, l.Fence(), last)
		last = l.Fence()
		n := 0
		for _, s := range servers {
			if v, ok := counter(s); ok && v == last {
				n++
			}
		}
		assert.GreaterOrEqual(t, n, 2, "a quorum holds token %d", last)
		return l.Unlock(ctx)
	}
	for range 5 {
		require.NoError(t, lock())
	}

	first := servers[0].RunID()
	servers[0].Restart()
	require.NotEqual(t, first, servers[0].RunID())
	// The Client reconnects, and its handshake leaves the run key and the
	// unsure hash.
	require.Eventually(t, func() bool { return servers[0].Keys() == 2 }, 10*time.Second, time.Millisecond)
	_, ok := counter(servers[0])
	require.False(t, ok)
	for range 3 {
		require.NoError(t, lock(), "masters 1 and 2 vouch for their counters")
	}
	_, ok = counter(servers[0])
	require.False(t, ok, "master 0's clock has not moved: it is unsure for no time yet")

	clocks[0].Advance(time.Hour)
	require.Eventually(t, func() bool {
		if lock() != nil {
			return false
		}
		_, ok := counter(servers[0])
		return ok
	}, 10*time.Second, 10*time.Millisecond, "a lock's background repair gives master 0 a counter")
	require.NoError(t, lock())
	// The lock returned at a quorum; master 0 may answer just after.
	assert.Eventually(t, func() bool {
		v, _ := counter(servers[0])
		return v == last
	}, 10*time.Second, time.Millisecond, "master 0 takes the tokens again")
}
