package fakeredis

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/leakcheck"
	"github.com/volleylock/volley/internal/scripts"
)

func TestExpiryWithManualClock(t *testing.T) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s := StartT(t, Options{Clock: clock})
	c := dial(t, s.Addr())

	require.Equal(t, "+OK\r\n", c.do("SET", "k", "v", "PX", "100"))
	require.Equal(t, ":100\r\n", c.do("PTTL", "k"))
	clock.Advance(99 * time.Millisecond)
	require.Equal(t, ":1\r\n", c.do("PTTL", "k"))
	require.Equal(t, bulk("v"), c.do("GET", "k"))
	require.Equal(t, 1, s.Keys())
	clock.Advance(1 * time.Millisecond)
	require.Equal(t, ":0\r\n", c.do("PTTL", "k"), "a key lives until its expiry time is past")
	clock.Advance(1 * time.Millisecond)
	require.Equal(t, 0, s.Keys())
	require.Equal(t, ":-2\r\n", c.do("PTTL", "k"))
	require.Equal(t, "$-1\r\n", c.do("GET", "k"))

	// TTL rounds to the nearest second.
	require.Equal(t, "+OK\r\n", c.do("SET", "k", "v", "PX", "1499"))
	require.Equal(t, ":1\r\n", c.do("TTL", "k"))
	require.Equal(t, "+OK\r\n", c.do("SET", "k", "v", "PX", "1500"))
	require.Equal(t, ":2\r\n", c.do("TTL", "k"))

	// Absolute times are read on the same clock.
	now := clock.Now()
	require.Equal(t, "+OK\r\n", c.do("SET", "k", "v", "PXAT", strconv.FormatInt(now.UnixMilli()+50, 10)))
	require.Equal(t, ":50\r\n", c.do("PTTL", "k"))
	require.Equal(t, "+OK\r\n", c.do("SET", "k2", "v", "EXAT", strconv.FormatInt(now.Unix()+10, 10)))
	require.Equal(t, ":"+strconv.FormatInt((now.Unix()+10)*1000-now.UnixMilli(), 10)+"\r\n", c.do("PTTL", "k2"))

	// Keys counts live keys without anyone reading them, and the extend
	// script moves the expiry.
	require.Equal(t, "+OK\r\n", c.do("SET", "lock", "tok", "NX", "PX", "100"))
	require.Equal(t, ":1\r\n", c.do("EVAL", scripts.Extend.Source, "1", "lock", "tok", "1000"))
	clock.Advance(500 * time.Millisecond)
	require.Equal(t, 2, s.Keys(), "k2 and the extended lock are left, k expired")
	require.Equal(t, ":500\r\n", c.do("PTTL", "lock"))

	// TIME reads the clock too.
	now = clock.Now()
	require.Equal(t, "*2\r\n"+bulk(strconv.FormatInt(now.Unix(), 10))+bulk(strconv.Itoa(now.Nanosecond()/1000)), c.do("TIME"))
}

func TestPipelining(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s.Addr())
	const n = 1000
	var batch []byte
	for i := range n / 2 {
		v := strconv.Itoa(i)
		batch = encodeCommand(batch, "SET", "k", v)
		batch = encodeCommand(batch, "GET", "k")
	}
	before := s.Commands()
	c.write(batch) // one write
	for i := range n / 2 {
		require.Equal(t, "+OK\r\n", c.read(), "reply %d", 2*i)
		require.Equal(t, bulk(strconv.Itoa(i)), c.read(), "reply %d", 2*i+1)
	}
	require.Equal(t, before+n, s.Commands())
}

