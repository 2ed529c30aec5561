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

	"github.com/volleylock/volley/internal/slot"
)

// clusterTimeout bounds each of StartCluster, Failover, KillPrimary and
// MoveSlot: forming the cluster, or a change and every node agreeing on
// it, takes a few seconds with a node timeout of 1s.
const clusterTimeout = 30 * time.Second

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// Shards is the number of primaries, each with an equal range of
	// slots. Default 3.
	Shards int
	// Replicas is the number of replicas per primary. Default 1; -1 means
	// none.
	Replicas int
	// Server is every node's Options: Binary (default redis-server, or
	// $REDIS_SERVER) and ClusterNodeTimeout (default 1s) among them.
	// StartCluster sets Options.Cluster.
	Server Options
}

// Cluster is a Redis Cluster of real processes on 127.0.0.1: Shards
// primaries with equal slot ranges, each with its replicas, formed with
// CLUSTER commands alone. Shard i keeps its index when a failover changes
// its primary.
//
// The Cluster keeps a view of the topology (which node is shard i's
// primary, which shard owns each slot) that its own changes (Failover,
// KillPrimary, WaitPromoted, MoveSlot) update once every node agrees with
// it. A change made by other means, such as a CLUSTER command sent with Do,
// is not in the view.
//
// Its methods are safe for concurrent use; the changes run one at a time.
// The Cluster owns its Servers, which Stop stops; a caller may Kill,
// Pause or Restart one of them, as a failure of that node (a restarted
// node rejoins, a former primary as a replica of its shard).
type Cluster struct {
	ops sync.Mutex // held by a change for its whole run

	mu     sync.Mutex
	shards [][]*Server        // per shard: the primary first, then the replicas
	owner  []int              // slot -> shard
	ids    map[*Server]string // node IDs (CLUSTER MYID)
}

// StartClusterT starts a Cluster for the test and stops it at cleanup,
// printing the nodes' log tails if the test failed. An error fails the
// test (a missing binary too: it never skips).
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

// StartCluster starts the nodes, gives each primary its slot range
// (CLUSTER ADDSLOTSRANGE), joins them (CLUSTER MEET), makes the replicas
// replicate (CLUSTER REPLICATE), and waits until every node says the
// cluster is ok, agrees on the slot map and every replica is in sync. The
// caller owns the Cluster and must Stop it. On error no process is left
// running, and the error carries the nodes' log tails.
func StartCluster(opts ClusterOptions) (*Cluster, error) {
	if opts.Shards <= 0 {
		opts.Shards = 3
	}
	if opts.Shards > slot.Count {
		return nil, fmt.Errorf("redistest: cluster: %d shards, more than the %d slots", opts.Shards, slot.Count)
	}
	if opts.Replicas < 0 {
		opts.Replicas = 0
	} else if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	opts.Server.Cluster = true
	deadline := time.Now().Add(clusterTimeout)
	c := &Cluster{owner: make([]int, slot.Count), ids: map[*Server]string{}}
	for i := range opts.Shards {
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
		for s := i * slot.Count / opts.Shards; s < (i+1)*slot.Count/opts.Shards; s++ {
			c.owner[s] = i
		}
	}
	if err := c.form(opts.Shards, deadline); err != nil {
		err = withTails(fmt.Errorf("redistest: cluster: %w", err), c.Nodes())
		c.Stop()
		return nil, err
	}
	return c, nil
}

// form makes one cluster of c's nodes.
func (c *Cluster) form(shards int, deadline time.Time) error {
	for _, s := range c.Nodes() {
		id, err := doText(s.Addr(), "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		c.ids[s] = id
	}
	for i, shard := range c.shards {
		first, last := i*slot.Count/shards, (i+1)*slot.Count/shards-1
		if _, err := Do(shard[0].Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(first), strconv.Itoa(last)); err != nil {
			return err
		}
	}
	seed := c.shards[0][0]
	host, port, _ := net.SplitHostPort(seed.Addr())
	for _, s := range c.Nodes()[1:] {
		if _, err := Do(s.Addr(), "CLUSTER", "MEET", host, port, strconv.Itoa(seed.bus)); err != nil {
			return err
		}
	}
	for _, shard := range c.shards {
		for _, r := range shard[1:] {
			// A replica can replicate only a node it already knows
			// ("ERR Unknown node"): gossip brings it from the seed.
			err := waitFor(deadline, func() error {
				_, err := Do(r.Addr(), "CLUSTER", "REPLICATE", c.ids[shard[0]])
				return err
			})
			if err != nil {
				return err
			}
		}
	}
	return waitFor(deadline, c.check)
}

// Nodes returns every node, shard by shard, each shard's primary first.
func (c *Cluster) Nodes() []*Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Server
	for _, shard := range c.shards {
		out = append(out, shard...)
	}
	return out
}

