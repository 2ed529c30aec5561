package redistest

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volleylock/volley/resp"
)

// sentinelTimeout bounds each of StartSentinelGroup and Failover.
const sentinelTimeout = 30 * time.Second

// SentinelOptions configure StartSentinelGroup.
type SentinelOptions struct {
	// Replicas is the number of replicas of the primary. Default 1; -1
	// means none.
	Replicas int
	// Sentinels is the number of Sentinels. Default 3.
	Sentinels int
	// MasterName is the name the Sentinels know the primary by. Default
	// "mymaster".
	MasterName string
	// Quorum is the number of Sentinels that must find the primary down
	// before one of them fails it over. Default a majority of Sentinels
	// (2 of 3).
	Quorum int
	// DownAfter is the Sentinels' down-after-milliseconds: how long the
	// primary must not answer to be found down. Default 1s.
	DownAfter time.Duration
	// FailoverTimeout is the Sentinels' failover-timeout: how long a
	// failover may take, and half the time before a failed automatic one
	// is tried again. Default 3s.
	FailoverTimeout time.Duration
	// Server is the data servers' Options (the primary's and the
	// replicas'). The Sentinels use its Binary (default redis-server, or
	// $REDIS_SERVER: the same binary runs as a Sentinel with --sentinel)
	// and StartTimeout, not its Args.
	Server Options
}

// SentinelGroup is a primary, its replicas, and Sentinels that monitor it,
// real processes on 127.0.0.1. Each Sentinel's configuration file is in
// its directory, which it rewrites as Sentinels do.
//
// The group keeps a view of which server is the primary, which Failover
// and WaitNewPrimary update once every Sentinel reports the new one. A
// failover they do not wait for (after a Pause, say) is not in the view
// until WaitNewPrimary is called.
//
// Its methods are safe for concurrent use; Failover and WaitNewPrimary
// run one at a time. The group owns its Servers, the Sentinels
// included, which Stop stops; a caller may Kill, Pause or Restart one of
// them.
type SentinelGroup struct {
	name      string
	sentinels []*Server
	servers   []*Server // the primary and the replicas, in start order

	ops sync.Mutex // held by Failover and WaitNewPrimary

	mu      sync.Mutex
	primary *Server
}

// StartSentinelGroupT starts a SentinelGroup for the test and stops it at
// cleanup, printing every process's log tail if the test failed. An error
// fails the test (a missing binary too: it never skips).
func StartSentinelGroupT(tb testing.TB, opts SentinelOptions) *SentinelGroup {
	tb.Helper()
	g, err := StartSentinelGroup(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for _, s := range g.all() {
				tb.Logf("%s log tail:\n%s", s.Addr(), s.LogTail(15))
			}
		}
		g.Stop()
	})
	return g
}

