package pipe

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/leakcheck"
	"github.com/volleylock/volley/resp"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// pipeDialer hands out the client ends of net.Pipe pairs and sends the
// server ends to peers, one per dial.
type pipeDialer struct {
	peers chan net.Conn
	dials atomic.Int32
}

func newPipeDialer() *pipeDialer { return &pipeDialer{peers: make(chan net.Conn, 16)} }

func (d *pipeDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	d.dials.Add(1)
	client, server := net.Pipe()
	select {
	case d.peers <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// peer is the scripted server end of a pipe.
type peer struct {
	t  *testing.T
	nc net.Conn
	rd *resp.Reader
}

func (d *pipeDialer) accept(t *testing.T) *peer {
	t.Helper()
	select {
	case nc := <-d.peers:
		t.Cleanup(func() { nc.Close() })
		return &peer{t: t, nc: nc, rd: resp.NewReader(nc, 0, resp.Limits{})}
	case <-time.After(5 * time.Second):
		t.Fatal("no dial within 5s")
		return nil
	}
}

// expect reads one command and checks its arguments. Peers run in their own
// goroutines, so it reports with assert (t.Errorf), never t.Fatal.
func (p *peer) expect(args ...string) bool {
	p.t.Helper()
	p.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	vals, err := p.rd.ReadReply()
	if !assert.NoError(p.t, err) {
		return false
	}
	got := make([]string, 0, len(vals))
	for _, v := range vals[1:] {
		got = append(got, string(v.Bytes))
	}
	return assert.Equal(p.t, args, got)
}

func (p *peer) send(raw string) bool {
	p.t.Helper()
	p.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := p.nc.Write([]byte(raw))
	return assert.NoError(p.t, err)
}

// infoReply answers the handshake's INFO server and INFO replication.
var infoReply = string(resp.AppendBulkString(nil,
	"# Server\r\nredis_mode:standalone\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\nuptime_in_seconds:42\r\n\r\n")) +
	string(resp.AppendBulkString(nil, "# Replication\r\nrole:master\r\n"))

// expectInfo reads the handshake's INFO server and INFO replication.
func (p *peer) expectInfo() {
	p.t.Helper()
	p.expect("INFO", "server")
	p.expect("INFO", "replication")
}

// handshake plays a protocol-2 master with no auth, no db, no name.
func (p *peer) handshake() {
	p.t.Helper()
	p.expectInfo()
	p.send(infoReply)
}

// newPipeConn returns a Conn connected to a scripted peer.
func newPipeConn(t *testing.T, opts Options) (*Conn, *pipeDialer, *peer) {
	t.Helper()
	d := newPipeDialer()
	opts.Dialer = d.dial
	if opts.Addr == "" {
		opts.Addr = "pipe:1"
	}
	c, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	p := d.accept(t)
	p.handshake()
	require.NoError(t, c.WaitReady(context.Background()))
	return c, d, p
}

// newCountedConn is newPipeConn (with default Options) whose writes to
// the socket are counted, from 0 after the handshake.
func newCountedConn(t *testing.T) (*Conn, *peer, *atomic.Int32) {
	t.Helper()
	writes := new(atomic.Int32)
	d := newPipeDialer()
	c, err := New(Options{Addr: "pipe:1", Dialer: func(ctx context.Context, n, a string) (net.Conn, error) {
		nc, err := d.dial(ctx, n, a)
		return countingConn{nc, writes}, err
	}})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	p := d.accept(t)
	p.handshake()
	require.NoError(t, c.WaitReady(context.Background()))
	writes.Store(0)
	return c, p, writes
}

// newLateConn returns a Conn on a scripted peer that is late (see
// Conn.late): its PING (sent) waits for an answer that the peer gives,
// followed by what then reads and answers, only when catchUp is called;
// catchUp returns once the peer is done, and the PING answered.
func newLateConn(t *testing.T, then func(p *peer)) (c *Conn, catchUp func()) {
	t.Helper()
	c, _, p := newPipeConn(t, Options{ReadTimeout: time.Hour})
	answer := make(chan struct{})
	peerDone := make(chan struct{})
	go func() {
		defer close(peerDone)
		p.expect("PING")
		<-answer
		p.send("+PONG\r\n")
		then(p)
	}()
	ping := NewRequest()
	ping.Cmd = resp.AppendCommand(ping.Cmd[:0], "PING")
	c.Send(ping, nil)
	c.mu.Lock()
	oldestRequest(c).sent = monoNow() - int64(2*time.Hour) // late, but not stalled
	c.progress = monoNow()
	c.mu.Unlock()
	return c, func() {
		close(answer)
		<-peerDone
		require.NoError(t, c.Wait(context.Background(), ping))
		ping.Release()
	}
}

// countingConn counts the Write calls on a net.Conn.
type countingConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// oldestRequest returns the Request of c's oldest entry in flight (c.mu
// held).
func oldestRequest(c *Conn) *Request { return c.inflight.buf[c.inflight.head].r }
