package redlock

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/internal/redistest"
)

// commandCalls returns INFO commandstats' calls of each command on the
// server at addr, by lower-case name.
func commandCalls(t *testing.T, addr string) map[string]int {
	t.Helper()
	vals, err := redistest.Do(addr, "INFO", "commandstats")
	require.NoError(t, err)
	calls := map[string]int{}
	for line := range strings.Lines(string(vals[0].Bytes)) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		field, _, _ := strings.Cut(rest, ",")
		n, err := strconv.Atoi(strings.TrimPrefix(field, "calls="))
		require.NoError(t, err, line)
		calls[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return calls
}

// resetStats zeroes every server's INFO commandstats.
func resetStats(t *testing.T, servers []*redistest.Server) {
	t.Helper()
	for _, s := range servers {
		require.NoError(t, s.Command("CONFIG", "RESETSTAT"))
	}
}

// nativeOf returns the native forms the server of cn has, by their
// names in verbs.
func nativeOf(cn *pipe.Conn) map[string]bool {
	out := map[string]bool{}
	for v := range numVerbs {
		if v.has(cn.Info()) {
			out[verbs[v].name] = true
		}
	}
	return out
}

// TestNativeVersions: which server versions get which native forms.
func TestNativeVersions(t *testing.T) {
	for _, tc := range []struct {
		server, version string
		want            []nativeVerb
	}{
		{"redis", "7.0.15", nil},
		{"redis", "8.0.6", nil},
		{"redis", "8.2.1", nil},
		{"redis", "8.4.0", []nativeVerb{verbSetIfEq, verbDelexIfEq}},
		{"redis", "8.6.3", []nativeVerb{verbSetIfEq, verbDelexIfEq}},
		{"redis", "10.0.0", []nativeVerb{verbSetIfEq, verbDelexIfEq}},
		{"valkey", "8.0.1", nil},
		{"valkey", "8.1.1", []nativeVerb{verbSetIfEq}},
		{"valkey", "9.0.0", []nativeVerb{verbSetIfEq, verbDelIfEq}},
		{"valkey", "9.1.2", []nativeVerb{verbSetIfEq, verbDelIfEq}},
		{"keydb", "9.9.9", nil},
		{"redis", "garbage", nil},
	} {
		info := &pipe.ServerInfo{Server: tc.server, Version: tc.version}
		var got []nativeVerb
		for v := range numVerbs {
			if v.has(info) {
				got = append(got, v)
			}
		}
		assert.Equal(t, tc.want, got, "%s %s", tc.server, tc.version)
	}
}

// TestNativeCommands: on a server that has them, Extend and Unlock of a
// lock on one key run the native commands, and no script; with
// DisableNativeCommands, or on a server without them, the scripts. The
// masters' INFO commandstats say which ran.
func TestNativeCommands(t *testing.T) {
	servers := masters(t, 3)
	for _, off := range []bool{false, true} {
		t.Run("DisableNativeCommands="+strconv.FormatBool(off), func(t *testing.T) {
			c := client(t, servers, Config{DisableNativeCommands: off})
			has := nativeOf(c.masters[0].conn())
			warm(t, c)
			l, err := c.TryLock(bg, "native", 10*time.Second)
			require.NoError(t, err)
			// The lock returned at its quorum: wait for the last copy,
			// whose command would count after the reset.
			inspectAll(t, func(ctx context.Context) ([]KeyState, error) { return c.Inspect(ctx, "native") },
				func(s KeyState) bool { return s.Exists })
			resetStats(t, servers)
			require.NoError(t, l.Extend(bg, 10*time.Second))
			require.NoError(t, l.Unlock(bg))
			for _, s := range servers {
				require.Eventually(t, func() bool {
					calls := commandCalls(t, s.Addr())
					return calls["set"]+calls["evalsha"]+calls["delifeq"]+calls["delex"] == 2
				}, 5*time.Second, 10*time.Millisecond, "one extension and one release on %s: %v", s.Addr(), commandCalls(t, s.Addr()))
				calls := commandCalls(t, s.Addr())
				native := !off && has["SET IFEQ"]
				assert.Equal(t, native, calls["set"] == 1, "Extend as SET IFEQ: %v", calls)
				release := !off && (has["DELIFEQ"] || has["DELEX IFEQ"])
				assert.Equal(t, release && has["DELIFEQ"], calls["delifeq"] == 1, "Unlock as DELIFEQ: %v", calls)
				assert.Equal(t, release && has["DELEX IFEQ"], calls["delex"] == 1, "Unlock as DELEX IFEQ: %v", calls)
				scripts := 0
				for _, asScript := range []bool{!native, !release} {
					if asScript {
						scripts++
					}
				}
				assert.Equal(t, scripts, calls["evalsha"], "Extend and Unlock as scripts (EVALSHA): %v", calls)
				assert.Zero(t, calls["eval"], "no script sent whole: %v", calls)
				if release {
					assert.Equal(t, 1, calls["spublish"], "the native release publishes: %v", calls)
				}
			}
		})
	}
}

// TestNativeNotOurs: the native forms never touch another holder's key
// and never create one: Extend and Unlock of a lock whose key expired and
// was taken by another answer ErrNotHeld, and the other holder keeps it.
func TestNativeNotOurs(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{})
	l, err := c.TryLock(bg, "native:lost", 50*time.Millisecond)
	require.NoError(t, err)
	// Gone on every master: each set it on its own clock, so one may
	// still hold it (validly: Extend would then extend it) a moment after
	// another has let it expire.
	require.Eventually(t, func() bool {
		for _, s := range servers {
			_, err := redistest.Do(s.Addr(), "GET", "native:lost")
			vals, _ := redistest.Do(s.Addr(), "EXISTS", "native:lost")
			if err != nil || vals[0].Int != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond)
	l.until = time.Now().Add(time.Hour) // pretend it is still valid, to send the commands
	require.ErrorIs(t, l.Extend(bg, 10*time.Second), ErrNotHeld)
	for _, s := range servers {
		vals, err := redistest.Do(s.Addr(), "EXISTS", "native:lost")
		require.NoError(t, err)
		assert.Zero(t, vals[0].Int, "Extend re-created the key on %s", s.Addr())
	}
	other, err := c.TryLock(bg, "native:lost", 10*time.Second)
	require.NoError(t, err)
	l.until = time.Now().Add(time.Hour)
	require.ErrorIs(t, l.Unlock(bg), ErrNotHeld)
	require.NoError(t, other.Extend(bg, 10*time.Second), "the other holder still holds it")
	require.NoError(t, other.Unlock(bg))
}

// TestNativeWakes: a native release wakes a Lock that waits for the key,
// as the script's does (the waiter's RetryDelay is 10 s).
func TestNativeWakes(t *testing.T) {
	servers := masters(t, 3)
	a := client(t, servers, Config{})
	var failed atomic.Int32
	b := client(t, servers, waiterConfig(Config{}, &failed))
	l, err := a.TryLock(bg, "native:wake", 10*time.Second)
	require.NoError(t, err)
	requireWokenByRelease(t, l, b, "native:wake", &failed)
}

// TestNativeRefused: a master whose ACL refuses the native release (the
// documented least-privileged user, which names no native command) still
// releases, with the script, in the same Unlock, and the Client uses the
// script from then on.
func TestNativeRefused(t *testing.T) {
	servers := masters(t, 3)
	for _, s := range servers {
		require.NoError(t, s.Command(minimalACL...))
	}
	c := client(t, servers, Config{Conn: Connection{Username: "volley", Password: "volley-pw"}})
	has := nativeOf(c.masters[0].conn())
	// New's probe already saw the refusals, before any lock.
	probed := c.nativeOff.Load()
	assert.Equal(t, has["DELIFEQ"], probed&(1<<verbDelIfEq) != 0, "DELIFEQ refused at New")
	assert.Equal(t, has["DELEX IFEQ"], probed&(1<<verbDelexIfEq) != 0, "DELEX refused at New")
	key := "app:lock:native"
	for range 2 {
		l, err := c.TryLock(bg, key, 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Extend(bg, 10*time.Second))
		require.NoError(t, l.Unlock(bg))
		for _, s := range servers {
			require.Eventually(t, func() bool {
				vals, err := redistest.Do(s.Addr(), "EXISTS", key)
				return err == nil && vals[0].Int == 0
			}, 5*time.Second, 5*time.Millisecond, "released on %s", s.Addr())
		}
	}
	off := c.nativeOff.Load()
	assert.Equal(t, has["DELIFEQ"], off&(1<<verbDelIfEq) != 0, "DELIFEQ refused")
	assert.Equal(t, has["DELEX IFEQ"], off&(1<<verbDelexIfEq) != 0, "DELEX refused")
	assert.Zero(t, off&(1<<verbSetIfEq), "SET IFEQ is allowed (+set)")
}

// TestNativeRefusedLater: an ACL that starts refusing the native
// commands after New (the probe at New saw them allowed): the Unlock that
// meets the refusal releases with the script in the same call, and the
// Client uses the script from then on.
func TestNativeRefusedLater(t *testing.T) { nativeRefusedLater(t) }

// TestNativeRefusedLaterDriven is TestNativeRefusedLater with every burst
// served by the Group's driver, which sends the script again from where
// it reads the refusal (op.hear).
func TestNativeRefusedLaterDriven(t *testing.T) {
	setDriven(t, true)
	nativeRefusedLater(t)
}

func nativeRefusedLater(t *testing.T) {
	t.Helper()
	servers := masters(t, 3)
	for _, s := range servers {
		require.NoError(t, s.Command("ACL", "SETUSER", "volley", "on", ">volley-pw", "~*", "&*", "+@all"))
	}
	c := client(t, servers, Config{Conn: Connection{Username: "volley", Password: "volley-pw"}})
	has := nativeOf(c.masters[0].conn())
	require.Zero(t, c.nativeOff.Load())
	for _, s := range servers {
		if has["DELIFEQ"] {
			require.NoError(t, s.Command("ACL", "SETUSER", "volley", "-delifeq"))
		}
		if has["DELEX IFEQ"] {
			require.NoError(t, s.Command("ACL", "SETUSER", "volley", "-delex"))
		}
	}
	// The first Unlock meets the refusals: it resends the script to the
	// masters whose refusal came before its decision (a quorum), and a
	// refusal that came after it leaves that master's key to its TTL.
	// From then on every master gets the script.
	for i, want := range []int{c.quorum, len(servers)} {
		key := "native:refused:" + strconv.Itoa(i)
		l, err := c.TryLock(bg, key, 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(bg))
		require.Eventually(t, func() bool {
			released := 0
			for _, s := range servers {
				vals, err := redistest.Do(s.Addr(), "EXISTS", key)
				if err == nil && vals[0].Int == 0 {
					released++
				}
			}
			return released >= want
		}, 5*time.Second, 5*time.Millisecond, "released on %d masters", want)
	}
	off := c.nativeOff.Load()
	assert.Equal(t, has["DELIFEQ"], off&(1<<verbDelIfEq) != 0, "DELIFEQ refused")
	assert.Equal(t, has["DELEX IFEQ"], off&(1<<verbDelexIfEq) != 0, "DELEX refused")
}

// TestNativeMixedMasters: one Client over fake masters of five servers,
// each answering as its server does: every master gets the form its
// server has (the scripts on Redis 7.0 and 8.0, SET IFEQ but the release
// script on Valkey 8.1, DELIFEQ on Valkey 9, DELEX IFEQ on Redis 8.6),
// and a lock is taken, extended, released and handed to a waiter as on
// any masters.
func TestNativeMixedMasters(t *testing.T) {
	ids := []struct{ server, version string }{
		{"redis", "7.0.15"}, {"valkey", "8.1.1"}, {"valkey", "9.1.2"}, {"redis", "8.0.2"}, {"redis", "8.6.3"},
	}
	var servers []*fakeredis.Server
	var addrs []string
	for _, id := range ids {
		clock := fakeredis.NewManualClock(time.Now())
		s := fakeredis.StartT(t, fakeredis.Options{Clock: clock, Server: id.server, Version: id.version})
		clock.Advance(time.Hour)
		servers = append(servers, s)
		addrs = append(addrs, s.Addr())
	}
	c := fakeClient(t, addrs, Config{})
	want := []string{"", "SET IFEQ", "SET IFEQ DELIFEQ", "", "SET IFEQ DELEX IFEQ"}
	for i, m := range c.masters {
		var got []string
		for _, cmd := range []*command{&cmdExtend, &cmdRelease} {
			if v, ok := c.nativeFor(cmd, m.conn()); ok {
				got = append(got, verbs[v].name)
			}
		}
		assert.Equal(t, want[i], strings.Join(got, " "), "%s %s", ids[i].server, ids[i].version)
	}
	l, err := c.TryLock(bg, "mixed", 10*time.Second)
	require.NoError(t, err)
	fakeHolds(t, servers, "mixed", l.tok)
	// Extend returns at its quorum, and a master whose previous reply was
	// late may not be sent this one (make test-stress): extend again
	// until every master's form has run.
	require.Eventually(t, func() bool {
		require.NoError(t, l.Extend(bg, 20*time.Second))
		for _, s := range servers {
			if _, ttl, ok := s.Lookup("mixed"); !ok || ttl <= 10*time.Second {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "extended on every master")
	var failed atomic.Int32
	b := fakeClient(t, addrs, waiterConfig(Config{}, &failed))
	requireWokenByRelease(t, l, b, "mixed", &failed)
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if _, _, ok := s.Lookup("mixed"); ok {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond, "released on every master")
	require.Zero(t, c.nativeOff.Load(), "no native form refused")
}

// TestNativeFormsOnlyForServersThatRunThem: a burst encodes its command's
// native forms only when a master's server runs one of them (see
// anyNative); on older servers alone it encodes none.
func TestNativeFormsOnlyForServersThatRunThem(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string // of "redis" servers, then one "valkey" 9.1.2 when native
		native   bool
	}{
		{"redis 7 alone", []string{"7.0.15", "7.0.15", "7.0.15"}, false},
		{"one valkey 9", []string{"7.0.15", "7.0.15"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var addrs []string
			for _, v := range tc.versions {
				addrs = append(addrs, fakeredis.StartT(t, fakeredis.Options{Server: "redis", Version: v}).Addr())
			}
			if tc.native {
				addrs = append(addrs, fakeredis.StartT(t, fakeredis.Options{Server: "valkey", Version: "9.1.2"}).Addr())
			}
			c := fakeClient(t, addrs, Config{})
			o := c.getOp()
			defer c.putOp(o)
			tok := newToken()
			o.encode(&cmdRelease, args{key: "forms", tok: &tok})
			assert.Equal(t, tc.native, o.natives() != nil, "native forms encoded")
			o.encode(&cmdExtend, args{key: "forms", tok: &tok, arg: o.ttlArg(time.Second)})
			assert.Equal(t, tc.native, o.natives() != nil, "native forms encoded")
		})
	}
}
