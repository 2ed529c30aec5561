package redlock

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// tlsServer starts a redis-server that also listens with TLS, on the
// port it returns, with a certificate for 127.0.0.1 that pool trusts.
func tlsServer(t *testing.T) (s *redistest.Server, tlsPort string, pool *x509.CertPool) {
	t.Helper()
	cert := redistest.SelfSigned(t)
	// A port the kernel just handed out, as redistest picks its own.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	s = redistest.Start(t, redistest.Options{Args: []string{
		"--tls-port", port, "--tls-cert-file", cert.CertFile, "--tls-key-file", cert.KeyFile,
		"--tls-ca-cert-file", cert.CertFile, "--tls-auth-clients", "no",
	}})
	return s, port, cert.Pool
}

// TestTLSMismatchIsNamed: rediss:// to a server without TLS, and
// redis:// to a TLS port, fail with errors that say which scheme the
// server likely needs, in what New, Masters and a Lock's *Error report;
// the right scheme works. Before, they said "tls: context deadline
// exceeded" (after the whole dial timeout) and "connection reset by
// peer".
func TestTLSMismatchIsNamed(t *testing.T) {
	s, tlsPort, pool := tlsServer(t)
	tlsAddr := "127.0.0.1:" + tlsPort
	base := Config{DisableRestartGuard: true, Tries: 1, Conn: Connection{
		DialTimeout: 500 * time.Millisecond, ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond,
	}}

	t.Run("rediss to TLS works", func(t *testing.T) {
		cfg := base
		cfg.Addrs = []string{"rediss://" + tlsAddr}
		cfg.Conn.TLS = &tls.Config{RootCAs: pool}
		c, err := New(bg, cfg)
		require.NoError(t, err)
		defer c.Close()
		l, err := c.TryLock(bg, "k", time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(bg))
	})
	for _, tc := range []struct {
		name, addr, want string
	}{
		{"rediss to a plain port", "rediss://" + s.Addr(), "is the server without TLS on this port? then use redis://, not rediss://"},
		{"redis to a TLS port", "redis://" + tlsAddr, "is it a TLS port? then use rediss://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.Addrs = []string{tc.addr}
			cfg.Conn.TLS = &tls.Config{RootCAs: pool}
			if tc.addr[:len("rediss")] != "rediss" {
				cfg.Conn.TLS = nil
			}
			c, err := New(bg, cfg)
			if err != nil {
				// A server that answered the ClientHello with RESP: New
				// knows it is no TLS server.
				require.ErrorIs(t, err, ErrMasterUnusable)
				assert.Contains(t, err.Error(), tc.want)
				t.Logf("New: %v", err)
				return
			}
			defer c.Close()
			ms := c.Masters()
			require.Error(t, ms[0].Err)
			assert.Contains(t, ms[0].Err.Error(), tc.want, "Masters")
			t.Logf("Masters: %v", ms[0].Err)
			_, err = c.TryLock(bg, "k", time.Second)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.ErrorIs(t, err, ErrNoQuorum)
			assert.Contains(t, err.Error(), tc.want, "Lock's *Error")
			t.Logf("TryLock: %v", err)
		})
	}
}
