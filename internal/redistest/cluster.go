package redistest

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volleylock/volley/internal/slot"
	"github.com/volleylock/volley/resp"
)

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// Shards is the number of primaries, each with an equal range of
	// slots. Default 3.
	Shards int
	// Replicas is the number of replicas per primary. Default 1.
	Replicas int
	// Server is every node's Options (Cluster is set by StartCluster).
	Server Options
}

// Cluster is a Redis Cluster of real processes on 127.0.0.1: Shards
// primaries with equal slot ranges, each with its replicas. Shard i keeps
// its index when a failover changes its primary. Its methods are safe for
// concurrent use; it owns its Servers, which Stop stops.
type Cluster struct {
	mu     sync.Mutex
	shards [][]*Server // per shard: the primary first, then the replicas
}

// StartClusterT starts a Cluster for the test and stops it at cleanup,
// printing the nodes' log tails if the test failed.
func StartClusterT(tb testing.TB, opts ClusterOptions) *Cluster {
	tb.Helper()
	c, err := StartCluster(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for _, s := range c.Nodes() {
				tb.Logf("cluster node %s log tail:\n%s", s.Addr(), s.LogTail(15))
			}
		}
		c.Stop()
	})
	return c
}

// StartCluster starts the nodes, gives each primary its slot range, joins
// them (CLUSTER MEET), makes the replicas replicate, and waits until every
// node says the cluster is ok and agrees on the slot map. The caller owns
// the Cluster and must Stop it.
func StartCluster(opts ClusterOptions) (*Cluster, error) {
	if opts.Shards <= 0 {
		opts.Shards = 3
	}
	if opts.Replicas < 0 {
		opts.Replicas = 0
	} else if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	opts.Server.Cluster = true
	c := &Cluster{}
	fail := func(err error) (*Cluster, error) {
		tails := ""
		for _, s := range c.Nodes() {
			tails += fmt.Sprintf("\n%s:\n%s", s.Addr(), s.LogTail(10))
		}
		c.Stop()
		return nil, fmt.Errorf("redistest: cluster: %w%s", err, tails)
	}
	for range opts.Shards {
		var shard []*Server
		for range 1 + opts.Replicas {
			s, err := StartServer(opts.Server)
			if err != nil {
				c.Stop()
				return nil, err
			}
			shard = append(shard, s)
		}
		c.shards = append(c.shards, shard)
	}
	for i, shard := range c.shards {
		first, last := i*slot.Count/opts.Shards, (i+1)*slot.Count/opts.Shards-1
		if _, err := Do(shard[0].Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(first), strconv.Itoa(last)); err != nil {
			return fail(err)
		}
	}
	seed := c.shards[0][0]
	host, port, _ := net.SplitHostPort(seed.Addr())
	for _, s := range c.Nodes()[1:] {
		if _, err := Do(s.Addr(), "CLUSTER", "MEET", host, port, strconv.Itoa(seed.bus)); err != nil {
			return fail(err)
		}
	}
	for _, shard := range c.shards {
		id, err := Do(shard[0].Addr(), "CLUSTER", "MYID")
		if err != nil {
			return fail(err)
		}
		for _, r := range shard[1:] {
			// A replica can replicate only a node it already knows.
			err := waitFor(10*time.Second, func() error {
				_, err := Do(r.Addr(), "CLUSTER", "REPLICATE", string(id[0].Bytes))
				return err
			})
			if err != nil {
				return fail(err)
			}
		}
	}
	if err := c.WaitOK(20 * time.Second); err != nil {
		return fail(err)
	}
	// A replica that has not synced yet would refuse to take over
	// (cluster-replica-validity-factor): wait for every link.
	for _, shard := range c.shards {
		for _, r := range shard[1:] {
			err := waitFor(20*time.Second, func() error {
				vals, err := Do(r.Addr(), "INFO", "replication")
				if err != nil {
					return err
				}
				if !strings.Contains(string(vals[0].Bytes), "master_link_status:up") {
					return fmt.Errorf("%s has not synced with its primary yet", r.Addr())
				}
				return nil
			})
			if err != nil {
				return fail(err)
			}
		}
	}
	return c, nil
}

