//go:build linux

package main

import (
	"context"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/volleylock/volley/internal/redistest"
)

// startFloor starts n real masters (a missing redis-server fails the test,
// as redistest.Start does) and a floor over them, one attempt per Lock.
func startFloor(t *testing.T, n int) (*floor, []*goredislib.Client) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	s := Setup{Addrs: redistest.Addrs(servers), MasterTimeout: time.Second, TTL: 10 * time.Second, RetryDelay: 2 * time.Millisecond, Tries: 1}
	c, err := newFloor(s)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c.(*floor), masterClients(t, s.Addrs)
}

// masterClients returns a go-redis client per master, to look at the keys
// a floor leaves; the test's end closes them.
func masterClients(t *testing.T, addrs []string) []*goredislib.Client {
	t.Helper()
	var clients []*goredislib.Client
	for _, a := range addrs {
		cl := goredislib.NewClient(&goredislib.Options{Addr: a})
		t.Cleanup(func() { cl.Close() })
		clients = append(clients, cl)
	}
	return clients
}

// values returns key's value on every master ("" when it has none).
func values(t *testing.T, clients []*goredislib.Client, key string) []string {
	t.Helper()
	var out []string
	for _, cl := range clients {
		v, err := cl.Get(context.Background(), key).Result()
		if err == goredislib.Nil {
			v, err = "", nil
		}
		require.NoError(t, err)
		out = append(out, v)
	}
	return out
}

// count returns how many of vs equal v.
func count(vs []string, v string) int {
	n := 0
	for _, x := range vs {
		if x == v {
			n++
		}
	}
	return n
}

// TestFloorLocks: the floor takes real locks on the masters, excludes a
// second holder, and releases them.
func TestFloorLocks(t *testing.T) {
	f, clients := startFloor(t, 5)
	ctx := context.Background()
	const key = "floor:test:k"

	h := f.NewHolder().(*floorHolder)
	require.NoError(t, h.Lock(ctx, key, 10*time.Second))
	tok := string(h.set.tok[:])
	held := values(t, clients, key)
	assert.GreaterOrEqual(t, count(held, tok), 3, "a quorum holds the floor's token: %q", held)
	assert.Equal(t, len(held), count(held, tok)+count(held, ""), "the others have not set it yet: %q", held)

	other := f.NewHolder().(*floorHolder)
	require.ErrorIs(t, other.Lock(ctx, key, 10*time.Second), errFloorNotAcquired)
	require.Nil(t, other.set, "a failed Lock returns its set to the pool")
	assert.NotEqual(t, tok, string(f.free[0].tok[:]), "every attempt has its own token")
	require.True(t, f.free[0].drain(time.Now().Add(5*time.Second)), "the loser's release was answered")
	assert.GreaterOrEqual(t, count(values(t, clients, key), tok), 3, "the loser's release left the lock alone")

	set := h.set
	require.True(t, set.drain(time.Now().Add(5*time.Second)), "every SET answered")
	assert.Equal(t, len(clients), count(values(t, clients, key), tok), "every master took it")
	require.NoError(t, h.Unlock(ctx))
	require.True(t, set.drain(time.Now().Add(5*time.Second)), "every release answered")
	assert.Equal(t, len(clients), count(values(t, clients, key), ""), "released everywhere")

	// The key is free again, for LockUnlock too.
	require.NoError(t, f.LockUnlock(ctx, key, 10*time.Second))
	for _, s := range f.free {
		require.True(t, s.drain(time.Now().Add(5*time.Second)))
	}
	assert.Equal(t, len(clients), count(values(t, clients, key), ""))
}

// TestFloorPipelined: floor-pipelined completes its pairs and leaves no
// key behind.
func TestFloorPipelined(t *testing.T) {
	f, clients := startFloor(t, 3)
	pairs, failed, el, err := f.Pipelined(context.Background(), "floor:test:pipe:", 10*time.Second, 50*time.Millisecond)
	require.NoError(t, err)
	assert.Positive(t, pairs)
	assert.Zero(t, failed)
	assert.Positive(t, el)
	assert.Zero(t, pairs%floorDepth, "whole batches")
	for _, cl := range clients {
		n, err := cl.DBSize(context.Background()).Result()
		require.NoError(t, err)
		assert.Zero(t, n)
	}
}

// TestFloorConnPartialReads: a connection fed its replies one byte at a
// time drops the stale ones, counts the current ones at their positions,
// and fails on a reply to no command.
func TestFloorConnPartialReads(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	peer := fds[1]
	t.Cleanup(func() { unix.Close(peer) })
	c := &floorConn{fd: fds[0], stale: 2, want: 3}
	t.Cleanup(c.fail)

	yes := make([]int32, 3)
	feed := func(s string) {
		for i := range len(s) {
			_, err := unix.Write(peer, []byte{s[i]})
			require.NoError(t, err)
			c.read(floorOK, yes)
			require.True(t, c.live(), "after %q", s[:i+1])
		}
	}
	feed("+OK\r\n$-1\r\n") // stale: owed to earlier commands, not counted
	assert.Equal(t, []int32{0, 0, 0}, yes)
	assert.Zero(t, c.stale)
	assert.Zero(t, c.got)
	feed("+OK\r\n-ERR x\r\n+OK\r\n")
	assert.Equal(t, []int32{1, 0, 1}, yes)
	assert.Equal(t, 3, c.got)
	assert.False(t, c.pending())

	_, err = unix.Write(peer, []byte(":1\r\n"))
	require.NoError(t, err)
	c.read(floorOK, yes)
	assert.False(t, c.live(), "a reply to no command")
}
