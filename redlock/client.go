package redlock

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// Client locks keys across the masters of its Config. It is safe for
// concurrent use; create one per set of masters and share it.
type Client struct {
	cfg     Config
	masters []*master
	quorum  int

	ops    sync.Pool   // *call: per-call state, reused
	turns  turns       // how the keys pass between this Client and others (see turns.go)
	group  *pipe.Group // the masters' connections, for fan-outs (see fanout)
	tagLen int         // the length of every copy's tag: >0 for a Redis Cluster's copies (see wire)
	// waiterID names this Client among a key's waiters (see waiters.go).
	waiterID [waiterIDLen]byte
	// wakeSuffix ends this Client's wake channels (see waiters.go).
	wakeSuffix string
	cluster    *clusterState // where a Redis Cluster's copies are (see placement.go); nil otherwise
	locate     *locator      // follows where masters are, for a Redis Cluster or Sentinels; nil otherwise
	renew      *renewer      // keeps Do's locks extended
	room       waitRoom      // where Locks wait for a release
	fence      fencer        // repairs of the fencing counters (Config.Fencing)
	closed     atomic.Bool
	// looksRefused: a master's ACL refused a waiter's look (MGET, see
	// peek.go); this Client's waits then attempt as they run out.
	looksRefused atomic.Bool

	nativeOff atomic.Uint32                           // native forms refused by a master, a bit per nativeVerb (see native.go)
	natCheck  [numVerbs]func(reply []resp.Value) bool // the native forms' reply checks (see nativeChecks)
}

// masterOptions completes a master's connection options: the scripts every
// connect loads and, with Fencing, the counters' check (see fenceSetup).
func (c *Client) masterOptions(opts pipe.Options) pipe.Options {
	opts.Scripts = append(slices.Clip(opts.Scripts), sentBySHA...)
	if c.cfg.Fencing && c.cluster != nil {
		// Over a cluster a node's counters are checked per slot, by the
		// scripts (see fenceTail), not per connection.
		opts.Scripts = append(opts.Scripts, vouchedBySHA...)
		return opts
	}
	if c.cfg.Fencing {
		opts.Setup = append(slices.Clip(opts.Setup), fenceSetup())
		user := opts.OnConnect
		opts.OnConnect = func(info *pipe.ServerInfo) {
			c.fence.onConnect(info)
			if user != nil {
				user(info)
			}
		}
	}
	return opts
}

// server is one server that the Client's masters live on, and its
// connection: a standalone master's, a Sentinel primary's, or a cluster
// node's.
type server struct {
	addr string
	cn   *pipe.Conn
}

// servers returns the servers of the Client's masters: one per master, or
// a cluster's nodes.
func (c *Client) servers() []server {
	if c.cluster != nil {
		v := c.cluster.view.Load()
		out := make([]server, len(v.nodes))
		for i, n := range v.nodes {
			out[i] = server{n.addr, n.cn}
		}
		return out
	}
	out := make([]server, len(c.masters))
	for i, m := range c.masters {
		out[i] = server{m.addr, m.conn()}
	}
	return out
}

// FailoverGrace returns the FailoverGrace in effect: Config.FailoverGrace,
// or over a Redis Cluster when that is zero, the one read from the
// cluster at New (see Config.FailoverGrace).
func (c *Client) FailoverGrace() time.Duration { return c.cfg.FailoverGrace }

// Quorum returns the number of masters that must agree: len(Addrs)/2 + 1.
func (c *Client) Quorum() int { return c.quorum }

// MasterStatus is a master's health as the Client sees it.
type MasterStatus struct {
	Addr  string
	Err   error            // nil while connected
	Info  *conn.ServerInfo // from the latest connect; nil before the first
	Guard time.Time        // when the restart guard lets its votes count again; zero if it does now
	// SharesWith lists, over a Redis Cluster, the other copies that are on
	// one of this copy's primaries for some keys (by index, in order): a
	// failure of that primary costs those keys' locks both votes (see
	// EventCopiesShared). Nil otherwise.
	SharesWith []int
}

// Masters reports each master's connection state, in Config.Addrs order.
// Over a Redis Cluster a master is a copy, which lives on every primary
// that owns part of its slot range: Addr lists them (comma-separated, by
// slot), Err is the first of their errors, Info the first one's, and Guard
// the latest of their guards. Two copies that list one primary share it:
// a lock whose copies both live there loses both votes when it fails.
func (c *Client) Masters() []MasterStatus {
	out := make([]MasterStatus, len(c.masters))
	now := time.Now()
	for i, m := range c.masters {
		var conns []*pipe.Conn
		if c.cluster != nil {
			v := c.cluster.view.Load()
			for _, n := range v.byCopy[i] {
				conns = append(conns, n.cn)
			}
			out[i].SharesWith = c.cluster.sharesWith(v, i)
		} else {
			conns = []*pipe.Conn{m.conn()}
		}
		var addrs []string
		for _, cn := range conns {
			addrs = append(addrs, cn.Addr())
			if out[i].Err == nil {
				out[i].Err = cn.Err()
			}
			if _, until, guarded := c.guarded(m, cn, now); guarded && until.After(out[i].Guard) {
				out[i].Guard = until
			}
		}
		out[i].Addr, out[i].Info = strings.Join(addrs, ","), conns[0].Info()
	}
	return out
}
