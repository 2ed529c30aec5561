package fakeredis

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/scripts"
)

// requireNoReply checks that nothing arrives on c within d.
func requireNoReply(t *testing.T, c *testConn, d time.Duration) {
	t.Helper()
	got, err := c.readWithin(d)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "got a reply: %q", got)
}

// waitCommands waits until the server has read n commands in all.
func waitCommands(t *testing.T, s *Server, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return s.Commands() >= n },
		10*time.Second, time.Millisecond, "the server read %d of %d commands", s.Commands(), n)
}

func TestFaultLatency(t *testing.T) {
	const latency = 300 * time.Millisecond
	s := StartT(t, Options{})
	s.SetFault("GET", Fault{Latency: latency})
	a, b := dial(t, s.Addr()), dial(t, s.Addr())

	start := time.Now()
	require.Equal(t, "$-1\r\n", a.do("GET", "k"))
	require.GreaterOrEqual(t, time.Since(start), latency)

	// Pipelined on one connection: the reply before the slow one comes at
	// once, the one after it waits, and the order holds.
	var batch []byte
	batch = encodeCommand(batch, "PING", "first")
	batch = encodeCommand(batch, "GET", "k")
	batch = encodeCommand(batch, "PING", "last")
	start = time.Now()
	a.write(batch)
	require.Equal(t, bulk("first"), a.read())
	require.Less(t, time.Since(start), latency, "the reply before the slow one was held back")

	// Meanwhile another connection is served at once.
	require.Equal(t, "+PONG\r\n", b.do("PING"))
	require.Less(t, time.Since(start), latency, "a slow command on one connection delayed another")

	require.Equal(t, "$-1\r\n", a.read())
	require.GreaterOrEqual(t, time.Since(start), latency)
	require.Equal(t, bulk("last"), a.read())

	// The command runs when read; only its reply is late.
	s.SetFault("SET", Fault{Latency: latency})
	start = time.Now()
	a.send("SET", "k", "v")
	require.Eventually(t, func() bool { return s.Keys() == 1 }, 10*time.Second, time.Millisecond)
	require.Less(t, time.Since(start), latency, "the command ran only after the latency")
	require.Equal(t, "+OK\r\n", a.read())
	require.GreaterOrEqual(t, time.Since(start), latency)
}

func TestFaultHang(t *testing.T) {
	s := StartT(t, Options{})
	s.SetFault("SET", Fault{Hang: true})
	hung, other := dial(t, s.Addr()), dial(t, s.Addr())

	hung.send("SET", "k", "v")
	hung.send("PING") // queued behind the hung command
	waitCommands(t, s, 1)
	requireNoReply(t, hung, 200*time.Millisecond)
	require.Zero(t, s.Keys(), "a hung command ran")

	// ClearFaults stops new commands from hanging, not the hung one.
	s.ClearFaults()
	require.Equal(t, "+OK\r\n", other.do("SET", "k", "v"))
	requireNoReply(t, hung, 200*time.Millisecond)

	// Close ends it.
	require.NoError(t, s.Close())
	got, err := hung.readAll()
	require.Empty(t, got)
	require.True(t, isClosed(err), "want EOF or reset, got %v", err)
}

// isClosed reports whether err says the peer closed the connection.
func isClosed(err error) bool {
	var op *net.OpError
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded) &&
		(err.Error() == "EOF" || errors.As(err, &op))
}

func TestFaultCloseBefore(t *testing.T) {
	s := StartT(t, Options{})
	s.SetFault("SET", Fault{CloseBefore: true})
	c := dial(t, s.Addr())
	var batch []byte
	batch = encodeCommand(batch, "PING")
	batch = encodeCommand(batch, "SET", "k", "v")
	batch = encodeCommand(batch, "PING")
	c.write(batch)
	got, err := c.readAll()
	require.Equal(t, "+PONG\r\n", got, "the reply before the fault is written, nothing after")
	require.True(t, isClosed(err), "want EOF, got %v", err)
	require.Zero(t, s.Keys(), "the command ran")
	require.Equal(t, ":0\r\n", dial(t, s.Addr()).do("EXISTS", "k"))
}

func TestFaultCloseMidReply(t *testing.T) {
	s := StartT(t, Options{})
	s.SetFault("SET", Fault{CloseMidReply: true})
	c := dial(t, s.Addr())
	c.send("SET", "k", "v")
	got, err := c.readAll()
	require.Equal(t, "+O", got, "half of +OK\\r\\n")
	require.True(t, isClosed(err), "want EOF, got %v", err)
	require.Equal(t, 1, s.Keys(), "the command did not run")

	s.SetFault("GET", Fault{CloseMidReply: true})
	c = dial(t, s.Addr())
	c.send("GET", "k")
	got, _ = c.readAll()
	require.Equal(t, "$1\r", got)
}

