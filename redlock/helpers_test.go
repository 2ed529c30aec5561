package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/leakcheck"
	"github.com/volleylock/volley/internal/redistest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// masters starts n real redis-server masters for the test.
func masters(t *testing.T, n int) []*redistest.Server {
	t.Helper()
	return redistest.StartN(t, n, redistest.Options{})
}

// client returns a Client on servers. Fresh masters would be held out by
// the restart guard for MaxTTL, so it is off unless cfg turns it on (the
// guard's own tests set MaxTTL and leave DisableRestartGuard false by
// calling guardedClient).
func client(t *testing.T, servers []*redistest.Server, cfg Config) *Client {
	t.Helper()
	cfg.DisableRestartGuard = true
	return newClient(t, servers, cfg)
}

func newClient(t *testing.T, servers []*redistest.Server, cfg Config) *Client {
	t.Helper()
	cfg.Addrs = redistest.Addrs(servers)
	if cfg.Conn.ReconnectMax == 0 {
		cfg.Conn.ReconnectMin, cfg.Conn.ReconnectMax = time.Millisecond, 20*time.Millisecond
	}
	c, err := New(bg, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

var bg = context.Background()

func redistestStartN(tb testing.TB, n int) []string {
	tb.Helper()
	return redistest.Addrs(redistest.StartN(tb, n, redistest.Options{}))
}
