package pipe

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// testServer accepts connections on loopback and serves each with serve
// until the test ends.
func testServer(t *testing.T, serve func(nc net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, nc)
			mu.Unlock()
			wg.Go(func() { serve(nc) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, nc := range open {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// plainRedis answers an inline PING with +PONG and, as Redis does, stays
// silent on what it cannot read to a line's end (a ClientHello): the TLS
// handshake is never answered.
func plainRedis(nc net.Conn) {
	defer nc.Close()
	rd := bufio.NewReader(nc)
	line, err := rd.ReadString('\n')
	if err == nil && line == "PING\r\n" {
		io.WriteString(nc, "+PONG\r\n")
	}
	io.Copy(io.Discard, rd)
}

// tlsPort speaks only TLS: a plain command fails its handshake, and it
// closes the connection.
func tlsPort(t *testing.T) func(nc net.Conn) {
	cert := redistest.SelfSigned(t)
	return func(nc net.Conn) {
		tc := tls.Server(nc, &tls.Config{Certificates: []tls.Certificate{cert.TLS}})
		defer tc.Close()
		if tc.Handshake() == nil {
			io.Copy(io.Discard, tc)
		}
	}
}

// TestTLSMismatchIsProved: a connect that fails as a TLS mismatch asks the
// server in the other protocol, and when it answers, fails with
// ErrTLSMismatch saying which scheme to use, within the attempt (a plain
// server that never answers a ClientHello does not cost the whole
// DialTimeout); a server that answers in neither gets the hint alone.
func TestTLSMismatchIsProved(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(nc net.Conn)
		tls   bool
		op    Op
		want  string
		sure  bool
	}{
		{"TLS to a plain server", plainRedis, true, OpTLS, "use redis://, not rediss://", true},
		{"plain to a TLS server", tlsPort(t), false, OpHandshake, "use rediss:// or a TLS config", true},
		{"TLS to a silent server", func(nc net.Conn) { defer nc.Close(); io.Copy(io.Discard, nc) }, true, OpTLS, hintNotTLS, false},
		{"plain to a server that hangs up", func(nc net.Conn) { nc.Close() }, false, OpHandshake, hintTLS, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The probe in the other protocol has ReadTimeout: a TLS
			// handshake under the race detector and CPU hogs can take
			// more than 50ms, and that is not what the test asks.
			opts := Options{Addr: testServer(t, tc.serve), DialTimeout: 30 * time.Second, ReadTimeout: time.Second}
			if !tc.sure {
				opts.DialTimeout = time.Second // the silent server costs it
				opts.ReadTimeout = 50 * time.Millisecond
			}
			if tc.tls {
				opts.TLS = &tls.Config{InsecureSkipVerify: true}
			}
			c, err := New(opts)
			require.NoError(t, err)
			defer c.Close()
			start := time.Now()
			err = c.WaitReady(context.Background())
			took := time.Since(start)
			t.Logf("%v after %v", err, took)
			var ce *Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.op, ce.Op)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, tc.sure, errors.Is(err, ErrTLSMismatch))
			if tc.sure {
				assert.Less(t, took, 10*time.Second, "waited out the dial timeout")
			}
		})
	}
}