// Nodes returns every node, shard by shard, primaries first.
func (c *Cluster) Nodes() []*Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Server
	for _, shard := range c.shards {
		out = append(out, shard...)
	}
	return out
}

// Primary returns shard i's primary.
func (c *Cluster) Primary(i int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shards[i][0]
}

// Primaries returns every shard's primary.
func (c *Cluster) Primaries() []*Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Server, len(c.shards))
	for i, shard := range c.shards {
		out[i] = shard[0]
	}
	return out
}

// SeedAddrs returns the primaries' addresses.
func (c *Cluster) SeedAddrs() []string { return Addrs(c.Primaries()) }

// ShardOf returns the shard that owns s.
func (c *Cluster) ShardOf(s int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return s * len(c.shards) / slot.Count
}

// WaitOK waits until every running node reports cluster_state:ok and the
// same primaries for the same slots as the Cluster's view.
func (c *Cluster) WaitOK(timeout time.Duration) error {
	return waitFor(timeout, func() error {
		want := map[string]bool{}
		for _, p := range c.Primaries() {
			want[p.Addr()] = true
		}
		for _, s := range c.Nodes() {
			if !s.Running() {
				continue
			}
			vals, err := Do(s.Addr(), "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			if !strings.Contains(string(vals[0].Bytes), "cluster_state:ok") {
				return fmt.Errorf("%s: cluster state not ok", s.Addr())
			}
			vals, err = Do(s.Addr(), "CLUSTER", "SLOTS")
			if err != nil {
				return err
			}
			got := map[string]bool{}
			for i, n := 1, 0; n < int(vals[0].Int) && i < len(vals); i, n = i+1+vals[i].Size, n+1 {
				if i+5 < len(vals) {
					got[net.JoinHostPort(string(vals[i+4].Bytes), strconv.FormatInt(vals[i+5].Int, 10))] = true
				}
			}
			for a := range want {
				if !got[a] {
					return fmt.Errorf("%s does not see %s as a primary yet", s.Addr(), a)
				}
			}
		}
		return nil
	})
}

