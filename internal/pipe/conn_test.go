package pipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/resp"
)

func TestHandshakeInfo(t *testing.T) {
	c, _, _ := newPipeConn(t, Options{})
	info := c.Info()
	require.NotNil(t, info)
	assert.Equal(t, "0123456789abcdef0123456789abcdef01234567", info.RunID)
	assert.Equal(t, 42*time.Second, info.Uptime)
	assert.Equal(t, uint64(1), info.Generation)
}

func TestHandshakeCommands(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		script func(p *peer)
	}{
		{"resp2 auth name db", Options{Password: "pw", ClientName: "me", DB: 3}, func(p *peer) {
			p.expect("AUTH", "pw")
			p.expect("CLIENT", "SETNAME", "me")
			p.expect("SELECT", "3")
			p.expectInfo()
			p.send("+OK\r\n+OK\r\n+OK\r\n" + infoReply)
		}},
		{"resp2 acl user", Options{Username: "alice", Password: "pw"}, func(p *peer) {
			p.expect("AUTH", "alice", "pw")
			p.expectInfo()
			p.send("+OK\r\n" + infoReply)
		}},
		{"resp3", Options{Protocol: 3, Password: "pw", ClientName: "me"}, func(p *peer) {
			p.expect("HELLO", "3", "AUTH", "default", "pw", "SETNAME", "me")
			p.expectInfo()
			p.send("%1\r\n+proto\r\n:3\r\n" + infoReply)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newPipeDialer()
			tt.opts.Dialer, tt.opts.Addr = d.dial, "pipe:1"
			c, err := New(tt.opts)
			require.NoError(t, err)
			defer c.Close()
			tt.script(d.accept(t))
			require.NoError(t, c.WaitReady(context.Background()))
		})
	}
}

func TestHandshakeErrorHidesPassword(t *testing.T) {
	d := newPipeDialer()
	c, err := New(Options{Dialer: d.dial, Addr: "pipe:1", Password: "hunter2", ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	require.NoError(t, err)
	defer c.Close()
	p := d.accept(t)
	p.expect("AUTH", "hunter2")
	p.expectInfo()
	p.send("-WRONGPASS invalid username-password pair or user is disabled.\r\n" + infoReply)
	err = c.WaitReady(context.Background())
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, OpHandshake, ce.Op)
	assert.Contains(t, err.Error(), "AUTH: WRONGPASS")
	assert.NotContains(t, err.Error(), "hunter2")

	// Requests fail fast with that error while down.
	_, err = c.Do(context.Background(), "PING")
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "pipe:1", ce.Addr)
}

func TestDoAndServerErrorIsNotFatal(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.expect("GET", "k")
		p.send("$3\r\nval\r\n")
		p.expect("EVALSHA", "abc", "0")
		p.send("-NOSCRIPT No matching script. Please use EVAL.\r\n")
		p.expect("PING")
		p.send("+PONG\r\n")
	}()
	vals, err := c.Do(context.Background(), "GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "val", string(vals[0].Bytes))

	vals, err = c.Do(context.Background(), "EVALSHA", "abc", 0)
	var se *resp.ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "NOSCRIPT", se.Prefix)
	assert.True(t, vals[0].IsError())

	vals, err = c.Do(context.Background(), "PING")
	require.NoError(t, err, "an error reply must not break the connection")
	assert.Equal(t, "PONG", string(vals[0].Bytes))
	<-done
}

func TestDoRejectsBadArgument(t *testing.T) {
	c, _, _ := newPipeConn(t, Options{})
	_, err := c.Do(context.Background(), "SET", "k", 1.5)
	require.ErrorContains(t, err, "argument 2")
}

