//go:build linux

package main

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// noCompiler is what a test says when floor-c cannot be built for want of
// a C compiler: floor-c is then not measured, and its tests fail rather
// than skip.
const noCompiler = "floor-c needs a C compiler (cc, gcc or clang) in PATH: install one (Debian/Ubuntu: apt-get install -y gcc)"

// requireCompiler fails the test on a machine without a C compiler.
func requireCompiler(t *testing.T) {
	t.Helper()
	_, err := findCCompiler()
	require.NoError(t, err, noCompiler)
}

// startFloorCOn starts floor-c over servers, cfloor waiting drain for
// owed replies, and closes it with the test. Tests call requireCompiler
// first, before they start servers.
func startFloorCOn(t *testing.T, servers []*redistest.Server, drain time.Duration) *floorC {
	t.Helper()
	s := Setup{Addrs: redistest.Addrs(servers), MasterTimeout: time.Second, TTL: 10 * time.Second}
	f, err := startFloorC(s, drain)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// clientsOf returns a go-redis client per server, closed with the test.
func clientsOf(t *testing.T, servers []*redistest.Server) []*goredislib.Client {
	t.Helper()
	var clients []*goredislib.Client
	for _, s := range servers {
		cl := goredislib.NewClient(&goredislib.Options{Addr: s.Addr()})
		t.Cleanup(func() { cl.Close() })
		clients = append(clients, cl)
	}
	return clients
}

// calls returns how many times a master ran cmd (INFO commandstats).
func calls(t *testing.T, cl *goredislib.Client, cmd string) int {
	t.Helper()
	info, err := cl.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			require.NoError(t, err, line)
			return n
		}
	}
	return 0
}

// TestFloorCBuilds: cfloor compiles with -Wall -Wextra without a warning.
func TestFloorCBuilds(t *testing.T) {
	requireCompiler(t)
	_, _, out, err := buildCfloor(context.Background(), t.TempDir())
	require.NoError(t, err)
	assert.Empty(t, string(out), "the compiler warned")
}

// TestFloorCLocks: every pair of a run sets its key on every master and
// releases it; no key is left behind once the run has answered.
func TestFloorCLocks(t *testing.T) {
	requireCompiler(t)
	servers := redistest.StartN(t, 5, redistest.Options{})
	clients := clientsOf(t, servers)
	f := startFloorCOn(t, servers, 5*time.Second)
	ctx := context.Background()

	s, failed, err := f.Samples(ctx, "floorc:test:", 8, 40, 10*time.Second, 0, nil)
	require.NoError(t, err)
	assert.Zero(t, failed)
	require.Len(t, s, 40)
	for _, d := range s {
		assert.Positive(t, d)
		assert.Less(t, d, 2*time.Second, "a pair within its two exchanges' timeouts")
	}
	for i, cl := range clients {
		assert.Equal(t, 40, calls(t, cl, "set"), "master %d: a SET per pair", i)
		assert.Equal(t, 40, calls(t, cl, "evalsha"), "master %d: a release per pair", i)
		n, err := cl.DBSize(ctx).Result()
		require.NoError(t, err)
		assert.Zero(t, n, "master %d: every key released", i)
	}

	// A run by duration answers too, and LockUnlock is one pair.
	s, failed, err = f.Samples(ctx, "floorc:test:d:", 4, 0, 10*time.Second, 50*time.Millisecond, s[:0])
	require.NoError(t, err)
	assert.Zero(t, failed)
	assert.NotEmpty(t, s)
	require.NoError(t, f.LockUnlock(ctx, "floorc:test:one", 10*time.Second))
}

// TestFloorCExcluded: a key another holder keeps on a quorum of masters
// fails every pair, and the failed attempts' releases leave the holder's
// value alone; held on a minority, the key is still taken.
func TestFloorCExcluded(t *testing.T) {
	requireCompiler(t)
	servers := redistest.StartN(t, 5, redistest.Options{})
	clients := clientsOf(t, servers)
	f := startFloorCOn(t, servers, 5*time.Second)
	ctx := context.Background()
	for _, tc := range []struct {
		held int // masters where another holder has the key
		ok   bool
	}{{2, true}, {3, false}, {5, false}} {
		key := "floorc:test:held" + strconv.Itoa(tc.held)
		for _, cl := range clients[:tc.held] {
			require.NoError(t, cl.Set(ctx, key, "other", time.Minute).Err())
		}
		s, failed, err := f.Samples(ctx, key, 0, 3, 10*time.Second, 0, nil)
		require.NoError(t, err)
		if tc.ok {
			assert.Len(t, s, 3, "held on %d", tc.held)
			assert.Zero(t, failed, "held on %d", tc.held)
			require.NoError(t, f.LockUnlock(ctx, key, 10*time.Second))
		} else {
			assert.Empty(t, s, "held on %d", tc.held)
			assert.Equal(t, 3, failed, "held on %d", tc.held)
			require.ErrorIs(t, f.LockUnlock(ctx, key, 10*time.Second), errFloorCNotDone)
		}
		for i, cl := range clients {
			v, err := cl.Get(ctx, key).Result()
			if i < tc.held {
				require.NoError(t, err)
				assert.Equal(t, "other", v, "held on %d: master %d keeps the holder's value", tc.held, i)
			} else {
				assert.ErrorIs(t, err, goredislib.Nil, "held on %d: master %d released", tc.held, i)
			}
		}
	}
}

