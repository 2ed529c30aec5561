package pipe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/resp"
)

// A TLS mismatch, proved. A connect that fails as a mismatch would (a
// plain handshake whose first reply is the connection closed, see
// isTLSPort; a TLS handshake left unanswered or failed as notTLS says)
// asks the server again, on a connection of its own, in the other
// protocol: a TLS handshake, or a PING in clear. An answer in that
// protocol proves the mismatch, and the connect fails with
// ErrTLSMismatch, which no retry can mend. Without an answer, the error
// only hints at a mismatch (hintTLS, hintNotTLS): the server may be down,
// or slow.
//
// A plain Redis leaves a ClientHello unanswered (it waits for the end of
// an inline command, which it looks for up to the first NUL byte), so a
// TLS handshake that has no answer within ReadTimeout is not waited out
// for the whole DialTimeout before the PING is sent: the PING goes
// meanwhile, and an answer ends the handshake.

// errPlainPort ends a TLS handshake whose server answered the PING in
// clear.
var errPlainPort = errors.New("the server answered a PING without TLS")

// dial opens a connection to the server with Options.Dialer, within ctx.
func (c *Conn) dial(ctx context.Context) (net.Conn, error) {
	dial := c.opts.Dialer
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return dial(ctx, c.opts.Network, c.opts.Addr)
}

// handshakeTLS runs tc's handshake within ctx. When the server has not
// answered it within ReadTimeout, or the handshake failed as against a
// server without TLS (see notTLS), the server is sent a PING in clear: if
// it answers, the handshake is abandoned and the error wraps
// ErrTLSMismatch. A failure that only looks like a mismatch carries
// hintNotTLS.
func (c *Conn) handshakeTLS(ctx context.Context, tc *tls.Conn) error {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var plain, probed atomic.Bool
	probeDone := make(chan struct{})
	t := time.AfterFunc(c.opts.ReadTimeout, func() {
		defer close(probeDone)
		probed.Store(true)
		if c.speaksRESP(hctx) {
			plain.Store(true)
			cancel(errPlainPort)
		}
	})
	err := tc.HandshakeContext(hctx)
	if !t.Stop() {
		cancel(nil) // ends a probe under way
		<-probeDone
	}
	switch {
	case err == nil:
		return nil
	case plain.Load():
		return fmt.Errorf("%w: %s", ErrTLSMismatch, mismatchPlain)
	case !notTLS(err):
		return err
	case !probed.Load() && c.speaksRESP(ctx):
		return fmt.Errorf("%w: %s", ErrTLSMismatch, mismatchPlain)
	}
	return fmt.Errorf("%w (%s)", err, hintNotTLS)
}

// probe opens a connection of its own to the server and runs ask on it,
// all within ReadTimeout and ctx; it reports ask's answer, or false if
// the connection could not be opened.
func (c *Conn) probe(ctx context.Context, ask func(ctx context.Context, nc net.Conn) bool) bool {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadTimeout)
	defer cancel()
	nc, err := c.dial(ctx)
	if err != nil {
		return false
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	return ask(ctx, nc)
}

// speaksRESP reports whether the server answers a PING sent in clear with
// a RESP reply (+PONG, or an error such as -NOAUTH or -DENIED).
func (c *Conn) speaksRESP(ctx context.Context) bool {
	return c.probe(ctx, func(_ context.Context, nc net.Conn) bool {
		if _, err := nc.Write([]byte("PING\r\n")); err != nil {
			return false
		}
		// Room for the longest of Redis' answers to a first command
		// (protected mode's -DENIED is about 1 KiB).
		buf := make([]byte, 4096)
		n := 0
		for n < len(buf) {
			m, err := nc.Read(buf[n:])
			n += m
			_, _, perr := resp.Parse(nil, buf[:n], resp.Limits{})
			switch {
			case perr == nil:
				return true
			case !errors.Is(perr, resp.ErrIncomplete), err != nil:
				return false
			}
		}
		return false
	})
}

// speaksTLS reports whether the server answers a TLS handshake: it
// completes, or the server ends it with an alert, which only TLS speaks.
// Nothing is sent over it, so its certificate is not verified.
func (c *Conn) speaksTLS(ctx context.Context) bool {
	return c.probe(ctx, func(ctx context.Context, nc net.Conn) bool {
		err := tls.Client(nc, &tls.Config{InsecureSkipVerify: true}).HandshakeContext(ctx)
		var alert tls.AlertError
		return err == nil || errors.As(err, &alert)
	})
}
