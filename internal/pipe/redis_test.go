package pipe

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// These tests run against a real redis-server; they fail (never skip) when
// it is missing.

func dialT(t *testing.T, opts Options) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func doT(t *testing.T, c *Conn, args ...any) string {
	t.Helper()
	vals, err := c.Do(context.Background(), args...)
	require.NoError(t, err)
	v := vals[0]
	if v.Type == ':' {
		return string(rune('0' + v.Int))
	}
	if v.Null {
		return "<nil>"
	}
	return string(v.Bytes)
}

func TestRealRedisBasics(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	for _, proto := range []int{2, 3} {
		c := dialT(t, Options{Addr: srv.Addr(), Protocol: proto})
		require.Len(t, c.Info().RunID, 40)
		assert.Equal(t, "OK", doT(t, c, "SET", "k", "v"))
		assert.Equal(t, "v", doT(t, c, "GET", "k"))
		assert.Equal(t, "1", doT(t, c, "DEL", "k"))
		assert.Equal(t, "<nil>", doT(t, c, "GET", "k"))
		_, err := c.Do(context.Background(), "NOSUCHCOMMAND")
		require.ErrorContains(t, err, "unknown command")
		assert.Equal(t, "PONG", doT(t, c, "PING"), "an error reply broke the connection")
	}
}

func TestRealRedisACLUserAndDB(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	require.NoError(t, srv.Command("ACL", "SETUSER", "alice", "on", ">wonderland", "~*", "+@all"))
	c := dialT(t, Options{Addr: srv.Addr(), Username: "alice", Password: "wonderland", DB: 5, ClientName: "volley-test"})
	assert.Equal(t, "OK", doT(t, c, "SET", "k", "in5"))
	assert.Equal(t, "volley-test", doT(t, c, "CLIENT", "GETNAME"))
	c0 := dialT(t, Options{Addr: srv.Addr(), Username: "alice", Password: "wonderland", Protocol: 3})
	assert.Equal(t, "<nil>", doT(t, c0, "GET", "k"), "SELECT 5 was not applied")

	_, err := Dial(context.Background(), Options{Addr: srv.Addr(), Username: "alice", Password: "wrong"})
	require.ErrorContains(t, err, "WRONGPASS")
	assert.NotContains(t, err.Error(), "wrong\"")
}

func TestRealRedisRestartReconnects(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr(), ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	before := c.Info().RunID
	srv.Kill()
	_, err := c.Do(context.Background(), "PING")
	var ce *Error
	require.ErrorAs(t, err, &ce, "a request to a dead master must fail")
	require.NoError(t, srv.Restart(false))
	require.Eventually(t, func() bool { return c.Err() == nil }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "PONG", doT(t, c, "PING"))
	assert.NotEqual(t, before, c.Info().RunID, "a restart was not noticed")
	assert.Less(t, c.Info().Uptime, 5*time.Second)
}

func TestRealRedisScriptsLoadedAtEveryConnect(t *testing.T) {
	const script = `return 7`
	const sha = "59b6ab2fbe0ee4b25733de0f62e6cda4899ef8e9" // SHA-1 of script
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr(), Scripts: []string{script},
		ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	assert.Equal(t, "7", doT(t, c, "EVALSHA", sha, "0"))

	// Restarted empty: the reconnect loads it again.
	srv.Kill()
	require.NoError(t, srv.Restart(false))
	require.Eventually(t, func() bool {
		vals, err := c.Do(context.Background(), "EVALSHA", sha, "0")
		return err == nil && vals[0].Int == 7
	}, 10*time.Second, 5*time.Millisecond, "EVALSHA after a restart: not loaded by the reconnect")

	// A user who may not run SCRIPT still connects.
	require.NoError(t, srv.Command("ACL", "SETUSER", "noscript", "on", ">pw", "~*", "+@all", "-script"))
	c2 := dialT(t, Options{Addr: srv.Addr(), Username: "noscript", Password: "pw", Scripts: []string{script}})
	assert.Equal(t, "PONG", doT(t, c2, "PING"))
}