// TestFloorCFailures: whatever goes wrong, floor-c fails with cfloor's
// reason, never hangs, and leaves no process behind.
func TestFloorCFailures(t *testing.T) {
	requireCompiler(t)
	ctx := context.Background()

	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		servers := redistest.StartN(t, 2, redistest.Options{})
		_, err = startFloorC(Setup{Addrs: append(redistest.Addrs(servers), addr), MasterTimeout: time.Second}, time.Second)
		require.Error(t, err)
		t.Log(err)
		assert.Contains(t, err.Error(), "master "+addr+": connect: Connection refused")
		assert.Contains(t, err.Error(), "exit status 1")
	})

	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, s *redistest.Server)
		want  string // a regexp, after "master ADDR"
	}{
		{"error reply", func(t *testing.T, s *redistest.Server) { require.NoError(t, s.Command("SCRIPT", "FLUSH")) }, ": error reply: NOSCRIPT"},
		{"master gone", func(t *testing.T, s *redistest.Server) { s.Kill() }, ": (the server closed the connection|read: |write: )"},
		{"master stopped", func(t *testing.T, s *redistest.Server) {
			require.NoError(t, s.Pause())
			t.Cleanup(func() { s.Resume() })
		}, ": 2 replies still owed 300 ms after the operation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := redistest.StartN(t, 3, redistest.Options{})
			f := startFloorCOn(t, servers, 300*time.Millisecond)
			tc.fault(t, servers[2])
			_, _, err := f.Samples(ctx, "floorc:test:", 8, 20, 10*time.Second, 0, nil)
			require.Error(t, err)
			t.Log(err)
			assert.Regexp(t, regexp.QuoteMeta("master "+servers[2].Addr())+tc.want, err.Error())
			require.NotNil(t, f.cmd.ProcessState, "cfloor reaped")
			_, _, again := f.Samples(ctx, "floorc:test:", 8, 20, 10*time.Second, 0, nil)
			assert.Equal(t, err, again, "every later call fails the same")
			assert.NoError(t, f.Close())
		})
	}

	t.Run("context ends", func(t *testing.T) {
		servers := redistest.StartN(t, 3, redistest.Options{})
		f := startFloorCOn(t, servers, time.Second)
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _, err := f.Samples(cctx, "floorc:test:", 8, 0, 10*time.Second, time.Minute, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), 30*time.Second, "the minute's run was cut short")
		require.NotNil(t, f.cmd.ProcessState, "cfloor reaped")
	})

	t.Run("bad requests", func(t *testing.T) {
		servers := redistest.StartN(t, 3, redistest.Options{})
		f := startFloorCOn(t, servers, time.Second)
		for _, prefix := range []string{"", "a b", "a\nrun", strings.Repeat("k", floorCMaxPrefix+1)} {
			_, _, err := f.Samples(ctx, prefix, 1, 1, time.Second, 0, nil)
			require.Error(t, err, "%q", prefix)
		}
		_, _, err := f.Samples(ctx, "k", 1, 0, time.Second, 0, nil)
		require.Error(t, err, "neither a count nor a duration")
		_, _, err = f.Samples(ctx, "k", 1, 1, time.Microsecond, 0, nil)
		require.Error(t, err, "a TTL under 1ms")
		require.NoError(t, f.LockUnlock(ctx, "k", time.Second), "refused requests leave cfloor serving")
	})
}

// TestFloorCClose: Close ends cfloor's stdin; cfloor exits 0 and is
// reaped, and later calls fail.
func TestFloorCClose(t *testing.T) {
	requireCompiler(t)
	servers := redistest.StartN(t, 3, redistest.Options{})
	f := startFloorCOn(t, servers, time.Second)
	require.NoError(t, f.Close())
	require.NotNil(t, f.cmd.ProcessState)
	assert.Zero(t, f.cmd.ProcessState.ExitCode())
	require.ErrorIs(t, f.LockUnlock(context.Background(), "k", time.Second), errFloorCClosed)
	require.NoError(t, f.Close())
}