func TestFIFOUnderConcurrency(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	// The peer echoes each GET's key back as the value, in order.
	go func() {
		for {
			vals, err := p.rd.ReadReply()
			if err != nil {
				return
			}
			key := vals[2].Bytes
			if _, err := p.nc.Write(resp.AppendBulk(nil, key)); err != nil {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				key := fmt.Sprintf("g%d-%d", g, i)
				vals, err := c.Do(context.Background(), "GET", key)
				if err != nil {
					errs <- err
					return
				}
				if string(vals[0].Bytes) != key {
					errs <- fmt.Errorf("asked %s, got %s", key, vals[0].Bytes)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCoalescesPendingIntoOneWrite(t *testing.T) {
	c, p, writes := newCountedConn(t)

	// The first request is written by its caller, which blocks in Write on
	// the pipe until the peer reads; the next 99 queue up behind it.
	const n = 100
	reqs := make([]*Request, n)
	notify := make(chan *Request, n)
	for i := range reqs {
		reqs[i] = NewRequest()
		reqs[i].Cmd = resp.AppendCommand(reqs[i].Cmd, "GET", strconv.Itoa(i))
		reqs[i].Tag = i
	}
	go c.Send(reqs[0], notify)
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.sock != nil && c.sock.writing
	}, 5*time.Second, time.Millisecond)
	for _, r := range reqs[1:] {
		c.Send(r, notify)
	}
	for i := 0; i < n; i++ {
		p.expect("GET", strconv.Itoa(i))
	}
	assert.LessOrEqual(t, writes.Load(), int32(2), "100 pending requests took more than 2 writes")
	for i := 0; i < n; i++ {
		p.send(":" + strconv.Itoa(i) + "\r\n")
	}
	for i := 0; i < n; i++ {
		r := <-notify
		require.NoError(t, r.Err())
		assert.Equal(t, int64(r.Tag), r.Reply()[0].Int, "reply matched to the wrong request")
		r.Release()
	}
}

func TestCancelledCallerKeepsOrder(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	r1 := NewRequest()
	r1.Cmd = resp.AppendCommand(r1.Cmd, "GET", "a")
	read := make(chan struct{})
	go func() { p.expect("GET", "a"); close(read) }()
	c.Send(r1, nil)
	<-read
	cancel()
	err := c.Wait(ctx, r1)
	require.ErrorIs(t, err, context.Canceled)
	var ce *Error
	require.ErrorAs(t, err, &ce)

	go func() {
		p.expect("GET", "b")
		p.send("$1\r\na\r\n$1\r\nb\r\n") // the abandoned reply first, then ours
	}()
	vals, err := c.Do(context.Background(), "GET", "b")
	require.NoError(t, err)
	assert.Equal(t, "b", string(vals[0].Bytes), "the abandoned request's reply went to the next caller")
	require.NoError(t, c.Err(), "a cancelled caller must not close the connection")
}

func TestPeerCloseFailsAllPendingThenReconnects(t *testing.T) {
	c, d, p := newPipeConn(t, Options{ReconnectMin: time.Millisecond, ReconnectMax: 2 * time.Millisecond})
	const n = 10
	notify := make(chan *Request, n)
	go func() {
		for i := 0; i < n; i++ {
			p.expect("PING")
		}
		p.nc.Close()
	}()
	for i := 0; i < n; i++ {
		r := NewRequest()
		r.Cmd = resp.AppendCommand(r.Cmd, "PING")
		c.Send(r, notify)
	}
	for i := 0; i < n; i++ {
		r := <-notify
		var ce *Error
		require.ErrorAs(t, r.Err(), &ce)
		assert.Equal(t, "pipe:1", ce.Addr)
		assert.Equal(t, OpRead, ce.Op)
		r.Release()
	}
	// Back once the master is.
	p2 := d.accept(t)
	p2.handshake()
	require.Eventually(t, func() bool { return c.Err() == nil }, 5*time.Second, time.Millisecond)
	go func() { p2.expect("PING"); p2.send("+PONG\r\n") }()
	_, err := c.Do(context.Background(), "PING")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), c.Info().Generation)
}

func TestGarbageReplyIsStickyProtocolError(t *testing.T) {
	c, _, p := newPipeConn(t, Options{ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	go func() { p.expect("PING"); p.send("?what\r\n") }()
	_, err := c.Do(context.Background(), "PING")
	require.ErrorIs(t, err, resp.ErrProtocol)
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, OpRead, ce.Op)
	// Sticky: the next request fails at once with the same error.
	_, err2 := c.Do(context.Background(), "PING")
	require.ErrorIs(t, err2, resp.ErrProtocol)
}

func TestUnexpectedReplyFails(t *testing.T) {
	c, _, p := newPipeConn(t, Options{ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	p.send("+surprise\r\n")
	require.Eventually(t, func() bool { return errors.Is(c.Err(), ErrUnexpectedReply) }, 5*time.Second, time.Millisecond)
}

func TestHungMasterIsRecycled(t *testing.T) {
	c, d, p := newPipeConn(t, Options{ReadTimeout: 60 * time.Millisecond, ReconnectMin: time.Millisecond, ReconnectMax: time.Millisecond})
	go p.expect("PING") // read, never answer
	start := time.Now()
	_, err := c.Do(context.Background(), "PING")
	require.ErrorIs(t, err, ErrReadTimeout)
	assert.GreaterOrEqual(t, time.Since(start), 60*time.Millisecond)
	p2 := d.accept(t)
	p2.handshake()
	require.Eventually(t, func() bool { return c.Err() == nil }, 5*time.Second, time.Millisecond)
}

func TestPushIsSkipped(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	go func() {
		p.expect("PING")
		p.send(">2\r\n+invalidate\r\n*1\r\n$1\r\nk\r\n+PONG\r\n")
	}()
	vals, err := c.Do(context.Background(), "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", string(vals[0].Bytes))
}

func TestCloseFailsPendingAndLaterRequests(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	go io.Copy(io.Discard, p.nc)
	r := NewRequest()
	r.Cmd = resp.AppendCommand(r.Cmd, "PING")
	c.Send(r, nil)
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.Wait(context.Background(), r), ErrClosed)
	_, err := c.Do(context.Background(), "PING")
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, c.Close(), "Close twice")
}

func TestDialFailureFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close() // nobody listens there now
	_, err = Dial(context.Background(), Options{Addr: addr, DialTimeout: time.Second})
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, OpDial, ce.Op)
	assert.Equal(t, addr, ce.Addr)
}

