package redlock

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/pipe"
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

// TestTLSMismatchFailsNew: rediss:// to a server without TLS, and
// redis:// to a TLS port, fail New at once (within the first connect
// attempt, not after the dial timeout) with ErrMasterUnusable, in an
// error that says which scheme to use; the right scheme works. Before,
// New succeeded (after the whole dial timeout for the first) and every
// Lock failed.
func TestTLSMismatchFailsNew(t *testing.T) {
	s, tlsPort, pool := tlsServer(t)
	tlsAddr := "127.0.0.1:" + tlsPort
	base := Config{DisableRestartGuard: true, Tries: 1, Conn: Connection{
		DialTimeout: 30 * time.Second, ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond,
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
		{"rediss to a plain port", "rediss://" + s.Addr(), "use redis://, not rediss://, and no TLS config"},
		{"redis to a TLS port", "redis://" + tlsAddr, "use rediss:// or a TLS config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.Addrs = []string{tc.addr}
			if strings.HasPrefix(tc.addr, "rediss://") {
				cfg.Conn.TLS = &tls.Config{RootCAs: pool}
			}
			start := time.Now()
			c, err := New(bg, cfg)
			took := time.Since(start)
			t.Logf("New: %v after %v", err, took)
			require.Nil(t, c)
			require.ErrorIs(t, err, ErrMasterUnusable)
			require.ErrorIs(t, err, pipe.ErrTLSMismatch)
			assert.Contains(t, err.Error(), tc.want)
			assert.Less(t, took, 10*time.Second, "New waited out the dial timeout")
		})
	}
}
