package redlock

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// TestNewRefusesUnusableMasters: what no retry can fix fails New with an
// error that names the master (and never the password); masters that are
// merely unreachable do not.
func TestNewRefusesUnusableMasters(t *testing.T) {
	good := redistest.Start(t, redistest.Options{})
	locked := redistest.Start(t, redistest.Options{Args: []string{"--requirepass", "s3cret"}})
	cluster := redistest.Start(t, redistest.Options{Args: []string{"--cluster-enabled", "yes"}})
	// A TLS server whose certificate nobody here trusts: the handshake
	// fails verification before any Redis command.
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	defer untrusted.Close()
	replica := redistest.Start(t, redistest.Options{Args: []string{"--replicaof", "127.0.0.1", portOf(t, good.Addr())}})
	open := redistest.Start(t, redistest.Options{})
	tests := []struct {
		name string
		addr string
		cfg  Config
		want string
	}{
		{"wrong password", "redis://:wrong-pw@" + locked.Addr(), Config{}, "WRONGPASS"},
		{"no password", locked.Addr(), Config{}, "NOAUTH"},
		// AUTH <password> (RESP2) to a server without one: it says so.
		{"a password where none is configured", "redis://:wrong-pw@" + open.Addr(), Config{}, "has no password configured, but a password was sent: give none"},
		{"database index refused", "redis://" + good.Addr() + "/99", Config{}, "DB index"},
		{"cluster node", cluster.Addr(), Config{}, "Redis Cluster node"},
		{"replica", replica.Addr(), Config{}, "replica"},
		{"the same server twice", "redis://localhost:" + portOf(t, good.Addr()) + "/2", Config{}, "same server"},
		{"TLS certificate not trusted", "rediss://" + untrusted.Listener.Addr().String(), Config{}, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			tt.cfg.Addrs = []string{good.Addr(), tt.addr, redistest.Start(t, redistest.Options{}).Addr()}
			c, err := New(ctx, tt.cfg)
			if c != nil {
				c.Close()
			}
			require.ErrorIs(t, err, ErrMasterUnusable)
			require.NoError(t, ctx.Err(), "New must fail on its own, not by ctx")
			host, _, _ := net.SplitHostPort(good.Addr())
			assert.Contains(t, err.Error(), host)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "wrong-pw")
		})
	}
}

// TestNewAcceptsUnreachableMasters: a master that is down does not fail
// New (services start before their Redis); Masters reports it, and
// WaitQuorum waits for a quorum of connected masters.
func TestNewAcceptsUnreachableMasters(t *testing.T) {
	up := redistest.StartN(t, 2, redistest.Options{})
	down := redistest.Start(t, redistest.Options{})
	down.Kill()
	cfg := Config{Addrs: []string{up[0].Addr(), down.Addr(), up[1].Addr()}}
	cfg.Conn.ReconnectMin, cfg.Conn.ReconnectMax = time.Millisecond, 20*time.Millisecond
	c, err := New(bg, cfg)
	require.NoError(t, err)
	defer c.Close()
	assert.Error(t, c.Masters()[1].Err)
	require.NoError(t, c.WaitQuorum(bg), "two of three are up")

	up[0].Kill()
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	require.Eventually(t, func() bool { return c.Masters()[0].Err != nil }, 10*time.Second, time.Millisecond)
	err = c.WaitQuorum(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "1 of 3 masters connected")

	require.NoError(t, down.Restart(false))
	ctx2, cancel2 := context.WithTimeout(bg, 10*time.Second)
	defer cancel2()
	require.NoError(t, c.WaitQuorum(ctx2), "a quorum is back")
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}
