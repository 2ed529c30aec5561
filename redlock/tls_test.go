package redlock

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	s, tlsPort = tlsServerWith(t, cert)
	return s, tlsPort, cert.Pool
}

// tlsServerWith is tlsServer with the certificate cert.
func tlsServerWith(t *testing.T, cert redistest.Cert) (s *redistest.Server, tlsPort string) {
	t.Helper()
	// A port the kernel just handed out, as redistest picks its own.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	s = redistest.Start(t, redistest.Options{Args: []string{
		"--tls-port", port, "--tls-cert-file", cert.CertFile, "--tls-key-file", cert.KeyFile,
		"--tls-ca-cert-file", cert.CertFile, "--tls-auth-clients", "no",
	}})
	return s, port
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

// TestLocksOverTLS: a Client of three TLS masters, whose sockets leave
// the runtime's poller as plain ones do (on Linux), serves many
// goroutines' Locks: each of them on a key of its own, through the
// driver when others hold the masters' claim, and on one shared key,
// which is never held twice at once.
func TestLocksOverTLS(t *testing.T) {
	cert := redistest.SelfSigned(t)
	cfg := Config{DisableRestartGuard: true, Tries: 1 << 20, RetryDelay: time.Millisecond}
	cfg.Conn.TLS = &tls.Config{RootCAs: cert.Pool}
	for range 3 {
		_, port := tlsServerWith(t, cert)
		cfg.Addrs = append(cfg.Addrs, "rediss://127.0.0.1:"+port)
	}
	c, err := New(bg, cfg)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.WaitQuorum(bg))

	var holders, overlaps atomic.Int32
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			own := "own:" + strconv.Itoa(g)
			for range 20 {
				l, err := c.Lock(bg, own, 5*time.Second)
				if !assert.NoError(t, err) {
					return
				}
				assert.NoError(t, l.Unlock(bg))
				l, err = c.Lock(bg, "shared", 5*time.Second)
				if !assert.NoError(t, err) {
					return
				}
				if holders.Add(1) != 1 {
					overlaps.Add(1)
				}
				holders.Add(-1)
				assert.NoError(t, l.Unlock(bg))
			}
		})
	}
	wg.Wait()
	assert.Zero(t, overlaps.Load(), "the shared key was held twice at once")
}
