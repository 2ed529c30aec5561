package fakeredis

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/scripts"
)

// TestHandoverScript runs scripts.Handover in every branch: a key that holds
// ARGV[1] passes to ARGV[2] with a TTL of ARGV[3] milliseconds; a key that
// does not, or a call that fails, leaves the key as it was, value and TTL;
// a missing key is never created; and nothing is published.
func TestHandoverScript(t *testing.T) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s := StartT(t, Options{Clock: clock})
	c, sub := dial(t, s.Addr()), dial(t, s.Addr())
	shardNS.subscribe(t, sub, releasedChannelPrefix+"lock")
	sha := c.do("SCRIPT", "LOAD", scripts.Handover.Source)
	require.Equal(t, bulk("d4160f47a1c25cd522db0ba7856ed9ce8358991e"), sha, "the SHA-1 Redis 7.0.15 gives it")
	sha = sha[len("$40\r\n") : len(sha)-2]
	require.Equal(t, "*1\r\n:1\r\n", c.do("SCRIPT", "EXISTS", sha))
	scriptErr := func(msg string) string { return "-" + msg + " script: " + sha + ", on @user_script:1.\r\n" }

	require.Equal(t, "+OK\r\n", c.do("SET", "lock", "tok", "PX", "1000"))
	require.Equal(t, ":1\r\n", c.do("HSET", "h", "f", "tok"))
	for _, tc := range []struct {
		name string
		args []string // numkeys, KEYS and ARGV
		want string
	}{
		{"another holder", []string{"1", "lock", "other", "next", "5000"}, ":0\r\n"},
		{"no ARGV", []string{"1", "lock"}, ":0\r\n"},
		{"missing key", []string{"1", "missing", "tok", "next", "5000"}, ":0\r\n"},
		{"missing key, no ARGV", []string{"1", "missing"}, ":0\r\n"},
		{"no KEYS", []string{"0", "tok", "next", "5000"}, scriptErr(errScriptArgs)},
		{"a hash", []string{"1", "h", "tok", "next", "5000"}, scriptErr(errWrongType)},
		{"a hash, no ARGV", []string{"1", "h"}, scriptErr(errWrongType)},
		{"no next holder", []string{"1", "lock", "tok"}, scriptErr(errScriptArgs)},
		{"no TTL", []string{"1", "lock", "tok", "next"}, scriptErr(errScriptArgs)},
		{"TTL not a number", []string{"1", "lock", "tok", "next", "abc"}, scriptErr(errNotInteger)},
		{"TTL a fraction", []string{"1", "lock", "tok", "next", "1.5"}, scriptErr(errNotInteger)},
		{"TTL with a plus", []string{"1", "lock", "tok", "next", "+5"}, scriptErr(errNotInteger)},
		{"TTL empty", []string{"1", "lock", "tok", "next", ""}, scriptErr(errNotInteger)},
		{"TTL past int64", []string{"1", "lock", "tok", "next", "9223372036854775808"}, scriptErr(errNotInteger)},
		{"TTL zero", []string{"1", "lock", "tok", "next", "0"}, scriptErr("ERR invalid expire time in 'set' command")},
		{"TTL negative", []string{"1", "lock", "tok", "next", "-5"}, scriptErr("ERR invalid expire time in 'set' command")},
		{"expiry overflows", []string{"1", "lock", "tok", "next", "9223372036854775807"},
			scriptErr("ERR invalid expire time in 'set' command")},
	} {
		require.Equal(t, tc.want, c.do(append([]string{"EVALSHA", sha}, tc.args...)...), tc.name)
		require.Equal(t, bulk("tok"), c.do("GET", "lock"), tc.name)
		require.Equal(t, ":1000\r\n", c.do("PTTL", "lock"), tc.name)
		require.Equal(t, ":0\r\n", c.do("EXISTS", "missing"), tc.name)
		require.Equal(t, "+hash\r\n", c.do("TYPE", "h"), tc.name)
	}

	clock.Advance(250 * time.Millisecond)
	require.Equal(t, ":1\r\n", c.do("EVALSHA", sha, "1", "lock", "tok", "next", "5000"))
	require.Equal(t, bulk("next"), c.do("GET", "lock"))
	require.Equal(t, ":5000\r\n", c.do("PTTL", "lock"))
	require.Equal(t, ":0\r\n", c.do("EVALSHA", sha, "1", "lock", "tok", "again", "5000"), "the old holder handed over twice")
	require.Equal(t, ":1\r\n", c.do("EVAL", scripts.Handover.Source, "2", "lock", "ignored", "next", "next", "2000"),
		"to the same holder, a second key")
	require.Equal(t, ":2000\r\n", c.do("PTTL", "lock"))
	clock.Advance(2001 * time.Millisecond)
	require.Equal(t, ":0\r\n", c.do("EVALSHA", sha, "1", "lock", "next", "last", "5000"), "after the key expired")
	require.Equal(t, ":0\r\n", c.do("EXISTS", "lock"))

	// A key without a TTL gets one; an empty token is a token.
	require.Equal(t, "+OK\r\n", c.do("SET", "lock", ""))
	require.Equal(t, ":1\r\n", c.do("EVALSHA", sha, "1", "lock", "", "next", "3000"))
	require.Equal(t, ":3000\r\n", c.do("PTTL", "lock"))

	// RESP3 replies are the same; a reformatted copy is recognised.
	require.Regexp(t, `^%7\r\n`, c.do("HELLO", "3"))
	require.Equal(t, ":1\r\n", c.do("EVALSHA", strings.ToUpper(sha), "1", "lock", "next", "tok", "4000"))
	require.Equal(t, scriptErr(errNotInteger), c.do("EVALSHA", sha, "1", "lock", "tok", "next", "x"))
	require.Equal(t, ":0\r\n", c.do("EVALSHA", sha, "1", "lock", "next", "tok", "4000"))
	spaced := strings.ReplaceAll(strings.ReplaceAll(scripts.Handover.Source, `"`, `'`), " then ", "\n\tthen ")
	require.Equal(t, ":1\r\n", c.do("EVAL", spaced, "1", "lock", "tok", "next", "4000"))
	require.Equal(t, bulk("next"), c.do("GET", "lock"))

	require.Equal(t, "*2\r\n"+bulk("pong")+bulk(""), sub.do("PING"), "the handover published")
}

