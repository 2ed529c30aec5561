package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/leakcheck"
	"github.com/volleylock/volley/internal/redistest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// echoServer accepts connections on 127.0.0.1:0 and echoes every byte; the
// test's cleanup stops it and waits for its goroutines.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func startProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := Start(target)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// readN reads exactly n bytes within d.
func readN(t *testing.T, c net.Conn, n int, d time.Duration) []byte {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	buf := make([]byte, n)
	_, err := io.ReadFull(c, buf)
	require.NoError(t, err)
	return buf
}

// expectSilence asserts that nothing arrives on c within d.
func expectSilence(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	n, err := c.Read(make([]byte, 64))
	var ne net.Error
	require.ErrorAs(t, err, &ne, "read %d bytes", n)
	require.True(t, ne.Timeout())
}

// expectClosed asserts that c is closed by the far side within d (EOF or
// reset), after at most the bytes in prefix.
func expectClosed(t *testing.T, c net.Conn, d time.Duration) []byte {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	got, err := io.ReadAll(c)
	if err != nil {
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "connection not closed within %v", d)
	}
	return got
}

func TestForwardAndStats(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	msg := bytes.Repeat([]byte("volley"), 10000)
	go c.Write(msg) // the echo comes back while we write
	require.Equal(t, msg, readN(t, c, len(msg), 5*time.Second))
	// A chunk is counted when its write returns, which can be just after
	// the peer read it: wait for the counts to settle, then check them.
	want := uint64(len(msg))
	require.Eventually(t, func() bool {
		st := p.Stats()
		return st.BytesToServer >= want && st.BytesToClient >= want
	}, 5*time.Second, time.Millisecond)
	st := p.Stats()
	assert.Equal(t, uint64(1), st.Accepted)
	assert.Equal(t, 1, st.Active)
	assert.Equal(t, want, st.BytesToServer)
	assert.Equal(t, want, st.BytesToClient)
	c.Close()
	require.Eventually(t, func() bool { return p.Stats().Active == 0 }, 5*time.Second, 5*time.Millisecond)
}

func TestLatencyIsADelayLine(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	// Warm the connection up, then add latency to the existing connection.
	_, err := c.Write([]byte("x"))
	require.NoError(t, err)
	readN(t, c, 1, 5*time.Second)
	// Generous: the assertions below must hold on a loaded 2-core machine.
	const lat = 250 * time.Millisecond
	p.SetLatency(lat, lat)

	// 40 messages sent 2ms apart: each takes 2*lat, yet they overlap in the
	// delay line, so the whole takes about 2*lat + 80ms, not 40*2*lat.
	const n = 40
	start := time.Now()
	go func() {
		for i := range n {
			c.Write([]byte{byte('a' + i%26)})
			time.Sleep(2 * time.Millisecond)
		}
	}()
	first := readN(t, c, 1, 5*time.Second)
	firstAt := time.Since(start)
	rest := readN(t, c, n-1, 5*time.Second)
	total := time.Since(start)
	got := append(first, rest...)
	for i := range n {
		require.Equal(t, byte('a'+i%26), got[i], "order lost at %d", i)
	}
	assert.GreaterOrEqual(t, firstAt, 2*lat, "latency not applied")
	assert.Less(t, total, 2*lat+n*2*time.Millisecond+time.Second, "latency serialises the chunks")
	assert.Less(t, total, n*lat, "latency serialises the chunks")

	p.SetLatency(0, 0)
	start = time.Now()
	_, err = c.Write([]byte("z"))
	require.NoError(t, err)
	readN(t, c, 1, 5*time.Second)
	assert.Less(t, time.Since(start), lat, "latency still applied after SetLatency(0, 0)")
}

// Slow paces replies byte by byte, and a backlog built while it is on
// keeps its pace after it is turned off; a new connection does not.
func TestSlowPacesAndItsBacklogOutlivesIt(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	const pace = 20 * time.Millisecond
	p.Slow(pace)
	msg := []byte("0123456789") // 10 bytes: 200ms at the pace
	start := time.Now()
	_, err := c.Write(msg)
	require.NoError(t, err)
	first := readN(t, c, 1, 5*time.Second)
	assert.GreaterOrEqual(t, time.Since(start), pace, "the first byte did not wait its pace")
	p.Slow(0) // the backlog was committed: it still drains at the pace
	rest := readN(t, c, len(msg)-1, 5*time.Second)
	assert.Equal(t, msg, append(first, rest...))
	assert.GreaterOrEqual(t, time.Since(start), time.Duration(len(msg))*pace, "the backlog left faster than its pace")

	// Without Slow, and on a new connection, bytes flow at once.
	c2 := dial(t, p)
	start = time.Now()
	_, err = c2.Write(msg)
	require.NoError(t, err)
	readN(t, c2, len(msg), 5*time.Second)
	assert.Less(t, time.Since(start), time.Duration(len(msg))*pace)
}

