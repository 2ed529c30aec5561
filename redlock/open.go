package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/volleylock/volley/internal/ctxerr"
	"github.com/volleylock/volley/internal/pipe"
)

// New connects to every master in cfg and returns a Client. It waits for
// each master's first connect attempt (each bounded by the dial timeout,
// all of them by ctx), but not for success: masters that are unreachable
// (down, refusing connections, timing out) reconnect in the background,
// since services often start before their Redis and locks need only a
// quorum; Masters reports them, and WaitQuorum waits for a quorum.
//
// New fails on a bad Config (an error matching ErrConfig, also for an
// address whose host cannot be one, as in the typo
// redis//10.0.0.1:7001, rather than dialling it); on a master
// that no retry can make usable (an error matching ErrMasterUnusable that
// names it: credentials refused, or a password sent to a server that has
// none; a handshake command, EVAL or EVALSHA denied by an ACL (New runs
// a keyless script with each to know); a TLS certificate that does not
// verify, or a TLS handshake answered without TLS; a TLS mismatch, which
// the first connect attempt proves by asking the server in the other
// protocol (a rediss:// address whose server answers a PING in clear, a
// redis:// address whose server closes the connection at the first
// command and answers a TLS handshake: the error says which scheme to
// use); a database index refused; a Redis Cluster node, Sentinel or
// replica where a master was expected; or one server under two
// addresses); and when ctx ends before the first attempts do (an error
// matching ctx's, errors.Is). A master that may be a TLS mismatch but
// did not answer in the other protocol either counts as unreachable; its
// error (Masters, and each Lock's *Error) says which scheme it likely
// needs. On failure New closes what it opened. The caller must Close the
// Client.
func New(ctx context.Context, cfg Config) (*Client, error) {
	graceSet := cfg.FailoverGrace != 0
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, waiterID: newWaiterID()}
	c.wakeSuffix = wakeSuffix(c.waiterID)
	c.nativeChecks()
	cluster, err := c.addMasters(ctx)
	if err == nil {
		err = c.checkMasters(ctx, cluster != nil)
	}
	if err == nil && cluster != nil && !graceSet {
		c.cfg.FailoverGrace = c.clusterGrace(ctx)
	}
	if err == nil && cluster == nil && !graceSet {
		c.cfg.FailoverGrace = c.sentinelGrace(ctx)
	}
	if err != nil {
		c.closeMasters()
		return nil, err
	}
	c.quorum = len(c.masters)/2 + 1
	var conns []*pipe.Conn
	if c.cluster != nil {
		conns = c.cluster.nodeConns()
	} else {
		for _, m := range c.masters {
			conns = append(conns, m.conn())
		}
	}
	// Late answers are read within half of MasterTimeout of their sending, so
	// that ReplyLatency tells a slow master (above MasterTimeout) exactly.
	c.group = pipe.NewGroup(conns, c.cfg.MasterTimeout/2)
	c.ops.New = func() any { return c.newCall() }
	c.room.c, c.room.done = c, make(chan struct{})
	c.renew = newRenewer(c)
	if cluster != nil || slices.ContainsFunc(c.masters, func(m *master) bool { return m.sentinel != nil }) {
		c.locate = newLocator(c, cluster)
	}
	if cfg.Fencing {
		c.fence.ctx, c.fence.cancel = context.WithCancel(context.Background())
		// Fresh masters get their counters now, not at the first Lock.
		// Over a cluster the counters are per place, each repaired when a
		// fenced lock first meets it unsure.
		if c.cluster == nil {
			c.repairFence(ctx)
		}
	}
	return c, nil
}

// schemes are the URL schemes a Config.Addrs entry may have.
var schemes = []string{"redis", "rediss", "redis-cluster", "rediss-cluster", "redis-sentinel", "rediss-sentinel"}