func TestCloseDuringDial(t *testing.T) {
	c, err := New(Options{Addr: "pipe:1", Dialer: func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.WaitReady(context.Background()), ErrClosed)
}

// A caller's cancellation, with or without a cause of its own, matches
// context.Canceled and the cause, and leaves the connection usable.
func TestCancelWithCause(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	go p.expect("GET", "k") // read, answer never
	mine := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel(mine)
	}()
	_, err := c.Do(ctx, "GET", "k")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, mine)
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, OpWait, ce.Op)
	assert.True(t, ce.ConnUsable())
	assert.NoError(t, c.Err())

	// WaitReady on a Conn still dialing.
	hang := func(ctx context.Context, _, _ string) (net.Conn, error) { <-ctx.Done(); return nil, ctx.Err() }
	c2, err := New(Options{Addr: "pipe:2", Dialer: hang})
	require.NoError(t, err)
	defer c2.Close()
	err = c2.WaitReady(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, mine)
}

func TestOnConnectSeesEveryConnect(t *testing.T) {
	gens := make(chan uint64, 4)
	c, d, p := newPipeConn(t, Options{ReconnectMin: time.Millisecond, ReconnectMax: time.Millisecond,
		OnConnect: func(info *ServerInfo) { gens <- info.Generation }})
	assert.Equal(t, uint64(1), <-gens)
	p.nc.Close()
	p2 := d.accept(t)
	p2.handshake()
	assert.Equal(t, uint64(2), <-gens)
	assert.Equal(t, uint64(2), c.Info().Generation)
}

// A pub/sub Conn hands messages to OnMessage, in RESP2 arrays and RESP3
// pushes alike, shard channels' too, and pairs every other reply with its
// request.
func TestOnMessageTakesMessagesNotReplies(t *testing.T) {
	got := make(chan string, 4)
	c, _, p := newPipeConn(t, Options{OnMessage: func(ch, payload []byte) { got <- string(ch) + "=" + string(payload) }})
	go func() {
		p.expect("SUBSCRIBE", "a")
		p.send("*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$2\r\nm0\r\n") // before the confirmation
		p.send("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n")
		p.send(">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$2\r\nm1\r\n")
		p.send("*3\r\n$8\r\nsmessage\r\n$1\r\nb\r\n$2\r\nm2\r\n") // a shard channel's
		p.expect("PING")
		p.send("*2\r\n$4\r\npong\r\n$0\r\n\r\n")
	}()
	vals, err := c.Do(context.Background(), "SUBSCRIBE", "a")
	require.NoError(t, err)
	assert.Equal(t, "subscribe", string(vals[1].Bytes))
	vals, err = c.Do(context.Background(), "PING")
	require.NoError(t, err)
	assert.Equal(t, "pong", string(vals[1].Bytes))
	assert.Equal(t, "a=m0", <-got)
	assert.Equal(t, "a=m1", <-got)
	assert.Equal(t, "b=m2", <-got)
}