func TestFaultRaw(t *testing.T) {
	s := StartT(t, Options{})
	raw := []byte("$-5\r\n")
	s.SetFault("SET", Fault{Raw: raw})
	c := dial(t, s.Addr())
	c.send("SET", "k", "v")
	c.send("PING")
	require.NoError(t, c.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	buf := make([]byte, len(raw)+len("+PONG\r\n"))
	_, err := readFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, "$-5\r\n+PONG\r\n", string(buf), "the raw bytes, then the connection goes on")
	require.Zero(t, s.Keys(), "the command ran")
}

func readFull(c *testConn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.br.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestFaultNoScript(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s.Addr())
	sha := c.do("SCRIPT", "LOAD", scripts.ReleaseQuiet.Source)
	sha = sha[len("$40\r\n") : len(sha)-2]
	require.Equal(t, "+OK\r\n", c.do("SET", "lock", "tok"))

	s.SetFault("*", Fault{NoScript: true, Times: 1})
	require.Equal(t, "+OK\r\n", c.do("SET", "other", "x"), "NoScript matched a command other than EVALSHA")
	require.Equal(t, "-NOSCRIPT No matching script. Please use EVAL.\r\n", c.do("EVALSHA", sha, "1", "lock", "tok"))
	require.Equal(t, 2, s.Keys(), "the faulted EVALSHA ran")
	require.Equal(t, ":1\r\n", c.do("EVALSHA", sha, "1", "lock", "tok"), "Times: 1 applied twice")
}

func TestFaultTimesAndPrecedence(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s.Addr())

	s.SetFault("PING", Fault{Raw: []byte("+F\r\n"), Times: 2})
	require.Equal(t, "+F\r\n", c.do("PING"))
	require.Equal(t, "+F\r\n", c.do("PING"))
	require.Equal(t, "+PONG\r\n", c.do("PING"))

	// A command's own fault wins over "*"; a later SetFault replaces.
	s.SetFault("*", Fault{Raw: []byte("+STAR\r\n")})
	s.SetFault("echo", Fault{Raw: []byte("+ECHO1\r\n")})
	s.SetFault("ECHO", Fault{Raw: []byte("+ECHO2\r\n")})
	require.Equal(t, "+ECHO2\r\n", c.do("echo", "x"))
	require.Equal(t, "+STAR\r\n", c.do("PING"))
	// The zero Fault removes one name's fault.
	s.SetFault("ECHO", Fault{})
	require.Equal(t, "+STAR\r\n", c.do("ECHO", "x"))
	s.ClearFaults()
	require.Equal(t, bulk("x"), c.do("ECHO", "x"))
}

func TestRefuseConnections(t *testing.T) {
	s := StartT(t, Options{})
	open := dial(t, s.Addr())
	// A dial completes in the kernel's backlog before the server accepts:
	// a reply proves the connection was accepted before refusing began.
	require.Equal(t, "+PONG\r\n", open.do("PING"))
	s.RefuseConnections(true)

	refused := dial(t, s.Addr()) // accepted, then closed
	refused.send("PING")
	got, err := refused.readAll()
	require.Empty(t, got)
	require.True(t, isClosed(err), "want EOF, got %v", err)
	require.Equal(t, "+PONG\r\n", open.do("PING"), "an open connection was affected")

	s.RefuseConnections(false)
	require.Equal(t, "+PONG\r\n", dial(t, s.Addr()).do("PING"))
}

func TestRestart(t *testing.T) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s := StartT(t, Options{Clock: clock})
	c := dial(t, s.Addr())
	require.Equal(t, "+OK\r\n", c.do("SET", "k", "v"))
	sha := c.do("SCRIPT", "LOAD", scripts.ReleaseQuiet.Source)
	sha = sha[len("$40\r\n") : len(sha)-2]
	clock.Advance(90 * time.Second)
	require.Contains(t, c.do("INFO", "server"), "\r\nuptime_in_seconds:90\r\n")
	before := s.RunID()
	require.Regexp(t, `^[0-9a-f]{40}$`, before)
	s.SetFault("ECHO", Fault{Raw: []byte("+F\r\n")})

	s.Restart()

	_, err := c.readAll()
	require.True(t, isClosed(err), "Restart kept a connection: %v", err)
	require.Zero(t, s.Keys())
	c = dial(t, s.Addr())
	require.Equal(t, "$-1\r\n", c.do("GET", "k"))
	require.Equal(t, "-NOSCRIPT No matching script. Please use EVAL.\r\n", c.do("EVALSHA", sha, "1", "k", "v"))
	require.NotEqual(t, before, s.RunID())
	info := c.do("INFO", "server")
	require.Contains(t, info, "\r\nrun_id:"+s.RunID()+"\r\n")
	require.Contains(t, info, "\r\nuptime_in_seconds:0\r\n")
	require.Equal(t, "+F\r\n", c.do("ECHO", "x"), "faults survive Restart")
}
