package pipe

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// tlsConns starts n redis-servers that also listen with TLS and returns
// a Conn to each TLS port, trusting their self-signed certificate.
func tlsConns(t *testing.T, n int) []*Conn {
	t.Helper()
	cert := redistest.SelfSigned(t)
	conns := make([]*Conn, n)
	for i := range conns {
		l, err := net.Listen("tcp", "127.0.0.1:0") // a port the kernel just handed out
		require.NoError(t, err)
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		require.NoError(t, l.Close())
		redistest.Start(t, redistest.Options{Args: []string{
			"--tls-port", port, "--tls-cert-file", cert.CertFile, "--tls-key-file", cert.KeyFile,
			"--tls-ca-cert-file", cert.CertFile, "--tls-auth-clients", "no",
		}})
		conns[i] = dialT(t, Options{
			Addr: "127.0.0.1:" + port, TLS: &tls.Config{RootCAs: cert.Pool},
			ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond,
		})
	}
	return conns
}

// TestDriverServesManyCallersOverTLS: TLS sockets leave the runtime's
// poller as plain ones do (on Linux), and the driver serves them as it
// does plain ones: TestDriverServesManyCallers over TLS.
func TestDriverServesManyCallersOverTLS(t *testing.T) {
	conns := tlsConns(t, 3)
	if runtime.GOOS == "linux" {
		for i, c := range conns {
			c.mu.Lock()
			detached := c.sock != nil && c.sock.det != nil && c.sock.ta != nil
			c.mu.Unlock()
			require.True(t, detached, "conn %d: the TLS socket is detached", i)
		}
	}
	serveManyCallers(t, conns)
}

// tlsProxy serves TLS on a port of its own, with a self-signed
// certificate that pool trusts, and passes what its clients send to a
// plain redis-server, and back, except that it stops reading its clients
// while paused is set: their writes then fill the sockets' buffers. It
// ends with the test.
func tlsProxy(t *testing.T) (addr string, pool *x509.CertPool, paused *atomic.Bool) {
	t.Helper()
	srv := redistest.Start(t, redistest.Options{})
	cert := redistest.SelfSigned(t)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert.TLS}})
	require.NoError(t, err)
	paused = new(atomic.Bool)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			front, err := l.Accept()
			if err != nil {
				return
			}
			back, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				front.Close()
				continue
			}
			mu.Lock()
			open = append(open, front, back)
			mu.Unlock()
			wg.Go(func() {
				defer back.Close()
				buf := make([]byte, 64<<10)
				for {
					for paused.Load() {
						time.Sleep(time.Millisecond)
					}
					n, err := front.Read(buf)
					if n > 0 {
						if _, err := back.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
			wg.Go(func() { defer front.Close(); io.Copy(front, back) })
		}
	})
	return l.Addr().String(), cert.Pool, paused
}

// TestDriverBigWritesOverTLS: driven rounds whose commands the socket's
// buffers cannot take (the master's side stops reading a while), from
// several callers, over TLS: what a write leaves waits in the TLS
// socket's adapter, in order, the writer goroutine flushes it, and every
// caller gets its own answers.
func TestDriverBigWritesOverTLS(t *testing.T) {
	addr, pool, paused := tlsProxy(t)
	c := dialT(t, Options{Addr: addr, TLS: &tls.Config{RootCAs: pool}, ReadTimeout: 10 * time.Second})
	g := NewGroup([]*Conn{c}, 0)
	defer g.Close()
	big := strings.Repeat("x", 1<<20)
	// 4 MB written while the proxy reads nothing: more than a fixed 128 kB
	// send buffer and the proxy's receive buffer hold, so a write leaves
	// ciphertext pending (an autotuned send buffer can reach 4 MB).
	limitSendBuffer(t, c, 64<<10)
	paused.Store(true)
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			b := g.NewBatch(1)
			defer b.Release()
			ty := newTally(1)
			b.Hear = ty.hear
			for round := range 4 {
				ty.reset(1)
				want := fmt.Sprintf("%d/%d/", k, round)
				b.Queue(0, c, resp.AppendCommand(nil, "ECHO", want+big))
				b.Drive(time.Now().Add(30 * time.Second))
				if !assert.Equal(t, WokeDecided, b.Await(nil), "caller %d round %d", k, round) {
					b.End(nil)
					return
				}
				b.End(nil)
				ty.mu.Lock()
				got := ty.replies[0]
				assert.True(t, got == want+big, "caller %d round %d: a reply of %d bytes starting %.12q", k, round, len(got), got)
				ty.mu.Unlock()
			}
		})
	}
	if runtime.GOOS == "linux" {
		c.mu.Lock()
		ta := c.sock.ta
		c.mu.Unlock()
		require.NotNil(t, ta, "the TLS socket is detached")
		// A write left ciphertext waiting: it is there, or a flush holds
		// the adapter's lock while it waits for room (over three looks;
		// a write holds it for microseconds).
		var held atomic.Int32
		assert.Eventually(t, func() bool {
			if !ta.mu.TryLock() {
				return held.Add(1) >= 3
			}
			defer ta.mu.Unlock()
			held.Store(0)
			return len(ta.pending) > 0
		}, 10*time.Second, 10*time.Millisecond, "a write left ciphertext waiting")
	}
	time.Sleep(50 * time.Millisecond)
	paused.Store(false)
	wg.Wait()
}