// StartSentinelGroup starts the primary, the replicas (REPLICAOF), waits
// until they are in sync, then starts the Sentinels and waits until each
// one reports the primary, knows every replica with its link up, and
// knows the other Sentinels, so that a failover can start at once. The
// caller owns the group and must Stop it. On error no process is left
// running, and the error carries their log tails.
func StartSentinelGroup(opts SentinelOptions) (*SentinelGroup, error) {
	if opts.Replicas < 0 {
		opts.Replicas = 0
	} else if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.Sentinels <= 0 {
		opts.Sentinels = 3
	}
	if opts.MasterName == "" {
		opts.MasterName = "mymaster"
	}
	if strings.ContainsAny(opts.MasterName, " \t\r\n\"'") {
		return nil, fmt.Errorf("redistest: sentinel: master name %q: want no spaces or quotes", opts.MasterName)
	}
	if opts.Quorum <= 0 {
		opts.Quorum = opts.Sentinels/2 + 1
	}
	if opts.DownAfter <= 0 {
		opts.DownAfter = time.Second
	}
	if opts.FailoverTimeout <= 0 {
		opts.FailoverTimeout = 3 * time.Second
	}
	deadline := time.Now().Add(sentinelTimeout)
	g := &SentinelGroup{name: opts.MasterName}
	fail := func(err error) (*SentinelGroup, error) {
		err = withTails(fmt.Errorf("redistest: sentinel: %w", err), g.all())
		g.Stop()
		return nil, err
	}
	for range 1 + opts.Replicas {
		s, err := StartServer(opts.Server)
		if err != nil {
			g.Stop()
			return nil, err
		}
		g.servers = append(g.servers, s)
	}
	g.primary = g.servers[0]
	host, port, _ := net.SplitHostPort(g.primary.Addr())
	for _, r := range g.servers[1:] {
		if _, err := Do(r.Addr(), "REPLICAOF", host, port); err != nil {
			return fail(err)
		}
	}
	// A Sentinel learns the replicas from the primary's INFO, which it
	// asks for at once and then every 10s: they must be there first.
	err := waitFor(deadline, func() error {
		for _, r := range g.servers[1:] {
			ro, err := roleOf(r.Addr())
			if err != nil {
				return err
			}
			if ro.state != "connected" {
				return fmt.Errorf("%s is a %s, want a replica of %s (connected)", r.Addr(), ro, g.primary.Addr())
			}
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	conf := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s %[4]d\n"+
		"sentinel down-after-milliseconds %[1]s %[5]d\n"+
		"sentinel failover-timeout %[1]s %[6]d\n"+
		"sentinel parallel-syncs %[1]s 1\n",
		opts.MasterName, host, port, opts.Quorum, opts.DownAfter.Milliseconds(), opts.FailoverTimeout.Milliseconds())
	sopts := Options{Binary: opts.Server.Binary, StartTimeout: opts.Server.StartTimeout}
	for range opts.Sentinels {
		s, err := startServer(sopts, conf)
		if err != nil {
			g.Stop()
			return nil, err
		}
		g.sentinels = append(g.sentinels, s)
	}
	// Sentinels find each other by hellos on the primary, every 2s.
	if err := waitFor(deadline, g.checkSentinels); err != nil {
		return fail(err)
	}
	return g, nil
}

// checkSentinels returns nil if every Sentinel reports the primary (not
// down), every replica (link up) and every other Sentinel.
func (g *SentinelGroup) checkSentinels() error {
	for _, s := range g.sentinels {
		vals, err := Do(s.Addr(), "SENTINEL", "MASTER", g.name)
		if err != nil {
			return err
		}
		m := fieldsOf(vals, 0)
		if addr := net.JoinHostPort(m["ip"], m["port"]); addr != g.primary.Addr() || m["flags"] != "master" {
			return fmt.Errorf("sentinel %s: primary %s (%s), want %s (master)", s.Addr(), addr, m["flags"], g.primary.Addr())
		}
		if n := strconv.Itoa(len(g.sentinels) - 1); m["num-other-sentinels"] != n {
			return fmt.Errorf("sentinel %s knows %s other sentinels, want %s", s.Addr(), m["num-other-sentinels"], n)
		}
		vals, err = Do(s.Addr(), "SENTINEL", "REPLICAS", g.name)
		if err != nil {
			return err
		}
		var ok []string
		for _, e := range children(vals, 0) {
			r := fieldsOf(vals, e)
			if r["flags"] == "slave" && r["master-link-status"] == "ok" {
				ok = append(ok, net.JoinHostPort(r["ip"], r["port"]))
			}
		}
		for _, r := range g.servers[1:] {
			if !slices.Contains(ok, r.Addr()) {
				return fmt.Errorf("sentinel %s does not know replica %s (link up) yet", s.Addr(), r.Addr())
			}
		}
	}
	return nil
}

// fieldsOf returns the name/value pairs of the flat array at vals[i], as
// SENTINEL MASTER and SENTINEL REPLICAS answer (all values are strings).
func fieldsOf(vals []resp.Value, i int) map[string]string {
	out := map[string]string{}
	kids := children(vals, i)
	for j := 0; j+1 < len(kids); j += 2 {
		out[string(vals[kids[j]].Bytes)] = string(vals[kids[j+1]].Bytes)
	}
	return out
}

// SentinelAddrs returns the Sentinels' addresses.
func (g *SentinelGroup) SentinelAddrs() []string { return Addrs(g.sentinels) }

// MasterName returns the name the Sentinels know the primary by.
func (g *SentinelGroup) MasterName() string { return g.name }

// Primary returns the primary in the group's view: the first server
// until a failover, then the one Failover or WaitNewPrimary saw promoted.
func (g *SentinelGroup) Primary() *Server {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.primary
}

// Replicas returns every data server but the primary, in start order: a
// killed one among them (Running tells), and after a failover the old
// primary, which the Sentinels make a replica once it runs (some seconds
// after the failover: Sentinel waits for a newer configuration first).
func (g *SentinelGroup) Replicas() []*Server {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*Server
	for _, s := range g.servers {
		if s != g.primary {
			out = append(out, s)
		}
	}
	return out
}

// Failover asks a Sentinel for a failover (SENTINEL FAILOVER, which
// needs no agreement and no failure) and waits until every running
// Sentinel reports a new primary and that server reports role master;
// then Primary returns it. A Sentinel that has no replica fit to promote
// yet (NOGOODSLAVE, as right after a failover) or is still busy with one
// (INPROG) is asked again. Bounded by 30s; the error carries every
// process's log tail.
func (g *SentinelGroup) Failover() error {
	g.ops.Lock()
	defer g.ops.Unlock()
	old := g.Primary()
	if !slices.ContainsFunc(g.Replicas(), (*Server).Running) {
		return errors.New("redistest: sentinel: failover: no running replica")
	}
	fail := func(err error) error {
		return withTails(fmt.Errorf("redistest: sentinel: failover from %s: %w", old.Addr(), err), g.all())
	}
	deadline := time.Now().Add(sentinelTimeout)
	var final error
	err := waitFor(deadline, func() error {
		var s *Server
		for _, s = range g.sentinels {
			if s.Running() {
				break
			}
		}
		_, err := Do(s.Addr(), "SENTINEL", "FAILOVER", g.name)
		var se *resp.ServerError
		if errors.As(err, &se) && se.Prefix != "NOGOODSLAVE" && se.Prefix != "INPROG" {
			final = err
			return nil
		}
		return err
	})
	if err == nil {
		err = final
	}
	if err != nil {
		return fail(err)
	}
	if _, err := g.waitNewPrimary(old, deadline); err != nil {
		return fail(err)
	}
	return nil
}

// KillPrimary kills the primary (SIGKILL, as a crash). The Sentinels fail
// it over after DownAfter and an election; WaitNewPrimary waits for that.
func (g *SentinelGroup) KillPrimary() { g.Primary().Kill() }

// WaitNewPrimary waits up to timeout until every running Sentinel reports
// a primary other than Primary's and that server reports role master,
// makes it Primary and returns it. The error carries every process's log
// tail.
func (g *SentinelGroup) WaitNewPrimary(timeout time.Duration) (*Server, error) {
	g.ops.Lock()
	defer g.ops.Unlock()
	old := g.Primary()
	s, err := g.waitNewPrimary(old, time.Now().Add(timeout))
	if err != nil {
		return nil, withTails(fmt.Errorf("redistest: sentinel: waiting for a primary other than %s: %w", old.Addr(), err), g.all())
	}
	return s, nil
}

// waitNewPrimary waits until deadline for the Sentinels to agree on a
// primary other than old that says it is one, and makes it g's primary.
func (g *SentinelGroup) waitNewPrimary(old *Server, deadline time.Time) (*Server, error) {
	var next *Server
	err := waitFor(deadline, func() error {
		addr := ""
		for _, s := range g.sentinels {
			if !s.Running() {
				continue
			}
			vals, err := Do(s.Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.name)
			if err != nil {
				return err
			}
			kids := children(vals, 0)
			if len(kids) != 2 {
				return fmt.Errorf("sentinel %s: GET-MASTER-ADDR-BY-NAME: %d elements, want 2", s.Addr(), len(kids))
			}
			a := net.JoinHostPort(string(vals[kids[0]].Bytes), string(vals[kids[1]].Bytes))
			switch {
			case a == old.Addr():
				return fmt.Errorf("sentinel %s still reports %s", s.Addr(), a)
			case addr != "" && a != addr:
				return fmt.Errorf("sentinels report %s and %s", addr, a)
			}
			addr = a
		}
		if addr == "" {
			return errors.New("no sentinel running")
		}
		i := slices.IndexFunc(g.servers, func(s *Server) bool { return s.Addr() == addr })
		if i < 0 {
			return fmt.Errorf("the sentinels report %s, not a server of the group", addr)
		}
		ro, err := roleOf(addr)
		if err != nil {
			return err
		}
		if ro.name != "master" {
			return fmt.Errorf("the sentinels report %s, a %s", addr, ro)
		}
		next = g.servers[i]
		return nil
	})
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.primary = next
	g.mu.Unlock()
	return next, nil
}

// all returns the data servers, then the Sentinels.
func (g *SentinelGroup) all() []*Server {
	return append(slices.Clone(g.servers), g.sentinels...)
}

// Stop stops the Sentinels, then the data servers, and removes their
// directories. It is safe to call more than once; the group is not
// usable afterwards.
func (g *SentinelGroup) Stop() {
	for _, s := range g.sentinels {
		s.Stop()
	}
	for _, s := range g.servers {
		s.Stop()
	}
}