// TestSemaphoreScripts runs the semaphore's scripts on a ManualClock: the
// record lives as long as the longest-lived permit, exactly; an expired
// permit is free again; the release's message goes out only with "1", on
// the record's shard channel, with the release's id.
func TestSemaphoreScripts(t *testing.T) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s := StartT(t, Options{Clock: clock})
	c, sub := dial(t, s.Addr()), dial(t, s.Addr())
	channel := releasedChannelPrefix + "sem"
	shardNS.subscribe(t, sub, channel)
	sem := []string{"3", "sem", "sem:0", "sem:1"}
	eval := func(script scripts.Script, argv ...string) string {
		return c.do(append(append([]string{"EVALSHA", script.SHA}, sem...), argv...)...)
	}
	for _, sc := range []scripts.Script{scripts.SemAcquire, scripts.SemRelease, scripts.SemExtend} {
		require.Equal(t, bulk(sc.SHA), c.do("SCRIPT", "LOAD", sc.Source), sc.Name)
	}

	require.Equal(t, bulk("t1"), eval(scripts.SemAcquire, "t1", "1000", "0"), "a grant is the token")
	require.Equal(t, bulk("t2"), eval(scripts.SemAcquire, "t2", "3000", "1"), "a grant is the token")
	require.Equal(t, ":3000\r\n", c.do("PTTL", "sem"), "raised to the longer permit's")
	require.Equal(t, "*0\r\n", eval(scripts.SemAcquire, "t3", "5000", "0"))
	clock.Advance(1001 * time.Millisecond)
	require.Equal(t, "*1\r\n:0\r\n", eval(scripts.SemAcquire, "t3", "5000", "1"), "permit 0 expired")
	require.Equal(t, bulk("t3"), eval(scripts.SemAcquire, "t3", "500", "0"), "a grant is the token")
	require.Equal(t, ":1999\r\n", c.do("PTTL", "sem"), "never lowered")

	// SemExtend sets the permit's TTL and raises the record's to it.
	require.Equal(t, ":0\r\n", c.do("EVALSHA", scripts.SemExtend.SHA, "2", "sem", "sem:0", "t1", "9000", "2"))
	require.Equal(t, ":1\r\n", c.do("EVALSHA", scripts.SemExtend.SHA, "2", "sem", "sem:0", "t3", "9000", "2"))
	require.Equal(t, ":9000\r\n", c.do("PTTL", "sem:0"))
	require.Equal(t, ":9000\r\n", c.do("PTTL", "sem"))
	require.Equal(t, ":1\r\n", c.do("EVALSHA", scripts.SemExtend.SHA, "2", "sem", "sem:0", "t3", "100", "2"))
	require.Equal(t, ":9000\r\n", c.do("PTTL", "sem"))

	// The release of one permit of two keeps the record; with "0" nothing
	// is published.
	require.Equal(t, ":1\r\n", eval(scripts.SemRelease, "t2", "1", "0"))
	require.Equal(t, ":1\r\n", c.do("EXISTS", "sem"))
	require.Equal(t, ":0\r\n", eval(scripts.SemRelease, "t2", "1", "1"), "released twice")
	clock.Advance(101 * time.Millisecond)
	require.Equal(t, ":0\r\n", eval(scripts.SemRelease, "t3", "0", "1"), "after the permit expired")
	require.Equal(t, ":1\r\n", c.do("EXISTS", "sem"), "the record outlives its permits until it expires")
	require.Equal(t, bulk("t4"), eval(scripts.SemAcquire, "t4", "1000", "1"), "a grant is the token")
	require.Equal(t, ":1\r\n", eval(scripts.SemRelease, "t4", "1", "1"))
	require.Equal(t, ":0\r\n", c.do("EXISTS", "sem"), "the last release deletes the record")
	require.Equal(t, shardNS.message(false, channel, holderID([]byte("t4"))), sub.read())
	require.Equal(t, "*2\r\n"+bulk("pong")+bulk(""), sub.do("PING"), "one message only")
}