// Failover promotes a replica of shard i in a coordinated failover
// (CLUSTER FAILOVER on the replica: the primary stops taking writes
// first), and waits until every node agrees. The old primary becomes the
// shard's replica.
func (c *Cluster) Failover(i int) error {
	c.mu.Lock()
	shard := c.shards[i]
	c.mu.Unlock()
	if len(shard) < 2 {
		return errors.New("redistest: shard has no replica")
	}
	replica := shard[1]
	if _, err := Do(replica.Addr(), "CLUSTER", "FAILOVER"); err != nil {
		return err
	}
	err := waitFor(20*time.Second, func() error {
		vals, err := Do(replica.Addr(), "ROLE")
		if err != nil {
			return err
		}
		if string(vals[1].Bytes) != "master" {
			return fmt.Errorf("%s is still a %s", replica.Addr(), vals[1].Bytes)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.promoted(i, 1)
	return c.WaitOK(20 * time.Second)
}

// KillPrimary kills shard i's primary (SIGKILL) and waits until a replica
// took its place (after the node timeout) and the other nodes agree.
func (c *Cluster) KillPrimary(i int) error {
	c.Primary(i).Kill()
	return c.WaitPromoted(i)
}

// WaitPromoted waits until a replica of shard i, whose primary is down,
// took its place, and the other nodes agree.
func (c *Cluster) WaitPromoted(i int) error {
	c.mu.Lock()
	shard := c.shards[i]
	c.mu.Unlock()
	var promoted int
	err := waitFor(30*time.Second, func() error {
		for j, r := range shard[1:] {
			vals, err := Do(r.Addr(), "ROLE")
			if err == nil && string(vals[1].Bytes) == "master" {
				promoted = j + 1
				return nil
			}
		}
		return errors.New("no replica promoted yet")
	})
	if err != nil {
		return err
	}
	c.promoted(i, promoted)
	return c.WaitOK(30 * time.Second)
}

// promoted makes shard i's node j its primary in the Cluster's view.
func (c *Cluster) promoted(i, j int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	shard := c.shards[i]
	shard[0], shard[j] = shard[j], shard[0]
}

// MoveSlot migrates slot s with its keys to shard to's primary, the way
// redis-cli --cluster reshard does (SETSLOT IMPORTING/MIGRATING, MIGRATE,
// SETSLOT NODE on every primary).
func (c *Cluster) MoveSlot(s, to int) error {
	from := c.Primary(c.ownerShard(s))
	dst := c.Primary(to)
	if from == dst {
		return nil
	}
	fromID, err := Do(from.Addr(), "CLUSTER", "MYID")
	if err != nil {
		return err
	}
	dstID, err := Do(dst.Addr(), "CLUSTER", "MYID")
	if err != nil {
		return err
	}
	ss := strconv.Itoa(s)
	if _, err := Do(dst.Addr(), "CLUSTER", "SETSLOT", ss, "IMPORTING", string(fromID[0].Bytes)); err != nil {
		return err
	}
	if _, err := Do(from.Addr(), "CLUSTER", "SETSLOT", ss, "MIGRATING", string(dstID[0].Bytes)); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(dst.Addr())
	for {
		keys, err := Do(from.Addr(), "CLUSTER", "GETKEYSINSLOT", ss, "100")
		if err != nil {
			return err
		}
		if keys[0].Int == 0 {
			break
		}
		args := []string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}
		for _, k := range keys[1:] {
			args = append(args, string(k.Bytes))
		}
		if _, err := Do(from.Addr(), args...); err != nil {
			return err
		}
	}
	for _, p := range c.Primaries() {
		if _, err := Do(p.Addr(), "CLUSTER", "SETSLOT", ss, "NODE", string(dstID[0].Bytes)); err != nil {
			return err
		}
	}
	return nil
}

// ownerShard returns the shard whose primary owns s now.
func (c *Cluster) ownerShard(s int) int {
	vals, err := Do(c.Primary(0).Addr(), "CLUSTER", "SLOTS")
	if err != nil {
		return c.ShardOf(s)
	}
	for i, n := 1, 0; n < int(vals[0].Int) && i < len(vals); i, n = i+1+vals[i].Size, n+1 {
		if i+5 < len(vals) && int(vals[i+1].Int) <= s && s <= int(vals[i+2].Int) {
			addr := net.JoinHostPort(string(vals[i+4].Bytes), strconv.FormatInt(vals[i+5].Int, 10))
			for j, p := range c.Primaries() {
				if p.Addr() == addr {
					return j
				}
			}
		}
	}
	return c.ShardOf(s)
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes() {
		s.Stop()
	}
}

// Do sends one command to addr on a connection of its own and returns the
// reply (its values copied: the caller owns them), or the error reply as
// an error. A control channel for tests, not a client.
func Do(addr string, args ...string) ([]resp.Value, error) {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("redistest: %s: %w", addr, err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(resp.AppendCommand(nil, args...)); err != nil {
		return nil, fmt.Errorf("redistest: %s: %w", addr, err)
	}
	vals, err := resp.NewReader(nc, 0, resp.Limits{}).ReadReply()
	if err != nil {
		return nil, fmt.Errorf("redistest: %s: %s: %w", addr, args[0], err)
	}
	if len(vals) > 0 && vals[0].IsError() {
		return nil, fmt.Errorf("redistest: %s: %s: %w", addr, strings.Join(args[:min(2, len(args))], " "), vals[0].Err())
	}
	out := make([]resp.Value, len(vals))
	for i, v := range vals {
		out[i] = v
		out[i].Bytes = append([]byte(nil), v.Bytes...)
	}
	return out, nil
}

// waitFor calls f until it returns nil or timeout passes, and returns its
// last error then.
func waitFor(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
