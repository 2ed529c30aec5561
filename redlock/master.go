package redlock

import (
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/internal/pipe"
)

// master is one member of the quorum: one copy of every lock. For a
// standalone master (an address in Config.Addrs) it lives on one server
// that never changes; for a primary that Sentinels name, on the one they
// name, and it moves when they name another (see locator): the
// connection is then swapped for one to the new server, and the move
// counts like a restart for the restart guard (see guarded).
//
// A copy that a Redis Cluster places has no connection of its own: each
// key's copy lives on the node that serves its slot (see placement.go),
// and the node that takes over a slot of the copy's range (a failover, a
// resharding) counts as moved for that copy (see node.moved).
//
// The connection is read without a lock (conn) and swapped by the
// Client's locator goroutine only (move); the master owns it and closes
// it (the Client's closeMasters, or move for the one it replaces).
type master struct {
	addr string       // as configured, for errors and results
	opts pipe.Options // what its connections are made with (the pub/sub connection's too); changed by move under the wait room's mu
	cn   atomic.Pointer[pipe.Conn]

	// copy is the master's index among a cluster's copies.
	copy int
	// movedAt is when the master last moved to another server (unix
	// nanoseconds, 0: never), as the Client learned it.
	movedAt atomic.Int64

	// sentinel is, for a primary that Sentinels name, their entry; nil
	// otherwise.
	sentinel *sentinelEntry
}

func newMaster(addr string, opts pipe.Options, cn *pipe.Conn) *master {
	m := &master{addr: addr, opts: opts}
	m.cn.Store(cn)
	return m
}

// conn returns the connection to the master's current server.
func (m *master) conn() *pipe.Conn { return m.cn.Load() }

// move makes cn (made with opts) master i's connection from now on, at
// time at (which the restart guard counts from), moves its pub/sub
// connection too, and closes the one it replaces: requests still pending
// there fail (a master that moved has nothing to say there).
func (c *Client) move(i int, cn *pipe.Conn, opts pipe.Options, at time.Time) {
	m := c.masters[i]
	m.movedAt.Store(at.UnixNano())
	old := m.cn.Swap(cn)
	c.group.Replace(i, cn)
	c.room.moved(i, opts)
	old.Close()
}

// guarded reports whether the restart guard keeps m's votes on cn (the
// connection an answer came on) out of the quorum at now: cn's server
// started less than MaxTTL ago, or m moved to that server (over a
// cluster: cn's node took over a slot of m's range) less than MaxTTL ago (plus, for a move, the time a
// deposed server may still have taken writes: Config.FailoverGrace), so the
// server may lack locks that other clients still hold. A master restarts
// with a new run_id and a reset uptime, which the Conn reads on every
// (re)connect.
func (c *Client) guarded(m *master, cn *pipe.Conn, now time.Time) (since, until time.Time, guarded bool) {
	if c.cfg.DisableRestartGuard {
		return
	}
	if info := cn.Info(); info != nil {
		// Redis computes uptime_in_seconds from whole unix seconds, so it
		// may over-report by up to a second: keep the master out one
		// second longer.
		since = info.StartedAt()
		until = since.Add(c.cfg.MaxTTL + time.Second)
	}
	at := m.movedAt.Load()
	if c.cluster != nil {
		at = c.cluster.movedAt(m.copy, cn)
	}
	if at != 0 {
		moved := time.Unix(0, at)
		if u := moved.Add(c.cfg.MaxTTL + c.cfg.FailoverGrace); u.After(until) {
			since, until = moved, u
		}
	}
	return since, until, !until.IsZero() && now.Before(until)
}