// TestReplyCheckStopsRepliesOutOfStep plays a master whose first reply had
// its array length corrupted (*2 read as *3): it swallows the second
// request's reply, and the second request would be handed the third's.
// Without a Check that is what happens; with one the socket fails at the
// first reply, and no request gets another's answer.
func TestReplyCheckStopsRepliesOutOfStep(t *testing.T) {
	// {holder, pttl}: an array of two, flattened to three values.
	pair := func(v []resp.Value) bool {
		return v[0].IsError() || v[0].Type == resp.TypeArray && v[0].Int == 2 && len(v) == 3
	}
	integer := func(v []resp.Value) bool { return len(v) == 1 && v[0].Type == resp.TypeInteger }
	const outOfStep = "*3\r\n:2\r\n$3\r\nabc\r\n:1\r\n:5\r\n"
	for _, checked := range []bool{false, true} {
		t.Run(map[bool]string{false: "unchecked", true: "checked"}[checked], func(t *testing.T) {
			c, _, p := newPipeConn(t, Options{ReconnectMin: time.Hour, ReconnectMax: time.Hour})
			notify := make(chan *Request, 3)
			reqs := make([]*Request, 3)
			for i, check := range []func([]resp.Value) bool{pair, integer, integer} {
				r := NewRequest()
				r.Cmd = resp.AppendCommand(r.Cmd[:0], "GET", "k")
				r.Tag = i
				if checked {
					SetCheck(r, check)
				}
				reqs[i] = r
			}
			go func() {
				for range reqs {
					p.expect("GET", "k")
				}
				p.send(outOfStep)
			}()
			for _, r := range reqs {
				c.Send(r, notify)
			}
			for range reqs {
				select {
				case <-notify:
				case <-time.After(5 * time.Second):
					t.Fatal("a request did not complete")
				}
			}
			if !checked {
				// The hazard the Check is for: the second request reads the
				// third's answer as its own.
				require.NoError(t, reqs[1].Err())
				assert.Equal(t, int64(5), reqs[1].Reply()[0].Int)
			} else {
				for i, r := range reqs {
					require.ErrorIs(t, r.Err(), ErrReplyMismatch, "request %d", i)
					var ce *Error
					require.ErrorAs(t, r.Err(), &ce)
					assert.Equal(t, OpRead, ce.Op)
				}
				assert.ErrorIs(t, c.Err(), ErrReplyMismatch)
			}
			for _, r := range reqs {
				r.Release()
			}
		})
	}
}

// TestSendWithOneWrite: SendWith writes the request and the command that
// follows it in one write on an idle socket; the follower's answer is read
// and dropped, and the next request gets its own answer.
func TestSendWithOneWrite(t *testing.T) {
	c, p, writes := newCountedConn(t)

	notify := make(chan *Request, 2)
	r, then := NewRequest(), NewRequest()
	r.Cmd = resp.AppendCommand(r.Cmd, "DELIFEQ", "k", "t")
	then.Cmd = resp.AppendCommand(then.Cmd, "SPUBLISH", "ch", "id")
	go c.SendWith(r, notify, then)
	p.expect("DELIFEQ", "k", "t")
	p.expect("SPUBLISH", "ch", "id")
	assert.Equal(t, int32(1), writes.Load(), "the pair took more than one write")
	next := NewRequest()
	next.Cmd = resp.AppendCommand(next.Cmd, "GET", "k")
	go c.Send(next, notify)
	p.expect("GET", "k")
	p.send(":1\r\n:0\r\n$-1\r\n")
	got := <-notify
	require.Same(t, r, got)
	require.NoError(t, got.Err())
	assert.Equal(t, int64(1), got.Reply()[0].Int)
	got.Release()
	got = <-notify
	require.Same(t, next, got)
	assert.True(t, got.Reply()[0].Null, "the follower's answer went to the next request")
	got.Release()
}

// TestServerIdentity: the server's name and version from INFO server.
func TestServerIdentity(t *testing.T) {
	for _, tc := range []struct {
		info, server, version string
		at84, at90            bool
	}{
		{"redis_version:7.0.15\r\n", "redis", "7.0.15", false, false},
		{"redis_version:8.6.3\r\n", "redis", "8.6.3", true, false},
		{"redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n", "valkey", "9.1.2", true, true},
		{"redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.1\r\n", "valkey", "8.1.1", false, false},
		{"redis_version:255.255.255\r\n", "redis", "255.255.255", true, true},
		{"redis_version:x.y\r\n", "redis", "x.y", false, false},
		{"redis_version:8\r\n", "redis", "8", false, false},
	} {
		text := "# Server\r\n" + tc.info + "run_id:0123456789abcdef0123456789abcdef01234567\r\nuptime_in_seconds:1\r\n"
		var info ServerInfo
		require.NoError(t, parseInfo(resp.Value{Type: resp.TypeBulk, Bytes: []byte(text)}, &info))
		assert.Equal(t, tc.server, info.Server)
		assert.Equal(t, tc.version, info.Version)
		assert.Equal(t, tc.at84, info.VersionAtLeast(8, 4), "%s at least 8.4", tc.version)
		assert.Equal(t, tc.at90, info.VersionAtLeast(9, 0), "%s at least 9.0", tc.version)
	}
}