// Pause holds bytes without dropping them; Pause(false) delivers them in
// order on the same connection.
func TestPauseHoldsBytes(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	p.Pause(true)
	_, err := c.Write([]byte("abc"))
	require.NoError(t, err)
	expectSilence(t, c, 100*time.Millisecond)
	p.Pause(false)
	assert.Equal(t, []byte("abc"), readN(t, c, 3, 5*time.Second))
}

func TestBlackhole(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	idle := dial(t, p)
	for _, c := range []net.Conn{c, idle} {
		_, err := c.Write([]byte("1"))
		require.NoError(t, err)
		readN(t, c, 1, 5*time.Second)
	}

	p.Blackhole(true)
	_, err := c.Write([]byte("lost"))
	require.NoError(t, err)
	expectSilence(t, c, 200*time.Millisecond)
	// New connections are accepted, and silent too.
	c2 := dial(t, p)
	_, err = c2.Write([]byte("lost too"))
	require.NoError(t, err)
	expectSilence(t, c2, 100*time.Millisecond)
	assert.GreaterOrEqual(t, p.Stats().Dropped, uint64(len("lost")+len("lost too")))

	p.Blackhole(false)
	// Connections that lost bytes are reset, without the lost bytes.
	require.Empty(t, expectClosed(t, c, 5*time.Second))
	require.Empty(t, expectClosed(t, c2, 5*time.Second))
	// An idle connection carries on, and new ones work.
	_, err = idle.Write([]byte("back"))
	require.NoError(t, err)
	require.Equal(t, "back", string(readN(t, idle, 4, 5*time.Second)))
	c3 := dial(t, p)
	_, err = c3.Write([]byte("c3"))
	require.NoError(t, err)
	require.Equal(t, "c3", string(readN(t, c3, 2, 5*time.Second)))
}

func TestBlackholeDropsTheDelayLine(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	p.SetLatency(0, 200*time.Millisecond)
	_, err := c.Write([]byte("queued"))
	require.NoError(t, err)
	// The echo is in the delay line toward the client when the partition
	// starts: it must be dropped.
	require.Eventually(t, func() bool { return p.Stats().BytesToServer == 6 }, 5*time.Second, time.Millisecond)
	p.Blackhole(true)
	expectSilence(t, c, 400*time.Millisecond)
	p.Reset()
	require.Empty(t, expectClosed(t, c, 5*time.Second))
	assert.Equal(t, uint64(6), p.Stats().Dropped)
}

func TestResetAll(t *testing.T) {
	p := startProxy(t, echoServer(t))
	conns := []net.Conn{dial(t, p), dial(t, p)}
	for _, c := range conns {
		_, err := c.Write([]byte("x"))
		require.NoError(t, err)
		readN(t, c, 1, 5*time.Second)
	}
	p.ResetAll()
	for _, c := range conns {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err := c.Read(make([]byte, 1))
		require.Error(t, err)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "not reset: %v", err)
	}
	assert.Equal(t, uint64(2), p.Stats().Resets)
	assert.Equal(t, 0, p.Stats().Active)
	// The proxy still serves new connections.
	c := dial(t, p)
	_, err := c.Write([]byte("y"))
	require.NoError(t, err)
	require.Equal(t, "y", string(readN(t, c, 1, 5*time.Second)))
}

func TestRefuse(t *testing.T) {
	p := startProxy(t, echoServer(t))
	old := dial(t, p)
	_, err := old.Write([]byte("x"))
	require.NoError(t, err)
	readN(t, old, 1, 5*time.Second)

	p.Refuse(true)
	// The kernel completes the handshake and the proxy resets it at once,
	// sometimes before the dial has returned.
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err == nil {
		defer c.Close()
		require.Empty(t, expectClosed(t, c, 5*time.Second))
	}
	require.Eventually(t, func() bool { return p.Stats().Refused == 1 }, 5*time.Second, time.Millisecond)
	// Existing connections keep working.
	_, err = old.Write([]byte("y"))
	require.NoError(t, err)
	require.Equal(t, "y", string(readN(t, old, 1, 5*time.Second)))

	p.Refuse(false)
	c = dial(t, p)
	_, err = c.Write([]byte("z"))
	require.NoError(t, err)
	require.Equal(t, "z", string(readN(t, c, 1, 5*time.Second)))
}

