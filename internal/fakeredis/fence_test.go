package fakeredis

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/scripts"
)

// The fencing scripts read TIME from Options.Clock, as TIME does: since
// and now are its seconds and then its microseconds on six digits.
func TestFenceScriptsUseTheClock(t *testing.T) {
	clock := NewManualClock(time.Unix(1700000000, 4000))
	s := StartT(t, Options{Clock: clock})
	c := dial(t, s.Addr())
	require.Equal(t, ":0\r\n", c.do("EVAL", scripts.FenceCheck.Source, "3", fenceKey, fenceRunKey, fenceUnsureKey))
	assert.Equal(t, bulk("1700000000000004"), c.do("HGET", fenceUnsureKey, "since"))
	clock.Advance(1500*time.Millisecond + 990*time.Microsecond)
	assert.Equal(t, "*4\r\n"+bulk("")+bulk("1700000000000004")+bulk("")+bulk("1700000001500994"),
		c.do("EVAL", scripts.FenceState.Source, "2", fenceKey, fenceUnsureKey))
	assert.Equal(t, "*2\r\n"+bulk("1700000001")+bulk("500994"), c.do("TIME"))
}

// scripts.FenceCheck compares the run key with the server's run_id, which
// Restart changes, as a restarted redis-server has a new one.
func TestFenceCheckComparesRunID(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s.Addr())
	check := []string{"EVAL", scripts.FenceCheck.Source, "3", fenceKey, fenceRunKey, fenceUnsureKey}
	first := s.RunID()
	require.Equal(t, ":0\r\n", c.do(check...))
	assert.Equal(t, bulk(first), c.do("GET", fenceRunKey))
	require.Equal(t, ":1\r\n", c.do(check...))
	since := c.do("HGET", fenceUnsureKey, "since")
	require.Regexp(t, `^\$16\r\n[0-9]{16}\r\n$`, since)
	require.Equal(t, ":1\r\n", c.do("EVAL", scripts.FenceRepair.Source, "2", fenceKey, fenceUnsureKey, since[5:21], "10"))
	assert.Equal(t, bulk("10"), c.do("GET", fenceKey))

	s.Restart()
	require.NotEqual(t, first, s.RunID())
	c = dial(t, s.Addr())
	require.Equal(t, ":0\r\n", c.do("EXISTS", fenceKey, fenceRunKey, fenceUnsureKey), "Restart forgets keys")
	require.Equal(t, ":0\r\n", c.do(check...))
	assert.Equal(t, bulk(s.RunID()), c.do("GET", fenceRunKey))
	assert.Regexp(t, `^\*2\r\n\$5\r\nsince\r\n\$16\r\n[0-9]{16}\r\n$`, c.do("HGETALL", fenceUnsureKey))
	require.Equal(t, ":1\r\n", c.do(check...))

	// A run key that names another run_id: the counter becomes stale.
	c.do("SET", fenceKey, "12")
	c.do("SET", fenceRunKey, first)
	require.Equal(t, ":0\r\n", c.do(check...))
	assert.Equal(t, bulk("12"), c.do("HGET", fenceUnsureKey, "stale"))
	assert.Equal(t, ":0\r\n", c.do("EXISTS", fenceKey))
}

// The cluster forms of the fencing scripts (fence_vouch.lua before each)
// make FenceCheck's check at every call, on the counter, run key and
// unsure hash after the script's own keys, against the identity run_id +
// ":" + master_replid: a run key of another node (a slot that moved, a
// failover) or of the standalone form sets the counter aside before the
// script runs, which then finds none.
func TestVouchedScriptsCheckEveryCall(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s.Addr())
	tail := []string{fenceKey, fenceKey, fenceRunKey, fenceUnsureKey}
	lock := func(key, proposal string) string {
		args := append([]string{"EVALSHA", scripts.FenceLockVouched.SHA, "5", key}, tail...)
		return c.do(append(args, "tok", "1000", proposal)...)
	}
	require.Equal(t, bulk(scripts.FenceLockVouched.SHA), c.do("SCRIPT", "LOAD", scripts.FenceLockVouched.Source))
	require.Equal(t, "*1\r\n:1\r\n", lock("a", "5"), "a fresh slot: no counter it vouches for")
	id := s.RunID() + ":" + s.RunID() // the fake's master_replid is its run_id
	assert.Equal(t, bulk(id), c.do("GET", fenceRunKey))
	since := c.do("HGET", fenceUnsureKey, "since")
	require.Regexp(t, `^\$16\r\n[0-9]{16}\r\n$`, since)
	repair := append([]string{"EVAL", scripts.FenceRepairVouched.Source, "5", fenceKey, fenceUnsureKey}, tail[1:]...)
	require.Equal(t, ":1\r\n", c.do(append(repair, since[5:21], "10")...))
	require.Equal(t, "*2\r\n:1\r\n"+bulk("10"), lock("b", "20"), "vouched: read, then raised")
	assert.Equal(t, bulk("20"), c.do("GET", fenceKey))

	for _, other := range []string{"someone-else:replid", s.RunID()} {
		c.do("SET", fenceRunKey, other)
		require.Equal(t, "*1\r\n:1\r\n", lock("c"+other, "30"), "run key %q: set aside", other)
		assert.Equal(t, bulk("20"), c.do("HGET", fenceUnsureKey, "stale"))
		assert.Equal(t, ":0\r\n", c.do("EXISTS", fenceKey))
		assert.Equal(t, bulk(id), c.do("GET", fenceRunKey))
	}
	// Fewer keys than the check's three: Lua's error for a nil key.
	assert.Contains(t, c.do("EVAL", scripts.FenceStateVouched.Source, "2", fenceKey, fenceUnsureKey), "ERR")
}

func TestLuaToNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true},
		{"9007199254740993", 1 << 53, true},
		{" \t12\r\n", 12, true},
		{"12\x00junk", 12, true},
		{"-0x1.8p1", -3, true},
		{"0x10", 16, true},
		{"1e400", math.Inf(1), true},
		{"-inf", math.Inf(-1), true},
		{".5", 0.5, true},
		{"5.", 5, true},
		{"", 0, false},
		{" ", 0, false},
		{"1_0", 0, false},
		{"0x", 0, false},
		{"1e", 0, false},
		{"12 3", 0, false},
		{"infinit", 0, false},
		{"nan(", 0, false},
	} {
		n := luaToNumber([]byte(tc.in))
		assert.Equal(t, tc.ok, n.ok, "%q", tc.in)
		if tc.ok {
			assert.Equal(t, tc.want, n.f, "%q", tc.in)
		}
	}
	for _, in := range []string{"nan", "-NAN", "nan(1_a)"} {
		n := luaToNumber([]byte(in))
		assert.True(t, n.ok && math.IsNaN(n.f), "%q", in)
	}
}

func TestAppendLuaTime(t *testing.T) {
	for _, tc := range []struct {
		ns   int64
		want string
	}{
		{0, "1700000000000000"},
		{1000, "1700000000000001"},
		{99999000, "1700000000099999"},
		{100000000, "1700000000100000"},
		{999999999, "1700000000999999"},
	} {
		assert.Equal(t, tc.want, string(appendLuaTime(nil, time.Unix(1700000000, tc.ns))))
	}
}
