package pipe

import (
	"context"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// These tests run against real redis-servers. On Linux the Conns' sockets
// are detached and a Poller claims them; elsewhere Claim must say no, and
// everything goes through the reader goroutines as before.

// pollerConns dials n masters and returns their Conns and a Poller over
// them, closed when the test ends.
func pollerConns(t *testing.T, n int) ([]*Conn, *poller) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	conns := make([]*Conn, n)
	for i, s := range servers {
		conns[i] = dialT(t, Options{Addr: s.Addr(), ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	}
	p := newPoller(conns, 0)
	t.Cleanup(p.close)
	return conns, p
}

// role returns who reads c's socket now.
func role(c *Conn) readerRole {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock == nil {
		return readNone
	}
	return c.sock.reading
}

// burst sends cmd to every Conn with notify and returns the requests.
func burst(conns []*Conn, notify chan *Request, cmd ...string) []*Request {
	reqs := make([]*Request, len(conns))
	for i, c := range conns {
		r := NewRequest()
		r.Cmd = resp.AppendCommand(r.Cmd[:0], cmd...)
		r.Tag = i
		reqs[i] = r
		c.Send(r, notify)
	}
	return reqs
}

// pollFor polls until want requests arrived on notify (or 5s passed) and
// returns them. As Poll's contract says, once the claim has polled its
// share it releases the claim and waits for the rest on notify: held
// reports whether the claim still holds (the caller then Releases).
func pollFor(t *testing.T, p *poller, notify chan *Request, want int) (got []*Request, held bool) {
	t.Helper()
	held = true
	deadline := time.After(5 * time.Second)
	for len(got) < want {
		if held {
			select {
			case r := <-notify:
				got = append(got, r)
				continue
			default:
			}
			if !p.poll(time.Millisecond) {
				p.release()
				held = false
			}
			continue
		}
		select {
		case r := <-notify:
			got = append(got, r)
		case <-deadline:
			require.Len(t, got, want, "replies")
		}
	}
	return got, held
}

// releaseIf releases p's claim if it still holds.
func releaseIf(p *poller, held bool) {
	if held {
		p.release()
	}
}

func TestPollerCallerReadsItsOwnReplies(t *testing.T) {
	conns, p := pollerConns(t, 3)
	if runtime.GOOS != "linux" {
		require.False(t, p.tryClaim(), "a Poller claims only detached sockets, on Linux")
		return
	}
	for i, c := range conns {
		c.mu.Lock()
		assert.NotNil(t, c.sock.det, "conn %d: a TCP socket is detached", i)
		c.mu.Unlock()
	}
	notify := make(chan *Request, len(conns))
	for round := range 3 {
		// The previous round's replies may have gone to the reader goroutine
		// (a poll that waited its share under load hands them over); it lets
		// go of the socket once nothing is owed.
		require.Eventually(t, p.tryClaim, 5*time.Second, time.Millisecond, "round %d", round)
		for _, c := range conns {
			assert.Equal(t, readByCaller, role(c))
		}
		burst(conns, notify, "SET", "k", strconv.Itoa(round))
		got, held := pollFor(t, p, notify, len(conns))
		releaseIf(p, held)
		for _, r := range got {
			require.NoError(t, r.Err(), "round %d, master %d", round, r.Tag)
			assert.Equal(t, "OK", string(r.Reply()[0].Bytes))
			r.Release()
		}
		for _, c := range conns {
			assert.Eventually(t, func() bool { return role(c) == readNone }, 5*time.Second, time.Millisecond, "nothing owed: nobody reads")
		}
	}
	assert.Equal(t, "2", doT(t, conns[0], "GET", "k"), "a request after the claims goes through the reader")
}

func TestPollerLeavesUnwaitedRepliesForLater(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Poller claims only on Linux") // TestPollerCallerReadsItsOwnReplies checks that it says no
	}
	conns, p := pollerConns(t, 3)
	decideAfterOne(t, p, conns)
	// Their replies are read by the next claim, or by the reader goroutine
	// once their lateBound passed: either way nothing stays owed.
	require.Eventually(t, nothingOwed(conns), 5*time.Second, time.Millisecond)
	// And claims are granted again, once the reader goroutine that read
	// them is out of its read call (a socket inside one is not claimable:
	// right after the last reply it may still be, on a loaded machine).
	require.Eventually(t, func() bool {
		if !p.tryClaim() {
			return false
		}
		p.release()
		return true
	}, 5*time.Second, time.Millisecond, "no claim granted after the late replies were read")
}

// decideAfterOne claims conns, sends the first a PING and the others a
// command answered 200ms later, and decides after the first reply, as a
// lock burst does at its quorum: the others are abandoned, their answers
// owed when the claim ends.
func decideAfterOne(t *testing.T, p *poller, conns []*Conn) {
	t.Helper()
	notify := make(chan *Request, len(conns))
	require.True(t, p.tryClaim())
	reqs := burst(conns[:1], notify, "PING")
	reqs = append(reqs, burst(conns[1:], notify, "BLPOP", "poller:nothing", "0.2")...)
	got, held := pollFor(t, p, notify, 1)
	late := 0
	for _, r := range reqs {
		if r != got[0] && !r.Abandon() {
			late++
		}
	}
	releaseIf(p, held)
	for range late {
		(<-notify).Release()
	}
	got[0].Release()
}

// nothingOwed reports whether no request of conns waits for its reply.
func nothingOwed(conns []*Conn) func() bool {
	return func() bool {
		for _, c := range conns {
			c.mu.Lock()
			n := c.inflight.len()
			c.mu.Unlock()
			if n != 0 {
				return false
			}
		}
		return true
	}
}

// The late timer hands a Conn's unread answers to its reader only once
// they were sent lateBound ago; a firing that finds younger ones (a claim
// left them since it was armed) arms it again for them.
func TestPollerLateTimerWaitsForYoungAnswers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Poller claims only on Linux") // TestPollerCallerReadsItsOwnReplies checks that it says no
	}
	conns, p := pollerConns(t, 3)
	decideAfterOne(t, p, conns)

	p.readLate() // as the timer would, at once: every answer is younger than lateBound
	young := 0
	for _, c := range conns {
		c.mu.Lock()
		if s := c.sock; s != nil && s.reading == readLazily && time.Now().Before(p.readBy(c)) {
			young++
		}
		c.mu.Unlock()
	}
	p.lateMu.Lock()
	armed := !p.lateAt.IsZero()
	p.lateMu.Unlock()
	if young > 0 {
		assert.True(t, armed, "answers left unread with the late timer not armed")
	}
	require.Eventually(t, nothingOwed(conns), 5*time.Second, time.Millisecond, "answers left unread")
}