func TestRealRedisSetupRunsBeforeEveryConnectsRequests(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr(), Setup: [][]string{{"INCR", "setups"}},
		ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	assert.Equal(t, "1", doT(t, c, "GET", "setups"))

	// A reconnect runs it again, before the socket takes requests.
	killer := dialT(t, Options{Addr: srv.Addr()})
	doT(t, killer, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	require.Eventually(t, func() bool {
		vals, err := c.Do(context.Background(), "GET", "setups")
		return err == nil && string(vals[0].Bytes) != "1"
	}, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "2", doT(t, c, "GET", "setups"), "a request on the new socket ran after its setup")

	// An error reply fails the connect, naming the command.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, Options{Addr: srv.Addr(), Setup: [][]string{{"NOSUCHCOMMAND"}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "setup NOSUCHCOMMAND")

	_, err = New(Options{Setup: [][]string{{}}})
	assert.ErrorContains(t, err, "Setup[0]")
}

// TestRealRedisPubSub: messages of global and shard channels reach
// OnMessage, in RESP2 and RESP3, and confirmations complete requests.
func TestRealRedisPubSub(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	pub := dialT(t, Options{Addr: srv.Addr()})
	for _, proto := range []int{2, 3} {
		for _, way := range []struct{ sub, unsub, publish string }{
			{"SUBSCRIBE", "UNSUBSCRIBE", "PUBLISH"},
			{"SSUBSCRIBE", "SUNSUBSCRIBE", "SPUBLISH"},
		} {
			got := make(chan string, 4)
			sub := dialT(t, Options{Addr: srv.Addr(), Protocol: proto, OnMessage: func(ch, payload []byte) {
				got <- string(ch) + "=" + string(payload)
			}})
			vals, err := sub.Do(context.Background(), way.sub, "news")
			require.NoError(t, err)
			require.Len(t, vals, 4, "the confirmation completes the request")
			assert.Equal(t, strings.ToLower(way.sub), string(vals[1].Bytes))
			assert.Equal(t, "1", doT(t, pub, way.publish, "news", "hello"))
			select {
			case m := <-got:
				assert.Equal(t, "news=hello", m)
			case <-time.After(5 * time.Second):
				t.Fatalf("RESP%d %s: no message", proto, way.sub)
			}
			_, err = sub.Do(context.Background(), "PING")
			require.NoError(t, err, "PING while subscribed")
			_, err = sub.Do(context.Background(), way.unsub, "news")
			require.NoError(t, err)
			assert.Equal(t, "0", doT(t, pub, way.publish, "news", "unheard"))
			assert.Empty(t, got)
		}
	}
}

func TestRealRedisPausedMasterTimesOut(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr(), ReadTimeout: 100 * time.Millisecond, ReconnectMin: time.Millisecond, ReconnectMax: 10 * time.Millisecond})
	require.NoError(t, srv.Pause())
	_, err := c.Do(context.Background(), "PING")
	require.ErrorIs(t, err, ErrReadTimeout)
	require.NoError(t, srv.Resume())
	require.Eventually(t, func() bool {
		_, err := c.Do(context.Background(), "PING")
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
}

// TestRealRedisOverTLS puts a Go TLS-terminating proxy in front of
// redis-server, so TLS is tested whether or not redis was built with it.
func TestRealRedisOverTLS(t *testing.T) {
	addr, pool, _ := tlsProxy(t)
	_, port, _ := net.SplitHostPort(addr)
	c := dialT(t, Options{Addr: "localhost:" + port, TLS: &tls.Config{RootCAs: pool}})
	assert.Equal(t, "PONG", doT(t, c, "PING"))
	c.Close()

	// An untrusted certificate is a clear dial error.
	_, err := Dial(context.Background(), Options{Addr: "localhost:" + port, TLS: &tls.Config{}})
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, OpTLS, ce.Op)
}

// TestRealServerIdentity: the real-server tests run against the server
// that make test means them to (VOLLEY_EXPECT_SERVER: "redis" or
// "valkey"; VOLLEY_EXPECT_VERSION: its version or a prefix), so that a
// pass meant for one server cannot quietly test another. It also checks
// what the handshake reads from both: mode and role.
func TestRealServerIdentity(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr()})
	assert.Equal(t, "standalone", c.Info().Mode)
	assert.Equal(t, "master", c.Info().Role)
	kind, version := redistest.Identity(doT(t, c, "INFO", "server"))
	t.Logf("server: %s %s", kind, version)
	redistest.ExpectIdentity(t, kind, version)
}