// Primary returns shard i's primary. It panics if there is no shard i,
// as an index out of range does.
func (c *Cluster) Primary(i int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shards[i][0]
}

// Primaries returns every shard's primary, shard i's at index i.
func (c *Cluster) Primaries() []*Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Server, len(c.shards))
	for i, shard := range c.shards {
		out[i] = shard[0]
	}
	return out
}

// Replicas returns shard i's replicas, a killed former primary among them
// (Running tells). It panics if there is no shard i.
func (c *Cluster) Replicas(i int) []*Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.shards[i][1:])
}

// SeedAddrs returns the primaries' addresses, a client's seed list.
func (c *Cluster) SeedAddrs() []string { return Addrs(c.Primaries()) }

// ShardOf returns the shard that owns slot s (0 <= s < 16384): at start
// the one whose equal range holds it, after MoveSlot the one it moved to.
// It panics if s is not a slot.
func (c *Cluster) ShardOf(s int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owner[s]
}

// KeySlot returns key's hash slot as Redis Cluster computes it: CRC16
// (XMODEM) of the key, or of its hash tag (the bytes between the first
// '{' and the first '}' after it, when there are any), modulo 16384.
func KeySlot(key string) int { return slot.Of(key) }

// WaitOK waits up to timeout until every running node reports
// cluster_state:ok and the Cluster's slot map in CLUSTER SLOTS (each
// range with its shard's primary and running replicas), each primary
// reports role master, and each replica replicates its shard's primary
// with its link up. The error names the first thing still missing. A
// paused node counts as running: WaitOK fails while it is paused.
func (c *Cluster) WaitOK(timeout time.Duration) error {
	return waitFor(time.Now().Add(timeout), c.check)
}

// slotRange is a range of slots with its nodes' addresses, as CLUSTER
// SLOTS lists them.
type slotRange struct {
	first, last int
	primary     string
	replicas    string // sorted, comma-separated
}

// check returns nil if every running node agrees with c's view, or what
// does not.
func (c *Cluster) check() error {
	c.mu.Lock()
	shards := make([][]*Server, len(c.shards))
	for i, shard := range c.shards {
		shards[i] = slices.Clone(shard)
	}
	owner := slices.Clone(c.owner)
	c.mu.Unlock()
	// Every node lists a shard's running replicas once they have a
	// replication offset; a dead one once it is marked failing.
	replicas := make([]string, len(shards))
	for i, shard := range shards {
		var addrs []string
		for _, r := range shard[1:] {
			if r.Running() {
				addrs = append(addrs, r.Addr())
			}
		}
		slices.Sort(addrs)
		replicas[i] = strings.Join(addrs, ",")
	}
	var want []slotRange
	for s, i := range owner {
		if n := len(want); n > 0 && want[n-1].last == s-1 && want[n-1].primary == shards[i][0].Addr() {
			want[n-1].last = s
		} else {
			want = append(want, slotRange{s, s, shards[i][0].Addr(), replicas[i]})
		}
	}
	for _, shard := range shards {
		for j, s := range shard {
			if !s.Running() {
				continue
			}
			info, err := doText(s.Addr(), "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			if st := infoField(info, "cluster_state"); st != "ok" {
				return fmt.Errorf("%s: cluster_state:%s", s.Addr(), st)
			}
			got, err := clusterSlots(s.Addr())
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s: CLUSTER SLOTS %s, want %s", s.Addr(), diffRanges(got, want), formatRange(want, 0))
			}
			r, err := roleOf(s.Addr())
			if err != nil {
				return err
			}
			switch {
			case j == 0 && r.name != "master":
				return fmt.Errorf("%s is a %s, want a primary", s.Addr(), r)
			case j > 0 && (r.name != "slave" || r.primary != shard[0].Addr() || r.state != "connected"):
				return fmt.Errorf("%s is a %s, want a replica of %s (connected)", s.Addr(), r, shard[0].Addr())
			}
		}
	}
	return nil
}