func TestPollerServesOthersAndHandsBackTheirReplies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Poller claims only on Linux")
	}
	conns, p := pollerConns(t, 3)
	require.True(t, p.tryClaim())
	assert.False(t, p.tryClaim(), "one claim at a time")
	// Another goroutine's request while the claim holds: the claim's
	// caller reads its reply if it polls; here it releases first, and the
	// reader goroutine must take over.
	done := make(chan string, 1)
	go func() {
		vals, err := conns[0].Do(context.Background(), "ECHO", "other")
		if err != nil {
			done <- err.Error()
			return
		}
		done <- string(vals[0].Bytes)
	}()
	require.Eventually(t, func() bool {
		conns[0].mu.Lock()
		defer conns[0].mu.Unlock()
		return conns[0].inflight.len() == 1
	}, 5*time.Second, time.Millisecond)
	p.release()
	select {
	case got := <-done:
		assert.Equal(t, "other", got)
	case <-time.After(5 * time.Second):
		t.Fatal("a request sent during a claim was never read")
	}

	// While a claim holds, a poll reads other goroutines' replies too.
	// (The reader may still be finishing with the last reply.)
	require.Eventually(t, p.tryClaim, 5*time.Second, time.Millisecond)
	go func() {
		vals, err := conns[1].Do(context.Background(), "ECHO", "polled")
		if err != nil {
			done <- err.Error()
			return
		}
		done <- string(vals[0].Bytes)
	}()
	deadline := time.Now().Add(5 * time.Second)
	var got string
	held := true
	for got == "" && time.Now().Before(deadline) {
		select {
		case got = <-done:
		default:
			if held && !p.poll(time.Millisecond) {
				p.release() // polled its share: the reader reads it
				held = false
			}
		}
	}
	releaseIf(p, held)
	assert.Equal(t, "polled", got)
}

func TestPollerClaimRefusedWhileOthersWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Poller claims only on Linux")
	}
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr()})
	p := newPoller([]*Conn{c}, 0)
	t.Cleanup(p.close)
	require.NoError(t, srv.Pause())
	defer srv.Resume()
	r := NewRequest()
	r.Cmd = resp.AppendCommand(r.Cmd[:0], "PING")
	c.Send(r, nil)
	assert.False(t, p.tryClaim(), "a reply someone waits for is the reader's")
	require.NoError(t, srv.Resume())
	require.NoError(t, c.Wait(context.Background(), r))
	r.Release()
	require.Eventually(t, p.tryClaim, 5*time.Second, time.Millisecond)
	p.release()
}

func TestPollerSurvivesCloseAndReconnect(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Poller claims only on Linux")
	}
	servers := redistest.StartN(t, 2, redistest.Options{})
	conns := make([]*Conn, 2)
	for i, s := range servers {
		conns[i] = dialT(t, Options{Addr: s.Addr(), ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	}
	p := newPoller(conns, 0)
	defer p.close()
	notify := make(chan *Request, 2)

	// A master dies under a claim: its request fails, the poll returns.
	require.NoError(t, servers[1].Pause())
	require.True(t, p.tryClaim())
	burst(conns, notify, "PING")
	got, held := pollFor(t, p, notify, 1)
	require.Equal(t, 0, got[0].Tag)
	got[0].Release()
	servers[1].Kill()
	if held {
		got, held = pollFor(t, p, notify, 1)
	} else {
		got = []*Request{<-notify}
	}
	r := got[0]
	var ce *Error
	require.ErrorAs(t, r.Err(), &ce, "the dead master's request fails")
	r.Release()
	releaseIf(p, held)

	// It comes back: the Poller claims its new socket.
	require.NoError(t, servers[1].Restart(false))
	require.Eventually(t, func() bool { return conns[1].Err() == nil }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, p.tryClaim, 5*time.Second, time.Millisecond)
	burst(conns, notify, "PING")
	got, held = pollFor(t, p, notify, 2)
	releaseIf(p, held)
	for _, r := range got {
		require.NoError(t, r.Err())
		r.Release()
	}

	// Close under a claim: the poll returns, the requests fail, nothing
	// hangs (leakcheck checks the goroutines). (The PINGs' replies may have
	// gone to the reader goroutines, which let go once nothing is owed.)
	require.Eventually(t, p.tryClaim, 5*time.Second, time.Millisecond)
	require.NoError(t, servers[0].Pause())
	defer servers[0].Resume()
	reqs := burst(conns[:1], notify, "PING")
	go conns[0].Close()
	got, held = pollFor(t, p, notify, 1)
	releaseIf(p, held)
	r = got[0]
	require.Same(t, reqs[0], r)
	require.ErrorAs(t, r.Err(), &ce)
	r.Release()
	p.close()
	assert.False(t, p.tryClaim(), "closed")
}

func TestDetachedHangupNoticedWhileIdle(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sockets are detached only on Linux")
	}
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr(), ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	gen := c.Info().Generation
	// Nobody reads the idle socket; the master closing it must still be
	// noticed at once, and the Conn reconnect before anyone asks.
	killer := dialT(t, Options{Addr: srv.Addr()})
	vals, err := killer.Do(context.Background(), "CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
	require.NoError(t, err)
	require.Equal(t, int64(1), vals[0].Int, "the victim was killed")
	require.Eventually(t, func() bool {
		info := c.Info()
		return info != nil && info.Generation > gen && c.Err() == nil
	}, 10*time.Second, time.Millisecond, "the hang-up of an idle socket went unnoticed")
}

// A master whose last reply and hang-up arrive together (a killed or
// restarted master's last bytes) is noticed while the Conn is idle, and
// the Conn reconnects before anyone asks. The reader's epoll set wakes it
// on edges, and the hang-up's edge can come and go before the reader reads
// the reply (a short read does not show the end of the stream): a fencing
// Client on a restarted fake master never reconnected. The liveness check
// finds it (see Conn.watch). One processor makes both arrive before the
// reader runs, most times; the test goes round a few times.
func TestHangupWithLastReplyNoticed(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	peers := make(chan net.Conn, 4)
	go func() {
		defer close(peers)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			peers <- nc
		}
	}()
	accept := func() *peer {
		select {
		case nc := <-peers:
			t.Cleanup(func() { nc.Close() })
			return &peer{t: t, nc: nc, rd: resp.NewReader(nc, 0, resp.Limits{})}
		case <-time.After(5 * time.Second):
			return nil
		}
	}
	c, err := New(Options{Addr: ln.Addr().String(), ReadTimeout: 100 * time.Millisecond, ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	require.NoError(t, err)
	defer c.Close()
	for round := range 10 {
		p := accept()
		require.NotNil(t, p, "round %d: the hang-up that came with the last reply went unnoticed: no reconnect", round)
		p.handshake()
		require.Eventually(t, func() bool {
			info := c.Info()
			return info != nil && info.Generation == uint64(round+1) && c.Err() == nil
		}, 5*time.Second, time.Millisecond)
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			if p.expect("PING") {
				p.send("+PONG\r\n")
				p.nc.Close()
			}
		}()
		vals, err := c.Do(context.Background(), "PING")
		require.NoError(t, err)
		assert.Equal(t, "PONG", string(vals[0].Bytes))
		<-answered
	}
}

func TestDetachOnlyPlainSockets(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	plain := dialT(t, Options{Addr: srv.Addr()})
	pubsub := dialT(t, Options{Addr: srv.Addr(), OnMessage: func(_, _ []byte) {}})
	for name, tc := range map[string]struct {
		c    *Conn
		want bool
	}{"plain": {plain, runtime.GOOS == "linux"}, "pub/sub": {pubsub, false}} {
		tc.c.mu.Lock()
		assert.Equal(t, tc.want, tc.c.sock.det != nil, name)
		tc.c.mu.Unlock()
	}
	// A custom dialer's connection is not a plain socket.
	d := newPipeDialer()
	c, err := New(Options{Addr: "pipe", Dialer: d.dial, DialTimeout: time.Second})
	require.NoError(t, err)
	defer c.Close()
	d.accept(t).handshake()
	require.NoError(t, c.WaitReady(context.Background()))
	c.mu.Lock()
	assert.Nil(t, c.sock.det, "a pipe is not detached")
	c.mu.Unlock()
}

func TestDetachedSocketsCloseTheirDescriptors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	srv := redistest.Start(t, redistest.Options{})
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		return len(ents)
	}
	open := func() {
		c := dialT(t, Options{Addr: srv.Addr()})
		p := newPoller([]*Conn{c}, 0)
		require.True(t, p.tryClaim())
		p.release()
		assert.Equal(t, "PONG", doT(t, c, "PING"))
		p.close()
		c.Close()
	}
	open() // the first Conn may open descriptors for good (the runtime's poller)
	before := count()
	for range 20 {
		open()
	}
	assert.Eventually(t, func() bool { return count() <= before }, 5*time.Second, 10*time.Millisecond,
		"descriptors leaked: %d before, %d after 20 Conns", before, count())
}