// addMasters makes the masters of every Config.Addrs entry, with their
// connections (connecting in the background), and returns the cluster
// entry if there is one. On error the caller closes what was made.
func (c *Client) addMasters(ctx context.Context) (*clusterEntry, error) {
	var cluster *clusterEntry
	seen := make(map[string]bool, len(c.cfg.Addrs))
	for _, addr := range c.cfg.Addrs {
		switch {
		case isClusterAddr(addr):
			// Parsed here first, so that a mistake in it is a Config
			// error, not one of reaching the cluster.
			if _, err := parseClusterAddr(addr, c.cfg.Conn.options(c.cfg.MasterTimeout)); err != nil {
				return nil, invalid(err)
			}
			e, err := c.addCluster(ctx, addr)
			if err != nil {
				return nil, err
			}
			cluster = e
			continue
		case isSentinelAddr(addr):
			if err := c.addSentinel(ctx, addr); err != nil {
				return nil, err
			}
			continue
		}
		if scheme, _, ok := strings.Cut(addr, "://"); ok && !slices.Contains(schemes, scheme) {
			// Only the scheme: the rest may hold a password.
			return nil, invalidf("Config.Addrs: unknown scheme %q: want host:port, unix:/path, or a %s:// address", scheme, strings.Join(schemes, "://, "))
		}
		opts, err := pipe.ParseAddr(addr, c.cfg.Conn.options(c.cfg.MasterTimeout))
		if err != nil {
			return nil, invalidf("Config.Addrs: %w", err)
		}
		// The same master twice would vote twice: a broken quorum.
		id := opts.Network + " " + opts.Addr + " " + fmt.Sprint(opts.DB)
		if seen[id] {
			return nil, invalidf("Config.Addrs: %s (db %d) is listed twice", opts.Addr, opts.DB)
		}
		seen[id] = true
		opts = c.masterOptions(opts)
		cn, err := pipe.New(opts)
		if err != nil {
			return nil, invalidf("Config.Addrs: %w", err)
		}
		c.masters = append(c.masters, newMaster(opts.Addr, opts, cn))
	}
	return cluster, nil
}

// checkMasters waits for every master's first connect attempt (as long as
// ctx allows) and returns what makes one unusable (see unusable,
// scriptsDenied, sameServers and, over a cluster, agreeOnCopies), or ctx's
// error. A master that is merely unreachable is not an error.
func (c *Client) checkMasters(ctx context.Context, cluster bool) error {
	var unusables []error
	servers := c.servers()
	for _, sv := range servers {
		// A connect error stays in the Conn (it reconnects); only ctx's end
		// stops the wait, and errors no retry can fix fail New.
		err := sv.cn.WaitReady(ctx)
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("redlock: New: waiting for %s: %w", sv.addr, ctxerr.Of(ctx))
		}
		if uerr := unusable(sv, cluster, err); uerr != nil {
			unusables = append(unusables, uerr)
		} else if err == nil {
			if perr := scriptsDenied(ctx, sv, c.cfg.Conn.dialTimeout()); perr != nil {
				unusables = append(unusables, perr)
			}
			c.probeNatives(ctx, sv, c.cfg.Conn.dialTimeout())
		}
	}
	if err := sameServers(servers); err != nil {
		unusables = append(unusables, err)
	}
	if cluster && len(unusables) == 0 {
		if err := c.agreeOnCopies(ctx); err != nil {
			unusables = append(unusables, err)
		}
	}
	return errors.Join(unusables...)
}

func (c *Client) closeMasters() {
	for _, sv := range c.servers() {
		sv.cn.Close()
	}
}

// Close closes every connection and stops every goroutine the Client
// started. Locks still held expire with their TTL; the work of Do calls
// under way is cancelled at once (their locks can no longer be extended),
// and they return an error matching ErrNotHeld and ErrClosed. Operations
// under way fail with connection errors; later ones with ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.renew.close()
	if c.locate != nil {
		c.locate.close()
	}
	c.room.close()
	c.turns.close()
	c.fence.close()
	c.closeMasters()
	c.group.Close() // after the masters: a burst under way fails at once, and lets go
	return nil
}
