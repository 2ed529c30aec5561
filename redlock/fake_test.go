package redlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
)

// fakeMasters starts n fake masters whose clocks say they have been up an
// hour, so the restart guard lets them vote.
func fakeMasters(t *testing.T, n int) ([]*fakeredis.Server, []string) {
	t.Helper()
	servers := make([]*fakeredis.Server, n)
	addrs := make([]string, n)
	for i := range servers {
		clock := fakeredis.NewManualClock(time.Now())
		servers[i] = fakeredis.StartT(t, fakeredis.Options{Clock: clock})
		clock.Advance(time.Hour)
		addrs[i] = servers[i].Addr()
	}
	return servers, addrs
}

func fakeClient(t *testing.T, addrs []string, cfg Config) *Client {
	t.Helper()
	cfg.Addrs = addrs
	cfg.Conn.ReconnectMin, cfg.Conn.ReconnectMax = time.Millisecond, 5*time.Millisecond
	c, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// A lock costs the quorum's latency, not the slowest master's.
func TestSlowMasterDoesNotSlowLock(t *testing.T) {
	servers, addrs := fakeMasters(t, 5)
	c := fakeClient(t, addrs, Config{NodeTimeout: 5 * time.Second})
	servers[4].SetFault("*", fakeredis.Fault{Latency: 500 * time.Millisecond})
	start := time.Now()
	for range 3 {
		l, err := c.TryLock(bg, "k", 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(bg))
	}
	assert.Less(t, time.Since(start), 500*time.Millisecond, "three locks waited for the slow master")
}

func TestGarbageFromOneMaster(t *testing.T) {
	servers, addrs := fakeMasters(t, 5)
	c := fakeClient(t, addrs, Config{})
	servers[0].SetFault("SET", fakeredis.Fault{Raw: []byte("?garbage\r\n")})
	l, err := c.TryLock(bg, "k", 10*time.Second)
	require.NoError(t, err, "one lying master must not stop a lock")
	require.NoError(t, l.Unlock(bg))
}

func TestNoScriptFallsBackToEval(t *testing.T) {
	servers, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{})
	l, err := c.TryLock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	for _, s := range servers {
		s.SetFault("EVALSHA", fakeredis.Fault{NoScript: true, Times: 1})
	}
	require.NoError(t, l.Extend(bg, 10*time.Second))
	for _, s := range servers {
		s.SetFault("EVALSHA", fakeredis.Fault{NoScript: true, Times: 1})
	}
	require.NoError(t, l.Unlock(bg))
	// Unlock returns at quorum; the last release may still be on its way.
	for _, s := range servers {
		require.Eventually(t, func() bool { return s.Keys() == 0 }, 5*time.Second, time.Millisecond,
			"unlock left the key on %s", s.Addr())
	}
}

func TestHungMajorityBoundedByNodeTimeout(t *testing.T) {
	servers, addrs := fakeMasters(t, 5)
	c := fakeClient(t, addrs, Config{NodeTimeout: 100 * time.Millisecond})
	for _, s := range servers[:3] {
		s.SetFault("*", fakeredis.Fault{Hang: true})
	}
	start := time.Now()
	_, err := c.TryLock(bg, "k", 10*time.Second)
	elapsed := time.Since(start)
	require.ErrorIs(t, err, ErrNotAcquired)
	var le *Error
	require.ErrorAs(t, err, &le)
	assert.Equal(t, OutcomeTimeout, le.Nodes[0].Outcome)
	assert.GreaterOrEqual(t, elapsed, 100*time.Millisecond)
	assert.Less(t, elapsed, 2*time.Second, "a hung majority must cost NodeTimeout, not more")
	// The two healthy masters got the release: nothing of ours is left there.
	require.Eventually(t, func() bool { return servers[3].Keys() == 0 && servers[4].Keys() == 0 }, 5*time.Second, time.Millisecond)
}

func TestRestartGuardOnFakeMasters(t *testing.T) {
	servers, addrs := fakeMasters(t, 3)
	a := fakeClient(t, addrs, Config{MaxTTL: 10 * time.Second})
	b := fakeClient(t, addrs, Config{MaxTTL: 10 * time.Second})
	_, err := a.TryLock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	servers[0].Restart() // forgets the key, uptime back to 0
	servers[1].Restart()
	require.Eventually(t, func() bool {
		m := b.Masters()
		return m[0].Err == nil && m[1].Err == nil && m[0].Info.Generation == 2 && m[1].Info.Generation == 2
	}, 5*time.Second, time.Millisecond)
	_, err = b.TryLock(bg, "k", 10*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "two holders: the guard let restarted masters vote")
	guardedNode(t, err)
}