// TestConcurrentClients runs many connections contending for one lock
// with pipelined commands, and checks that SET NX and the release script
// are atomic: at most one holder at a time.
func TestConcurrentClients(t *testing.T) {
	s := StartT(t, Options{})
	const conns, rounds = 32, 100
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)

	var holder atomic.Int64 // the connection that holds the lock, or 0
	var acquired atomic.Int64
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for id := int64(1); id <= conns; id++ {
		nc, err := net.Dial("tcp", s.Addr())
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		wg.Go(func() {
			errs <- contend(nc, id, rounds, rand.New(rand.NewPCG(uint64(seed), uint64(id))), &holder, &acquired)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Positive(t, acquired.Load())
	require.Zero(t, s.Keys())
	t.Logf("%d acquisitions, %d commands", acquired.Load(), s.Commands())
}

func contend(nc net.Conn, id int64, rounds int, rng *rand.Rand, holder, acquired *atomic.Int64) error {
	if err := nc.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return err
	}
	br := bufio.NewReader(nc)
	token := "token-" + strconv.FormatInt(id, 10)
	for range rounds {
		// A pipelined burst of reads, then the acquire.
		var batch []byte
		for range rng.IntN(5) {
			batch = encodeCommand(batch, "PTTL", "lock")
		}
		batch = encodeCommand(batch, "SET", "lock", token, "NX", "PX", "60000")
		if _, err := nc.Write(batch); err != nil {
			return err
		}
		var reply []byte
		var err error
		for range countCommands(batch) {
			if reply, err = readFrame(reply[:0], br); err != nil {
				return err
			}
		}
		if string(reply) != "+OK\r\n" {
			if string(reply) != "$-1\r\n" {
				return fmt.Errorf("conn %d: SET NX: %q", id, reply)
			}
			continue
		}
		if !holder.CompareAndSwap(0, id) {
			return fmt.Errorf("conn %d acquired the lock held by conn %d", id, holder.Load())
		}
		acquired.Add(1)
		holder.Store(0)
		if _, err := nc.Write(encodeCommand(nil, "EVAL", scripts.ReleaseQuiet.Source, "1", "lock", token)); err != nil {
			return err
		}
		if reply, err = readFrame(reply[:0], br); err != nil {
			return err
		}
		if string(reply) != ":1\r\n" {
			return fmt.Errorf("conn %d: release: %q", id, reply)
		}
	}
	return nil
}

// countCommands counts the RESP arrays in a batch built by encodeCommand.
func countCommands(batch []byte) int {
	n := 0
	br := bufio.NewReader(bytesReader(batch))
	for {
		if _, err := readFrame(nil, br); err != nil {
			return n
		}
		n++
	}
}

func TestCloseEndsEverything(t *testing.T) {
	s, err := Start(Options{})
	require.NoError(t, err)
	s.SetFault("SET", Fault{Hang: true})
	s.SetFault("GET", Fault{Latency: time.Hour})
	idle, hung, slow := dial(t, s.Addr()), dial(t, s.Addr()), dial(t, s.Addr())
	require.Equal(t, "+PONG\r\n", idle.do("PING"))
	hung.send("SET", "k", "v")
	slow.send("GET", "k")
	waitCommands(t, s, 3)

	start := time.Now()
	require.NoError(t, s.Close())
	require.Less(t, time.Since(start), 5*time.Second)
	for _, c := range []*testConn{idle, hung, slow} {
		_, err := c.readAll()
		require.True(t, isClosed(err), "want EOF, got %v", err)
	}
	require.Empty(t, leakcheck.Wait(5*time.Second), "goroutines left after Close")
	require.NoError(t, s.Close(), "a second Close")
	_, err = net.DialTimeout("tcp", s.Addr(), time.Second)
	require.Error(t, err, "still listening after Close")
}

func TestAuthUsers(t *testing.T) {
	s := StartT(t, Options{Users: map[string]string{"alice": "a1"}})
	c := dial(t, s.Addr())
	require.Equal(t, "+PONG\r\n", c.do("PING"), "no password: connections start logged in")
	require.Equal(t, "+OK\r\n", c.do("AUTH", "alice", "a1"))
	require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", c.do("AUTH", "alice", "x"))
	require.Equal(t, "+OK\r\n", c.do("AUTH", "default", "anything"), "the default user has no password")

	s = StartT(t, Options{Password: "pw", Users: map[string]string{"alice": "a1"}})
	c = dial(t, s.Addr())
	require.Equal(t, "-NOAUTH Authentication required.\r\n", c.do("PING"))
	require.Equal(t, "+OK\r\n", c.do("QUIT"))
	c = dial(t, s.Addr())
	reply := c.do("HELLO", "3", "AUTH", "alice", "a1")
	require.Regexp(t, `^%7\r\n`, reply)
	require.Equal(t, "+PONG\r\n", c.do("PING"))
}

func TestUnknownScriptIsRefused(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s.Addr())
	for _, args := range [][]string{
		{"EVAL", "return 1", "0"},
		{"SCRIPT", "LOAD", "return 1"},
	} {
		reply := c.do(args...)
		require.Regexp(t, `^-ERR fakeredis runs only the Redlock .*\r\n$`, reply)
	}
	// Reformatted lock scripts are recognised; their SHA is their own.
	body := "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('pexpire', KEYS[1], ARGV[2])\nelse\n  return 0\nend\n"
	require.Equal(t, bulk(sha1Hex([]byte(body))), c.do("SCRIPT", "LOAD", body))
	require.Equal(t, "+OK\r\n", c.do("SET", "lock", "tok"))
	require.Equal(t, ":1\r\n", c.do("EVALSHA", sha1Hex([]byte(body)), "1", "lock", "tok", "1000"))
}

func TestMalformedLengthDoesNotCrash(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s.Addr())
	c.write([]byte("*1\r\n$9223372036854775807\r\nxx\r\n"))
	got, err := c.readAll()
	require.True(t, isClosed(err), "want EOF, got %v", err)
	require.Regexp(t, `^-ERR Protocol error: `, got)
	require.Equal(t, "+PONG\r\n", dial(t, s.Addr()).do("PING"))
}