// clusterSlots returns addr's CLUSTER SLOTS, its ranges in order and
// adjacent ranges of one primary merged.
func clusterSlots(addr string) ([]slotRange, error) {
	vals, err := Do(addr, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	var out []slotRange
	for _, e := range children(vals, 0) {
		kids := children(vals, e)
		if len(kids) < 3 {
			return nil, fmt.Errorf("redistest: %s: CLUSTER SLOTS: an entry of %d elements", addr, len(kids))
		}
		var addrs []string
		for _, k := range kids[2:] {
			node := children(vals, k)
			if len(node) < 2 {
				return nil, fmt.Errorf("redistest: %s: CLUSTER SLOTS: a node of %d elements", addr, len(node))
			}
			addrs = append(addrs, net.JoinHostPort(string(vals[node[0]].Bytes), strconv.FormatInt(vals[node[1]].Int, 10)))
		}
		slices.Sort(addrs[1:])
		out = append(out, slotRange{
			first:    int(vals[kids[0]].Int),
			last:     int(vals[kids[1]].Int),
			primary:  addrs[0],
			replicas: strings.Join(addrs[1:], ","),
		})
	}
	slices.SortFunc(out, func(a, b slotRange) int { return a.first - b.first })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && merged[n-1].last == r.first-1 && merged[n-1].primary == r.primary && merged[n-1].replicas == r.replicas {
			merged[n-1].last = r.last
		} else {
			merged = append(merged, r)
		}
	}
	return merged, nil
}

// diffRanges describes got by its first range that differs from want's.
func diffRanges(got, want []slotRange) string {
	for i := range got {
		if i >= len(want) || got[i] != want[i] {
			return formatRange(got, i)
		}
	}
	return fmt.Sprintf("has %d ranges, want %d", len(got), len(want))
}

// formatRange formats the ranges from the i-th on, at most three.
func formatRange(rs []slotRange, i int) string {
	var parts []string
	for _, r := range rs[i:min(i+3, len(rs))] {
		parts = append(parts, fmt.Sprintf("%d-%d@%s+[%s]", r.first, r.last, r.primary, r.replicas))
	}
	if i+3 < len(rs) {
		parts = append(parts, "...")
	}
	return fmt.Sprintf("[%d of %d: %s]", i+1, len(rs), strings.Join(parts, " "))
}

// shard returns a copy of shard i, or an error if there is none.
func (c *Cluster) shard(i int) ([]*Server, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.shards) {
		return nil, fmt.Errorf("redistest: cluster: no shard %d (%d shards)", i, len(c.shards))
	}
	return slices.Clone(c.shards[i]), nil
}

