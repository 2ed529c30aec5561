package redistest

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// masterAddr returns what the Sentinel at addr reports as the primary.
func masterAddr(t *testing.T, g *SentinelGroup, addr string) string {
	t.Helper()
	vals, err := Do(addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.MasterName())
	require.NoError(t, err)
	kids := children(vals, 0)
	require.Len(t, kids, 2)
	return net.JoinHostPort(string(vals[kids[0]].Bytes), string(vals[kids[1]].Bytes))
}

// TestSentinelGroup: three Sentinels report the primary of a group with
// two replicas; a killed primary is failed over to a replica; a
// requested failover switches the primary again.
func TestSentinelGroup(t *testing.T) {
	start := time.Now()
	g := StartSentinelGroupT(t, SentinelOptions{Replicas: 2})
	t.Logf("%s sentinel group of 3+3 ready in %v", serverName(t, g.Primary()), time.Since(start).Round(time.Millisecond))

	ok := t.Run("formed", func(t *testing.T) {
		require.Len(t, g.SentinelAddrs(), 3)
		assert.Equal(t, "mymaster", g.MasterName())
		require.Len(t, g.Replicas(), 2)
		for _, a := range g.SentinelAddrs() {
			assert.Equal(t, g.Primary().Addr(), masterAddr(t, g, a), "sentinel %s", a)
			vals, err := Do(a, "SENTINEL", "MASTER", g.MasterName())
			require.NoError(t, err)
			m := fieldsOf(vals, 0)
			assert.Equal(t, "2", m["quorum"])
			assert.Equal(t, "1000", m["down-after-milliseconds"])
			assert.Equal(t, "3000", m["failover-timeout"])
			assert.Equal(t, "2", m["num-slaves"])
			assert.Equal(t, "2", m["num-other-sentinels"])
		}
		for _, r := range g.Replicas() {
			ro, err := roleOf(r.Addr())
			require.NoError(t, err)
			assert.Equal(t, role{"slave", g.Primary().Addr(), "connected"}, ro)
		}
		ro, err := roleOf(g.SentinelAddrs()[0])
		require.NoError(t, err)
		assert.Equal(t, "sentinel", ro.name)
	})
	if !ok {
		return
	}

	ok = t.Run("KillPrimary", func(t *testing.T) {
		killed := g.Primary()
		_, err := Do(killed.Addr(), "SET", "k", "v")
		require.NoError(t, err)
		_, err = Do(killed.Addr(), "WAIT", "2", "5000")
		require.NoError(t, err)
		_, err = g.WaitNewPrimary(50 * time.Millisecond)
		require.ErrorContains(t, err, "still reports "+killed.Addr())
		require.ErrorContains(t, err, "log tail", "a wait that gives up shows the logs")
		start := time.Now()
		g.KillPrimary()
		next, err := g.WaitNewPrimary(20 * time.Second)
		require.NoError(t, err)
		t.Logf("new primary reported by every sentinel %v after the kill", time.Since(start).Round(time.Millisecond))
		assert.Same(t, next, g.Primary())
		assert.NotSame(t, killed, next)
		assert.Contains(t, g.Replicas(), killed)
		for _, a := range g.SentinelAddrs() {
			assert.Equal(t, next.Addr(), masterAddr(t, g, a), "sentinel %s", a)
		}
		vals, err := Do(next.Addr(), "GET", "k")
		require.NoError(t, err)
		assert.Equal(t, "v", string(vals[0].Bytes), "the promoted replica has the key")
		other := g.Replicas()[slices.IndexFunc(g.Replicas(), (*Server).Running)]
		require.Eventually(t, func() bool {
			ro, err := roleOf(other.Addr())
			return err == nil && ro == role{"slave", next.Addr(), "connected"}
		}, 10*time.Second, 20*time.Millisecond, "the other replica follows the new primary")
	})
	if !ok {
		return
	}

	t.Run("Failover", func(t *testing.T) {
		old := g.Primary()
		start := time.Now()
		require.NoError(t, g.Failover())
		t.Logf("failover in %v", time.Since(start).Round(time.Millisecond))
		next := g.Primary()
		assert.NotSame(t, old, next)
		assert.True(t, next.Running())
		for _, a := range g.SentinelAddrs() {
			assert.Equal(t, next.Addr(), masterAddr(t, g, a), "sentinel %s", a)
		}
		ro, err := roleOf(next.Addr())
		require.NoError(t, err)
		assert.Equal(t, "master", ro.name)
		vals, err := Do(next.Addr(), "GET", "k")
		require.NoError(t, err)
		assert.Equal(t, "v", string(vals[0].Bytes))
	})
}

// TestSentinelGroupDefaults: the default group (one replica, three
// Sentinels, quorum 2) fails over on request: the replica becomes the
// primary, the Sentinels report it.
func TestSentinelGroupDefaults(t *testing.T) {
	g := StartSentinelGroupT(t, SentinelOptions{})
	require.Len(t, g.SentinelAddrs(), 3)
	require.Len(t, g.Replicas(), 1)
	old, replica := g.Primary(), g.Replicas()[0]
	vals, err := Do(g.SentinelAddrs()[0], "SENTINEL", "MASTER", "mymaster")
	require.NoError(t, err)
	assert.Equal(t, "2", fieldsOf(vals, 0)["quorum"])
	assert.Equal(t, "1", fieldsOf(vals, 0)["num-slaves"])

	require.NoError(t, g.Failover())
	assert.Same(t, replica, g.Primary())
	assert.Equal(t, []*Server{old}, g.Replicas())
	for _, a := range g.SentinelAddrs() {
		assert.Equal(t, replica.Addr(), masterAddr(t, g, a), "sentinel %s", a)
	}
	// The old primary stays a master until the Sentinels reconfigure it,
	// some seconds later.
	ro, err := roleOf(old.Addr())
	require.NoError(t, err)
	t.Logf("the old primary right after the failover: %s", ro)
}