func TestCorrupt(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	p.Corrupt(1, 42)
	msg := []byte("0123456789")
	_, err := c.Write(msg)
	require.NoError(t, err)
	got := readN(t, c, len(msg), 5*time.Second)
	diff := 0
	for i := range msg {
		if got[i] != msg[i] {
			diff++
		}
	}
	// One flip per chunk; the echo may come back in more than one chunk.
	require.GreaterOrEqual(t, diff, 1)
	require.Equal(t, uint64(diff), p.Stats().Corrupted)

	p.Corrupt(0, 0)
	_, err = c.Write(msg)
	require.NoError(t, err)
	require.Equal(t, msg, readN(t, c, len(msg), 5*time.Second))
}

func TestTruncate(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	p.Truncate(true)
	msg := []byte("0123456789")
	_, err := c.Write(msg)
	require.NoError(t, err)
	got := expectClosed(t, c, 5*time.Second)
	require.Less(t, len(got), len(msg))
	require.Equal(t, msg[:len(got)], got)
	assert.Equal(t, uint64(1), p.Stats().Truncated)

	p.Truncate(false)
	c = dial(t, p)
	_, err = c.Write(msg)
	require.NoError(t, err)
	require.Equal(t, msg, readN(t, c, len(msg), 5*time.Second))
}

// TestDripAgainstRedis runs a Conn through a dripping proxy: every reply,
// the handshake's INFO included, arrives a byte at a time.
func TestDripAgainstRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	p := startProxy(t, srv.Addr())
	p.Drip(true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := conn.Dial(ctx, conn.Options{Addr: p.Addr()})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Do(ctx, "SET", "k", "dripping value")
	require.NoError(t, err)
	vals, err := c.Do(ctx, "GET", "k")
	require.NoError(t, err)
	require.Equal(t, "dripping value", string(vals[0].Bytes))
	assert.Positive(t, p.Stats().BytesToClient)
}

// TestRedisUnderFaults drives a Conn to a real redis-server through a
// blackhole and a reset, and checks that it recovers after each.
func TestRedisUnderFaults(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	p := startProxy(t, srv.Addr())
	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{
		Addr: p.Addr(), ReadTimeout: 100 * time.Millisecond, DialTimeout: 200 * time.Millisecond,
		ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	defer c.Close()
	ping := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		_, err := c.Do(ctx, "PING")
		return err
	}
	recovered := func() bool { return ping(100*time.Millisecond) == nil }
	require.NoError(t, ping(time.Second))

	p.Blackhole(true)
	require.Error(t, ping(100*time.Millisecond))
	p.Blackhole(false)
	require.Eventually(t, recovered, 5*time.Second, 10*time.Millisecond)

	p.ResetAll()
	require.Eventually(t, recovered, 5*time.Second, 10*time.Millisecond)

	p.SetLatency(30*time.Millisecond, 30*time.Millisecond)
	start := time.Now()
	require.NoError(t, ping(time.Second))
	assert.GreaterOrEqual(t, time.Since(start), 60*time.Millisecond)
	p.Reset()
}

func TestCloseWithOpenConnections(t *testing.T) {
	p, err := Start(echoServer(t))
	require.NoError(t, err)
	p.SetLatency(time.Hour, time.Hour) // chunks parked in the delay lines
	c := dial(t, p)
	_, err = c.Write([]byte("parked"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.Stats().Active == 1 }, 5*time.Second, time.Millisecond)
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	expectClosed(t, c, 5*time.Second)
	require.NoError(t, p.Close()) // twice is fine
	_, err = net.DialTimeout("tcp", p.Addr(), 200*time.Millisecond)
	require.Error(t, err)
}

func TestStartFailsOnBadTarget(t *testing.T) {
	// Start itself does not dial; a connection to a dead target is reset.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	ln.Close()
	p := startProxy(t, dead)
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err == nil { // else reset before the dial returned
		defer c.Close()
		expectClosed(t, c, 5*time.Second)
	}
	require.Eventually(t, func() bool { return p.Stats().DialFailed == 1 }, 5*time.Second, time.Millisecond)
}