// Failover promotes a replica of shard i in a coordinated failover: it
// waits until a running replica is in sync, sends it CLUSTER FAILOVER
// (the primary stops taking writes and hands over), waits until it
// reports role master, makes it shard i's primary in the Cluster's view,
// and waits until every node agrees (WaitOK). The old primary becomes a
// replica of the shard. Bounded by 30s; the error carries the shard's
// log tails.
func (c *Cluster) Failover(i int) error {
	c.ops.Lock()
	defer c.ops.Unlock()
	shard, err := c.shard(i)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(shard[1:], (*Server).Running) {
		return fmt.Errorf("redistest: cluster: shard %d has no running replica to fail over to", i)
	}
	fail := func(err error) error {
		return withTails(fmt.Errorf("redistest: cluster: failover of shard %d: %w", i, err), shard)
	}
	deadline := time.Now().Add(clusterTimeout)
	var next int
	err = waitFor(deadline, func() error {
		for j, r := range shard[1:] {
			if !r.Running() {
				continue
			}
			if ro, err := roleOf(r.Addr()); err == nil && ro.name == "slave" && ro.state == "connected" {
				next = j + 1
				return nil
			}
		}
		return errors.New("no replica in sync with its primary")
	})
	if err != nil {
		return fail(err)
	}
	replica := shard[next]
	if _, err := Do(replica.Addr(), "CLUSTER", "FAILOVER"); err != nil {
		return fail(err)
	}
	err = waitFor(deadline, func() error {
		ro, err := roleOf(replica.Addr())
		if err != nil {
			return err
		}
		if ro.name != "master" {
			return fmt.Errorf("%s is still a %s", replica.Addr(), ro)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	c.promote(i, replica)
	if err := waitFor(deadline, c.check); err != nil {
		return fail(err)
	}
	return nil
}

// KillPrimary kills shard i's primary (SIGKILL, as a crash) and waits, as
// WaitPromoted does, until a replica took its place (after the node
// timeout and an election) and every running node agrees. To observe the
// cluster in between, kill with Primary(i).Kill() and call WaitPromoted.
func (c *Cluster) KillPrimary(i int) error {
	shard, err := c.shard(i)
	if err != nil {
		return err
	}
	shard[0].Kill()
	return c.WaitPromoted(i)
}

// FailoverLosingWrites fails each of shards over to a replica that lacks
// the latest writes, as when a primary dies before its replica read
// them: it stops (SIGSTOP) a replica of each shard, cuts its replication
// link (CLIENT KILL TYPE replica on the primary), runs during (whatever
// the primaries take meanwhile is what the replicas will lack), kills the
// primaries (SIGKILL), continues the replicas and has each take its shard
// over at once (CLUSTER FAILOVER TAKEOVER: no handshake with the dead
// primary, no election), then waits until every running node agrees. It
// returns the killed primaries, which a caller may Restart (each rejoins
// as a replica). Bounded by 30s after during; the error carries the
// shards' log tails.
func (c *Cluster) FailoverLosingWrites(shards []int, during func()) ([]*Server, error) {
	c.ops.Lock()
	defer c.ops.Unlock()
	var primaries, replicas, all []*Server
	for _, i := range shards {
		shard, err := c.shard(i)
		if err != nil {
			return nil, err
		}
		j := slices.IndexFunc(shard[1:], (*Server).Running)
		if j < 0 {
			return nil, fmt.Errorf("redistest: cluster: shard %d has no running replica to fail over to", i)
		}
		primaries, replicas = append(primaries, shard[0]), append(replicas, shard[1+j])
		all = append(all, shard...)
	}
	fail := func(err error) error {
		return withTails(fmt.Errorf("redistest: cluster: failover of shards %v losing writes: %w", shards, err), all)
	}
	resume := func() {
		for _, r := range replicas {
			_ = r.Resume()
		}
	}
	for k, r := range replicas {
		if err := r.Pause(); err != nil {
			resume()
			return nil, fail(err)
		}
		// Cut the replication link while the replica cannot reconnect:
		// what the primary sent before is in the replica's socket, read
		// when it continues; what it takes from now on is never sent.
		if _, err := Do(primaries[k].Addr(), "CLIENT", "KILL", "TYPE", "replica"); err != nil {
			resume()
			return nil, fail(err)
		}
	}
	during()
	for _, p := range primaries {
		p.Kill()
	}
	resume()
	deadline := time.Now().Add(clusterTimeout)
	for k, r := range replicas {
		// The replica may still be reconnecting its cluster bus: retry.
		err := waitFor(deadline, func() error {
			_, err := Do(r.Addr(), "CLUSTER", "FAILOVER", "TAKEOVER")
			return err
		})
		if err == nil {
			err = waitFor(deadline, func() error {
				ro, err := roleOf(r.Addr())
				if err != nil {
					return err
				}
				if ro.name != "master" {
					return fmt.Errorf("%s is still a %s", r.Addr(), ro)
				}
				return nil
			})
		}
		if err != nil {
			return primaries, fail(err)
		}
		c.promote(shards[k], r)
	}
	if err := waitFor(deadline, c.check); err != nil {
		return primaries, fail(err)
	}
	return primaries, nil
}

// WaitPromoted waits until a running replica of shard i reports role
// master (the failover that follows its primary's failure), makes it
// shard i's primary in the Cluster's view, and waits until every running
// node agrees (WaitOK). Bounded by 30s; the error carries the shard's log
// tails.
func (c *Cluster) WaitPromoted(i int) error {
	return c.waitPromoted(i, time.Now().Add(clusterTimeout))
}

// waitPromoted is WaitPromoted, bounded by deadline.
func (c *Cluster) waitPromoted(i int, deadline time.Time) error {
	c.ops.Lock()
	defer c.ops.Unlock()
	shard, err := c.shard(i)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return withTails(fmt.Errorf("redistest: cluster: promotion in shard %d: %w", i, err), shard)
	}
	var promoted *Server
	err = waitFor(deadline, func() error {
		for _, r := range shard[1:] {
			if !r.Running() {
				continue
			}
			if ro, err := roleOf(r.Addr()); err == nil && ro.name == "master" {
				promoted = r
				return nil
			}
		}
		return fmt.Errorf("no replica of %s promoted yet", shard[0].Addr())
	})
	if err != nil {
		return fail(err)
	}
	c.promote(i, promoted)
	if err := waitFor(deadline, c.check); err != nil {
		return fail(err)
	}
	return nil
}

// promote makes s shard i's primary in the Cluster's view, its old
// primary a replica.
func (c *Cluster) promote(i int, s *Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	shard := c.shards[i]
	j := slices.Index(shard, s)
	shard[0], shard[j] = shard[j], shard[0]
}

// MoveSlot migrates slot s with its keys to shard to, the way redis-cli
// --cluster reshard does: CLUSTER SETSLOT IMPORTING on the destination
// and MIGRATING on the source, MIGRATE of the keys in batches
// (GETKEYSINSLOT), then SETSLOT NODE on the destination, the source and
// every other primary. It waits until every node agrees (WaitOK); then
// ShardOf(s) is to. While it runs, the source answers ASK for keys it
// no longer has. Bounded by 30s; the error carries both primaries' log
// tails. Moving a slot to the shard that owns it does nothing.
func (c *Cluster) MoveSlot(s, to int) error {
	if s < 0 || s >= slot.Count {
		return fmt.Errorf("redistest: cluster: %d is not a slot", s)
	}
	if _, err := c.shard(to); err != nil {
		return err
	}
	c.ops.Lock()
	defer c.ops.Unlock()
	from := c.ShardOf(s)
	if from == to {
		return nil
	}
	src, dst := c.Primary(from), c.Primary(to)
	fail := func(err error) error {
		return withTails(fmt.Errorf("redistest: cluster: moving slot %d from shard %d to %d: %w", s, from, to, err), []*Server{src, dst})
	}
	deadline := time.Now().Add(clusterTimeout)
	if err := c.beginMove(s, to); err != nil {
		return fail(err)
	}
	if err := c.migrateKeys(s, to, deadline); err != nil {
		return fail(err)
	}
	if err := c.finishMove(s, to); err != nil {
		return fail(err)
	}
	if err := waitFor(deadline, c.check); err != nil {
		return fail(err)
	}
	return nil
}

// beginMove puts slot s in migration from its shard to shard to:
// IMPORTING on the destination first, so that an ASK from the source
// finds it ready.
func (c *Cluster) beginMove(s, to int) error {
	src, dst := c.Primary(c.ShardOf(s)), c.Primary(to)
	ss := strconv.Itoa(s)
	if _, err := Do(dst.Addr(), "CLUSTER", "SETSLOT", ss, "IMPORTING", c.id(src)); err != nil {
		return err
	}
	_, err := Do(src.Addr(), "CLUSTER", "SETSLOT", ss, "MIGRATING", c.id(dst))
	return err
}

// migrateKeys moves the keys of slot s to shard to's primary, 100 at a
// time, until the source has none left or deadline passes.
func (c *Cluster) migrateKeys(s, to int, deadline time.Time) error {
	src, dst := c.Primary(c.ShardOf(s)), c.Primary(to)
	host, port, _ := net.SplitHostPort(dst.Addr())
	for {
		vals, err := Do(src.Addr(), "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(s), "100")
		if err != nil {
			return err
		}
		keys := children(vals, 0)
		if len(keys) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still has keys of slot %d", src.Addr(), s)
		}
		args := []string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}
		for _, k := range keys {
			args = append(args, string(vals[k].Bytes))
		}
		if _, err := Do(src.Addr(), args...); err != nil {
			return err
		}
	}
}

// finishMove assigns slot s to shard to: on the destination first (which
// bumps its config epoch, so that its claim wins), then on the source,
// then on every other running primary, and records it in c's view.
func (c *Cluster) finishMove(s, to int) error {
	from := c.ShardOf(s)
	primaries := c.Primaries()
	order := []*Server{primaries[to], primaries[from]}
	for i, p := range primaries {
		if i != to && i != from && p.Running() {
			order = append(order, p)
		}
	}
	id := c.id(primaries[to])
	for _, p := range order {
		if _, err := Do(p.Addr(), "CLUSTER", "SETSLOT", strconv.Itoa(s), "NODE", id); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.owner[s] = to
	c.mu.Unlock()
	return nil
}

// id returns s's node ID.
func (c *Cluster) id(s *Server) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[s]
}

// Stop stops every node and removes their directories. It is safe to call
// more than once; the Cluster is not usable afterwards.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes() {
		s.Stop()
	}
}
