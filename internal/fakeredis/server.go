package fakeredis

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// numDBs is the number of logical databases, as in Redis' default config.
const numDBs = 16

// Options configure a Server. The zero value is a password-less server on
// a free 127.0.0.1 port using the real clock.
type Options struct {
	// Addr is the TCP address to listen on. Empty means "127.0.0.1:0", a
	// free port on the loopback interface.
	Addr string
	// Password, if set, is the password of the "default" user: every
	// command except AUTH, HELLO and QUIT is refused with NOAUTH until the
	// connection authenticates, with AUTH <password>, AUTH default
	// <password> or HELLO <proto> AUTH default <password>. Empty means the
	// default user needs no password, as in a stock Redis.
	Password string
	// Users are extra ACL users, name to password, accepted by
	// AUTH <user> <password> and HELLO ... AUTH <user> <password>.
	// Start copies the map.
	Users map[string]string
	// Clock is the source of time for expiry, TTLs, TIME and uptime.
	// Nil means the real clock.
	Clock Clock
	// Server and Version are the identity the server reports (INFO
	// server, HELLO) and whose native compare-and-set commands it
	// answers as that server does (see native.go): Server "redis" or
	// "valkey", Version such as "8.6.3" or "9.1.2". Empty means Redis
	// 7.0.15, which has none. Every other command answers as Redis 7.0.
	Server, Version string
}

// Server is an in-process fake Redis master. Create one with Start or
// StartT; its methods are safe for concurrent use.
type Server struct {
	opts  Options
	id    identity // the server it reports and answers as (Options.Server, Options.Version)
	clock Clock
	ln    net.Listener
	port  int

	wg   sync.WaitGroup // the accept loop and one per connection
	done chan struct{}  // closed by Close

	commands   atomic.Int64
	refuse     atomic.Bool
	faultCount atomic.Int32 // len(faults), read without faultMu

	faultMu sync.Mutex
	faults  map[string]*faultEntry // by lower-case command name or "*"

	// mu is the server's single lock, as Redis' single thread: it guards
	// the data set, the script cache, the client registry and the
	// subscriptions, and every command runs holding it.
	mu       sync.Mutex
	dbs      [numDBs]map[string]entry
	scripts  map[string]scriptKind // by lower-case hex SHA-1
	runID    string
	started  time.Time
	clients  map[*client]struct{}
	channels [numNamespaces]map[string]map[*client]struct{} // subscribers by namespace and channel
	dropMsgs int                                            // deliveries to drop (DropMessages)
	nextID   int64
	ops      uint64 // commands run, to pace the expired-key sweep
	closed   bool
}

// Start listens on opts.Addr and serves connections in goroutines owned by
// the Server until Close. It is listening when it returns.
func Start(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakeredis: %w", err)
	}
	opts.Users = maps.Clone(opts.Users)
	s := &Server{
		opts:    opts,
		id:      newIdentity(opts.Server, opts.Version),
		clock:   opts.Clock,
		ln:      ln,
		done:    make(chan struct{}),
		faults:  make(map[string]*faultEntry),
		clients: make(map[*client]struct{}),
	}
	if s.clock == nil {
		s.clock = realClock{}
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		s.port = tcp.Port
	}
	s.resetLocked()
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// StartT starts a Server for the test and closes it when the test and its
// subtests end. It fails the test if the server cannot start.
func StartT(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := Start(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Addr returns the address the server listens on, "host:port".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// RunID returns the server's run_id, 40 lower-case hex characters, as
// reported by INFO server. Restart changes it.
func (s *Server) RunID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runID
}

// Keys returns the number of keys that have not expired, in all databases.
func (s *Server) Keys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	n := 0
	for _, db := range s.dbs {
		for _, e := range db {
			if e.live(now) {
				n++
			}
		}
	}
	return n
}

// Lookup returns key's value in database 0 and its time to live (0 when it
// has none); ok is false when the key does not exist, has expired or holds
// a hash (such as fencing's "volley:fence:unsure": read it with HGETALL) or
// a sorted set (such as a read-write lock's readers: read them with
// ZSCORE and ZCARD).
func (s *Server) Lookup(key string) (value string, ttl time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMs()
	e, ok := s.lookupLocked(0, []byte(key), now)
	if !ok || !e.isString() {
		return "", 0, false
	}
	if e.exp != 0 {
		ttl = time.Duration(e.exp-now) * time.Millisecond
	}
	return e.val, ttl, true
}

// Commands returns the number of commands read from clients since Start,
// including those answered with an error or by a fault. It is not reset by
// Restart. Commands queued behind a hung command are not counted.
func (s *Server) Commands() int64 { return s.commands.Load() }

// RefuseConnections makes the server close every new connection as soon
// as it is accepted (the listener stays open, so clients see the
// connection established and then EOF, not ECONNREFUSED), until called
// with false. Connections already open are not affected; Restart drops them.
// A connection counts as new until the server accepts it, which can be after
// the client's dial returned (the kernel completes the handshake first): a
// connection that has had a reply is certainly not new.
func (s *Server) RefuseConnections(refuse bool) { s.refuse.Store(refuse) }

// Restart simulates a restart without persistence: it closes every open
// connection (subscribers included), forgets every key, cached script and
// subscription, takes a new run_id and starts uptime from zero. The server
// keeps listening on the same address; faults, DropMessages and
// RefuseConnections stay as they were. Commands already read from a dropped
// connection are not run.
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for c := range s.clients {
		c.dropLocked()
	}
	clear(s.clients)
	s.resetLocked()
}

// Close stops listening, closes every connection (hung ones and
// subscribers included) and waits for every goroutine the server started
// to return. Calling it again does nothing and returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for c := range s.clients {
		c.dropLocked()
	}
	clear(s.clients)
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// resetLocked sets the state a freshly started server has.
func (s *Server) resetLocked() {
	for i := range s.dbs {
		s.dbs[i] = make(map[string]entry)
	}
	s.scripts = make(map[string]scriptKind)
	for i := range s.channels {
		s.channels[i] = make(map[string]map[*client]struct{})
	}
	s.runID = newRunID()
	s.started = s.clock.Now()
}

// serve accepts connections until the listener is closed.
func (s *Server) serve() {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure such as EMFILE: back off as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		if s.refuse.Load() {
			nc.Close()
			continue
		}
		c := newClient(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.nextID++
		c.id = s.nextID
		s.clients[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// removeClient forgets c and its subscriptions once its serve goroutine
// is done with it, and ends its push goroutine.
func (s *Server) removeClient(c *client) {
	s.mu.Lock()
	s.disconnectLocked(c)
	s.mu.Unlock()
}

// nowMs returns the clock's time in Unix milliseconds.
func (s *Server) nowMs() int64 { return s.clock.Now().UnixMilli() }

// uptime returns the time since start or the last Restart. Callers hold mu.
func (s *Server) uptimeLocked() time.Duration { return s.clock.Now().Sub(s.started) }

// portString returns the listening port in decimal.
func (s *Server) portString() string { return strconv.Itoa(s.port) }

// newRunID returns 40 random lower-case hex characters.
func newRunID() string {
	var b [20]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it panics rather)
	return hex.EncodeToString(b[:])
}

// replID is the server's master_replid (INFO replication). The fake is a
// master that is never promoted: it changes only with its run_id, at a
// Restart. Callers hold mu.
func (s *Server) replID() string { return s.runID }
