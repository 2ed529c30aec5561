package fuzz

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/resp"
)

// connInfoReply is the scripted master's answer to the handshake's INFO
// server and INFO replication.
var connInfoReply = resp.AppendBulkString(resp.AppendBulkString(nil,
	"# Server\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\nuptime_in_seconds:42\r\n\r\n"),
	"# Replication\r\nrole:master\r\n")

// connFuzzLimits keep what one reply may make the Conn allocate small.
var connFuzzLimits = resp.Limits{MaxBulk: 64 << 10, MaxElems: 1024, MaxDepth: 8, MaxLine: 4 << 10, MaxValues: 4096, MaxReply: 256 << 10}

const (
	connDoTimeout = 50 * time.Millisecond
	// connSlack is what a Do may take beyond its deadline: the fuzzer runs
	// one worker per core under the race detector, so scheduling is slow.
	connSlack = 2 * time.Second
)

// scriptedMaster plays a master over net.Pipe: on every dial it answers the
// handshake, then writes the fuzz bytes and discards whatever the client
// sends. It owns its goroutines; stop ends them and waits.
type scriptedMaster struct {
	data []byte
	wg   sync.WaitGroup

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func (m *scriptedMaster) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		client.Close()
		server.Close()
		return nil, net.ErrClosed
	}
	m.conns = append(m.conns, client, server)
	m.wg.Add(1)
	m.mu.Unlock()
	go m.serve(server)
	return client, nil
}

func (m *scriptedMaster) serve(nc net.Conn) {
	defer m.wg.Done()
	defer nc.Close()
	rd := resp.NewReader(nc, 0, resp.Limits{})
	for range 2 { // INFO server, INFO replication
		if _, err := rd.ReadReply(); err != nil {
			return
		}
	}
	drained := make(chan struct{})
	go func() { // drains the client's commands so its writes never block
		defer close(drained)
		for {
			if _, err := rd.ReadReply(); err != nil {
				return
			}
		}
	}()
	defer func() { nc.Close(); <-drained }()
	if _, err := nc.Write(connInfoReply); err != nil {
		return
	}
	nc.Write(m.data)
	// Keep the pipe open until the client ends it (a protocol error, its
	// read timeout, or Close) or stop does.
	<-drained
}

func (m *scriptedMaster) stop() {
	m.mu.Lock()
	m.closed = true
	conns := m.conns
	m.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	m.wg.Wait()
}

func connSeeds() []string {
	return []string{
		"",
		"+OK\r\n", "+OK\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\n",
		"$3\r\nbar\r\n", "$-1\r\n", "-ERR wrong\r\n", "-NOSCRIPT No matching script\r\n",
		":1\r\n:0\r\n", "*2\r\n$1\r\na\r\n:2\r\n", "*-1\r\n", "_\r\n", "%1\r\n+k\r\n+v\r\n",
		">2\r\n+message\r\n+x\r\n+OK\r\n", "|1\r\n+a\r\n+b\r\n+OK\r\n",
		"hello world\r\n", "\x00\xff\xfe\r\n", "+OK", "$10\r\nabc",
		"$1000000000\r\n", "*1000000000\r\n", "$-2\r\n", "*-5\r\n", ":-\r\n",
		"$9223372036854775808\r\n", "*2\r\n*2\r\n*2\r\n*2\r\n*2\r\n*2\r\n*2\r\n*2\r\n*2\r\n*2\r\n",
		"$5\r\nab\r\n", "+OK\r\n$-1\r\n+OK\r\n",
	}
}

// FuzzConnReplies feeds arbitrary server bytes to a Conn after a valid
// handshake. Properties: no panic; every Do returns (a value or an error)
// within its deadline plus slack; Close returns and stops every goroutine;
// the heap stays bounded (Options.Limits caps what a reply may declare).
func FuzzConnReplies(f *testing.F) {
	for _, s := range connSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		before := runtime.NumGoroutine()
		m := &scriptedMaster{data: data}
		c, err := conn.New(conn.Options{
			Addr: "pipe", Dialer: m.dial,
			DialTimeout: 200 * time.Millisecond, ReadTimeout: 20 * time.Millisecond,
			ReconnectMin: time.Millisecond, ReconnectMax: 5 * time.Millisecond,
			ReadBufferSize: 64, Limits: connFuzzLimits,
		})
		if err != nil {
			t.Fatal(err)
		}
		// The handshake succeeds, but the fuzz bytes may kill the socket
		// before WaitReady looks: any *conn.Error is fine, a hang is not.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = c.WaitReady(ctx)
		cancel()
		var ce *conn.Error
		if err != nil && !errors.As(err, &ce) {
			c.Close()
			m.stop()
			t.Fatalf("WaitReady: %T %v", err, err)
		}
		for i := range 4 {
			ctx, cancel := context.WithTimeout(context.Background(), connDoTimeout)
			start := time.Now()
			vals, err := c.Do(ctx, "GET", "k")
			took := time.Since(start)
			cancel()
			if took > connDoTimeout+connSlack {
				t.Errorf("Do %d took %v (deadline %v)", i, took, connDoTimeout)
			}
			if err == nil && len(vals) == 0 {
				t.Errorf("Do %d: no error and no value", i)
			}
			var se *resp.ServerError
			if err != nil && !errors.As(err, &se) && !errors.As(err, &ce) {
				t.Errorf("Do %d: error is neither *resp.ServerError nor *conn.Error: %T %v", i, err, err)
			}
		}
		closed := make(chan struct{})
		go func() { c.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not return within 5s")
		}
		m.stop()
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Fatalf("goroutines: %d before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(time.Millisecond)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > 512<<20 {
			t.Fatalf("heap %d MiB after one input", ms.HeapAlloc>>20)
		}
	})
}