// TestRWLockScripts runs the read-write lock's scripts on a ManualClock:
// a reader's score is TIME's milliseconds plus its TTL, and it expires at
// that very millisecond (not extended, released with 0 and no message,
// dropped by the next attempt, no longer keeping a writer out); the
// readers' key lives as long as the longest-lived reader, exactly; the
// intent refuses readers until its last millisecond.
func TestRWLockScripts(t *testing.T) {
	clock := NewManualClock(time.Unix(1_700_000_000, 123_456_789))
	s := StartT(t, Options{Clock: clock})
	c, sub := dial(t, s.Addr()), dial(t, s.Addr())
	channel := releasedChannelPrefix + "rw"
	shardNS.subscribe(t, sub, channel)
	rw := []string{"3", "rw", "rw:readers", "rw:intent"}
	eval := func(script scripts.Script, argv ...string) string {
		return c.do(append(append([]string{"EVALSHA", script.SHA}, rw...), argv...)...)
	}
	for _, sc := range []scripts.Script{scripts.RWLock, scripts.RWRLock, scripts.RWRExtend, scripts.RWRUnlock} {
		require.Equal(t, bulk(sc.SHA), c.do("SCRIPT", "LOAD", sc.Source), sc.Name)
	}
	waiting := func(ms int) string { return "*2\r\n" + bulk(waitHolder) + ":" + strconv.Itoa(ms) + "\r\n" }
	advance := func(ms int) { clock.Advance(time.Duration(ms) * time.Millisecond) }

	// At t0 = 1700000000123 ms, TIME's seconds and microseconds.
	require.Equal(t, "*2\r\n"+bulk("1700000000")+bulk("123456"), c.do("TIME"))
	require.Equal(t, ":1\r\n", eval(scripts.RWRLock, "r1", "1000"))
	require.Equal(t, bulk("1700000001123"), c.do("ZSCORE", "rw:readers", "r1"), "t0 plus the TTL")
	require.Equal(t, ":1\r\n", eval(scripts.RWRLock, "r2", "3000"))
	require.Equal(t, ":3000\r\n", c.do("PTTL", "rw:readers"), "raised to the longest-lived reader's")
	require.Equal(t, ":1\r\n", eval(scripts.RWRLock, "r3", "500"))
	require.Equal(t, ":3000\r\n", c.do("PTTL", "rw:readers"), "never lowered")

	// A writer that waits writes the intent and learns how long until the
	// last reader (r2) expires; readers are refused meanwhile.
	require.Equal(t, waiting(3000), eval(scripts.RWLock, "w", "5000", "1"))
	require.Equal(t, ":5000\r\n", c.do("PTTL", "rw:intent"))
	advance(100)
	require.Equal(t, waiting(4900), eval(scripts.RWRLock, "r4", "1000"), "the intent's PTTL")

	// At t0+500, r3's score: r3 has expired, though a key of that expiry
	// would live; r1 moves its expiry to t0+600.
	advance(400)
	require.Equal(t, ":0\r\n", eval(scripts.RWRExtend, "r3", "1000"))
	require.Equal(t, ":1\r\n", eval(scripts.RWRExtend, "r1", "100"))
	require.Equal(t, bulk("1700000000723"), c.do("ZSCORE", "rw:readers", "r1"))
	advance(100)
	require.Equal(t, ":0\r\n", eval(scripts.RWRUnlock, "r1"), "expired at t0+600: removed, no message")
	require.Equal(t, "$-1\r\n", c.do("ZSCORE", "rw:readers", "r1"))
	require.Equal(t, ":2\r\n", c.do("ZCARD", "rw:readers"), "r2, and r3 until dropped")
	require.Equal(t, waiting(2400), eval(scripts.RWLock, "w", "5000", "1"))
	require.Equal(t, ":1\r\n", c.do("ZCARD", "rw:readers"), "the writer's attempt dropped r3")
	require.Equal(t, ":5000\r\n", c.do("PTTL", "rw:intent"), "raised again to the TTL")
	require.Equal(t, waiting(2400), eval(scripts.RWLock, "w", "9000", "0"))
	require.Equal(t, ":5000\r\n", c.do("PTTL", "rw:intent"), "a writer that does not wait leaves it")

	// r2 extends past the readers' key's TTL, which follows; then it
	// shortens its own expiry, which the key's TTL does not follow.
	require.Equal(t, ":1\r\n", eval(scripts.RWRExtend, "r2", "4000"))
	require.Equal(t, ":4000\r\n", c.do("PTTL", "rw:readers"))
	require.Equal(t, ":1\r\n", eval(scripts.RWRExtend, "r2", "100"))
	require.Equal(t, ":4000\r\n", c.do("PTTL", "rw:readers"))
	require.Equal(t, bulk("1700000000823"), c.do("ZSCORE", "rw:readers", "r2"))

	// At t0+700 r2 has expired: the writer takes the lock, although the
	// readers' key lived, and deletes it and the intent.
	advance(100)
	require.Equal(t, ":1\r\n", c.do("EXISTS", "rw:readers"))
	require.Equal(t, ":1\r\n", eval(scripts.RWLock, "w", "5000", "1"))
	require.Equal(t, ":0\r\n", c.do("EXISTS", "rw:readers", "rw:intent"))
	require.Equal(t, bulk("w"), c.do("GET", "rw"))
	held := "*2\r\n" + bulk(holderID([]byte("w"))) + ":5000\r\n"
	require.Equal(t, held, eval(scripts.RWRLock, "r1", "1000"))
	require.Equal(t, held, eval(scripts.RWLock, "w2", "1000", "1"))
	advance(5001)
	require.Equal(t, ":1\r\n", eval(scripts.RWRLock, "r1", "1000"), "the writer's key expired")

	// The readers' key expires with its longest-lived reader.
	require.Equal(t, ":1\r\n", eval(scripts.RWRLock, "r2", "2000"))
	advance(2000)
	require.Equal(t, ":0\r\n", c.do("PTTL", "rw:readers"), "its last millisecond")
	advance(1)
	require.Equal(t, ":0\r\n", c.do("EXISTS", "rw:readers"))
	require.Equal(t, ":0\r\n", eval(scripts.RWRUnlock, "r2"))

	// The intent refuses readers until its last millisecond (PTTL 0).
	require.Equal(t, ":1\r\n", eval(scripts.RWRLock, "r1", "10000"))
	require.Equal(t, waiting(10000), eval(scripts.RWLock, "w", "1000", "1"))
	advance(999)
	require.Equal(t, waiting(1), eval(scripts.RWRLock, "r5", "1000"))
	advance(1)
	require.Equal(t, ":1\r\n", eval(scripts.RWRLock, "r5", "1000"))

	// A live reader's release publishes its id on the writer's key's shard
	// channel: the only message of the test.
	require.Equal(t, ":1\r\n", eval(scripts.RWRUnlock, "r5"))
	require.Equal(t, ":0\r\n", eval(scripts.RWRUnlock, "r5"), "released twice")
	require.Equal(t, shardNS.message(false, channel, holderID([]byte("r5"))), sub.read())
	require.Equal(t, "*2\r\n"+bulk("pong")+bulk(""), sub.do("PING"), "one message only")
	require.Equal(t, ":1\r\n", c.do("ZCARD", "rw:readers"), "r1")
}

// TestLuaInteger checks what a Lua number a script returns becomes: an
// integer, its fraction dropped toward zero; out of long long's range, what
// the CPU's conversion gives (TestDifferentialRWLock compares an infinite
// wait with redis-server's).
func TestLuaInteger(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want int64
	}{
		{0, 0}, {1.9, 1}, {-1.9, -1}, {-0.5, 0}, {1_700_000_000_123.5, 1_700_000_000_123},
		{0x1p63 - 1024, 1<<63 - 1024}, {-0x1p63, math.MinInt64},
	} {
		require.Equal(t, tc.want, luaInteger(tc.f), "%g", tc.f)
	}
	over, nan := int64(math.MaxInt64), int64(0)
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "386" {
		over, nan = math.MinInt64, math.MinInt64
	}
	for _, f := range []float64{0x1p63, 1e300, math.Inf(1)} {
		require.Equal(t, over, luaInteger(f), "%g", f)
	}
	for _, f := range []float64{-0x1p63 - 2048, math.Inf(-1)} {
		require.Equal(t, int64(math.MinInt64), luaInteger(f), "%g", f)
	}
	require.Equal(t, nan, luaInteger(math.NaN()))
}
