// Package redlocktest starts in-process Redis masters on loopback for
// testing code that uses redlock, in the style of net/http/httptest: no
// redis-server needed, and every master can be broken on purpose (stopped,
// restarted empty, paused, slowed, partitioned, made to answer garbage)
// and its keys expired by moving its clock.
//
//	ms := redlocktest.NewMasters(t, 5) // closed when the test ends
//	c, err := redlock.New(ctx, redlock.Config{Addrs: ms.Addrs()})
//	...
//	ms.Master(0).RestartEmpty()
//	ms.Master(1).Slow(time.Second)
//
// # What a master is
//
// Each master is a fake Redis server (speaking RESP2 and RESP3) behind a
// fault-injecting proxy, both in this process. It answers every command
// and script the redlock package sends exactly as Redis 7 does; a test in
// this module compares them byte for byte against a real redis-server. It
// is not a general-purpose Redis: values are strings, and scripts other
// than redlock's are refused. redlock's scripts run as Go code, not in an
// embedded Lua interpreter: the library sends a handful of fixed scripts,
// a Go version of each is short and exact, and an interpreter would add a
// large dependency to every user of this package for no test it could
// pass that these cannot.
//
// Masters start with an uptime of one hour, so that redlock's restart
// guard lets them vote at once. RestartEmpty resets the uptime, as a real
// restart does, and the guard then keeps that master out of the quorum for
// Config.MaxTTL: use a small MaxTTL in tests that restart masters.
//
// # Concurrency and lifetime
//
// Every method is safe for concurrent use, also while clients are
// connected. The Masters own their servers, proxies and goroutines; Close
// (or the end of the test, with NewMasters) stops all of them.
package redlocktest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/internal/faultproxy"
)

// Masters is a set of independent in-process masters.
type Masters struct {
	masters []*Master
}

// Master is one in-process master. Its address does not change for its
// whole life, across Stop, Start and RestartEmpty.
type Master struct {
	srv   *fakeredis.Server
	proxy *faultproxy.Proxy
	clock *clock
}

// NewMasters starts n masters for the test and closes them when the test
// and its subtests end. It fails the test if they cannot start.
func NewMasters(tb testing.TB, n int) *Masters {
	tb.Helper()
	ms, err := Start(n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ms.Close() })
	return ms
}

// Start starts n masters on free loopback ports. The caller owns them and
// must Close them.
func Start(n int) (*Masters, error) {
	if n < 1 {
		return nil, fmt.Errorf("redlocktest: %d masters: want at least 1", n)
	}
	ms := &Masters{}
	for range n {
		m, err := startMaster()
		if err != nil {
			ms.Close()
			return nil, err
		}
		ms.masters = append(ms.masters, m)
	}
	return ms, nil
}

func startMaster() (*Master, error) {
	clk := &clock{}
	srv, err := fakeredis.Start(fakeredis.Options{Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("redlocktest: %w", err)
	}
	clk.Advance(time.Hour) // up for an hour: the restart guard lets it vote
	p, err := faultproxy.Start(srv.Addr())
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("redlocktest: %w", err)
	}
	return &Master{srv: srv, proxy: p, clock: clk}, nil
}

// Close stops every master and waits for their goroutines. Clients still
// connected see their connections closed. It is safe to call more than once.
func (ms *Masters) Close() error {
	var errs []error
	for _, m := range ms.masters {
		errs = append(errs, m.proxy.Close(), m.srv.Close())
	}
	return errors.Join(errs...)
}

// Addrs returns the masters' addresses, "127.0.0.1:port", in order: what
// redlock.Config.Addrs takes.
func (ms *Masters) Addrs() []string {
	out := make([]string, len(ms.masters))
	for i, m := range ms.masters {
		out[i] = m.Addr()
	}
	return out
}

// Len returns the number of masters.
func (ms *Masters) Len() int { return len(ms.masters) }

// Master returns master i, in the order of Addrs. It panics if i is out of
// range.
func (ms *Masters) Master(i int) *Master { return ms.masters[i] }

// Advance moves every master's clock forward by d: keys whose time to live
// ends within d expire, as if d had passed on the masters (the clients'
// clocks do not move).
func (ms *Masters) Advance(d time.Duration) {
	for _, m := range ms.masters {
		m.Advance(d)
	}
}

// Addr returns the master's address.
func (m *Master) Addr() string { return m.proxy.Addr() }

// Stop takes the master down: open connections are reset and new ones
// refused until Start. Its keys are kept, as on a network outage.
func (m *Master) Stop() {
	m.proxy.Refuse(true)
	m.proxy.ResetAll()
}

// Start brings a stopped master back with the keys it had.
func (m *Master) Start() { m.proxy.Refuse(false) }

// RestartEmpty restarts the master without persistence: connections are
// dropped, keys and cached scripts forgotten, and it reports a new run_id
// and an uptime from zero, so redlock's restart guard keeps it out of the
// quorum for Config.MaxTTL.
func (m *Master) RestartEmpty() { m.srv.Restart() }

// Pause stops the master as SIGSTOP does: connections stay open and
// nothing is answered, but nothing is lost either; Resume answers what
// waited, in order. Clients see timeouts, and reset connections that wait
// past their conn.Options.ReadTimeout.
func (m *Master) Pause() { m.proxy.Pause(true) }

// Resume continues a paused master.
func (m *Master) Resume() { m.proxy.Pause(false) }

// Slow delays every reply by d on open and new connections; 0 makes the
// master fast again. Replies keep their order.
func (m *Master) Slow(d time.Duration) { m.proxy.SetLatency(0, d) }

// Partition cuts the master off while on: connections stay open but no
// byte crosses in either way (clients see timeouts, not errors). When it
// ends, connections that lost bytes are reset, as TCP gives up on them.
func (m *Master) Partition(on bool) { m.proxy.Blackhole(on) }

// Garbage, while on, makes the master answer every command with a reply
// that is not valid RESP: clients see protocol errors and reconnect.
func (m *Master) Garbage(on bool) {
	if on {
		m.srv.SetFault("*", fakeredis.Fault{Raw: []byte("?garbage\r\n")})
	} else {
		m.srv.ClearFaults()
	}
}

// Advance moves the master's clock forward by d: keys whose time to live
// ends within d expire.
func (m *Master) Advance(d time.Duration) { m.clock.Advance(d) }

// Get returns key's value and time to live (0 when it has none); ok is
// false when the master does not hold the key. A lock's value is its
// token: compare two masters' values, never print them.
func (m *Master) Get(key string) (value string, ttl time.Duration, ok bool) {
	return m.srv.Lookup(key)
}

// Keys returns how many keys the master holds.
func (m *Master) Keys() int { return m.srv.Keys() }

// DropMessages drops the next n pub/sub messages the master would deliver
// (n < 0: every one until DropMessages(0)): the releases it runs then wake
// no waiter through it, as lost messages would, and waiters fall back on
// the other masters or their retry delay.
func (m *Master) DropMessages(n int) { m.srv.DropMessages(n) }

// KillSubscribers closes every pub/sub connection to the master, as
// CLIENT KILL TYPE pubsub does, and returns how many it closed: clients
// reconnect and their waiters subscribe again.
func (m *Master) KillSubscribers() int { return m.srv.KillSubscribers() }

// clock is the real clock moved forward by Advance.
type clock struct{ off atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) Advance(d time.Duration) { c.off.Add(int64(d)) }
