package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/internal/slot"
	"github.com/volleylock/volley/resp"
)

// Placement of a cluster Client's copies (see "Redis Cluster" in the
// package documentation). Copy i of N owns the i-th of N ranges of the
// 16384 slots, cut where redis-cli --cluster create cuts the slots of N
// primaries (so that on such a cluster, or one of k*N primaries, no two
// copies of a key share a primary), and uses the first width of them,
// width being the shortest range: a key's place p (placement) puts copy i
// of it in slot first(i) + p, behind that slot's tag (slot.Tag). The place
// depends on the key and N only, so every Client with the same N locks a
// key under the same keys, whatever map of the cluster it read; where a
// slot lives is the view's business (clusterView), which the locator
// follows.

// clusterState is a cluster Client's placement: its entry, the width of
// the copies' ranges, and the current view of which node serves each slot.
// The view is swapped whole by the locator goroutine (under mu, with the
// group indices it hands out) and read without a lock.
type clusterState struct {
	entry  *clusterEntry
	copies int
	first  []int // per copy, the first slot of its range
	width  int   // slots of each copy's range that places use: the shortest range's
	view   atomic.Pointer[clusterView]

	mu   sync.Mutex // held while the view changes
	free []int      // group indices of dropped nodes, for the next new node
}

// newClusterState returns the placement of copies copies (no view yet).
// Range i starts where redis-cli starts the slots of primary i of copies:
// one after round(i*16384/copies - 1).
func newClusterState(e *clusterEntry, copies int) *clusterState {
	cs := &clusterState{entry: e, copies: copies, first: make([]int, copies), width: slot.Count}
	per := float64(slot.Count) / float64(copies)
	for i := 1; i < copies; i++ {
		cs.first[i] = int(math.Round(float64(i)*per-1)) + 1
		cs.width = min(cs.width, cs.first[i]-cs.first[i-1])
	}
	cs.width = min(cs.width, slot.Count-cs.first[copies-1])
	return cs
}

// node is one primary of the cluster and the Client's connection to it,
// shared by every copy with slots there. A node is made when a view first
// names its address and closed when a view no longer does: a failover's
// promoted replica is a new node.
type node struct {
	addr string
	cn   *pipe.Conn
	gidx int // the connection's index in the Client's pipe.Group; -1: not in it
	// moved is, per copy, when the node last took over a slot of the
	// copy's range (unix nanoseconds; 0: never, it served them from the
	// Client's start): the restart guard holds its votes for that copy out
	// from then on (see Client.guarded), and only for that copy.
	moved []atomic.Int64
}

// movedAt returns when the node whose connection is cn last took over a
// slot of copy i's range (0: never, or not a node of the view).
func (cs *clusterState) movedAt(i int, cn *pipe.Conn) int64 {
	for _, n := range cs.view.Load().nodes {
		if n.cn == cn {
			return n.moved[i].Load()
		}
	}
	return 0
}

// clusterView is which node serves each slot, and each copy's nodes. It is
// never changed once published.
type clusterView struct {
	owner  [slot.Count]*node
	nodes  []*node   // every node of the view
	byCopy [][]*node // per copy, the distinct nodes of the slots its places use, by slot
	// shared counts the places (see placement) where two or more copies
	// are on one primary: a lock there loses as many votes when that
	// primary fails (see EventCopiesShared).
	shared int
}

// placement returns key's place: the offset of its copies' slots in their
// ranges (0 for a Client without a cluster). Keys that share a hash tag
// ("{...}", as Redis Cluster reads it) share a place, so a multi-key lock
// of such keys keeps each copy in one slot.
func (c *Client) placement(key string) int {
	if c.cluster == nil {
		return 0
	}
	return slot.Of(key) % c.cluster.width
}

// copySlot returns the slot of copy i at place p.
func (cs *clusterState) copySlot(i, p int) int { return cs.first[i] + p }

// connFor returns the connection that serves master i's copy of the keys
// at place p.
func (c *Client) connFor(i, p int) *pipe.Conn {
	if c.cluster == nil {
		return c.masters[i].conn()
	}
	return c.cluster.view.Load().owner[c.cluster.copySlot(i, p)].cn
}

// nodeConn returns the connection to the node at addr, or nil when the
// view names no such node.
func (cs *clusterState) nodeConn(addr string) *pipe.Conn {
	for _, n := range cs.view.Load().nodes {
		if n.addr == addr {
			return n.cn
		}
	}
	return nil
}

// tagFor returns the hash tag of master i's copy at place p ("" without a
// cluster).
func (c *Client) tagFor(i, p int) string {
	if c.cluster == nil {
		return ""
	}
	return slot.Tag(c.cluster.copySlot(i, p))
}

// claimable reports whether a burst of keys at place p goes only to
// connections of the Client's Group (see pipe.Batch.Claim): a node that
// joined after New is served without a claim.
func (c *Client) claimable(p int) bool {
	if c.cluster == nil {
		return true
	}
	v := c.cluster.view.Load()
	for i := range c.cluster.copies {
		if v.owner[c.cluster.copySlot(i, p)].gidx < 0 {
			return false
		}
	}
	return true
}

// sameTag checks that the keys of one multi-key lock share a place over a
// cluster: a key must be the same key in every lock that names it, so
// each is placed by itself, and one script per copy needs them in one
// slot.
func (c *Client) sameTag(keys []string) error {
	if c.cluster == nil || len(keys) < 2 {
		return nil
	}
	p := c.placement(keys[0])
	for _, k := range keys[1:] {
		if c.placement(k) != p {
			return invalidf("over a Redis Cluster the keys of one lock must share a hash tag, as Redis Cluster's multi-key commands require: %q and %q do not (name them {tag}:a and {tag}:b)", keys[0], k)
		}
	}
	return nil
}

// buildView makes the view of cm: nodes that old (nil at New) has are
// kept, with their connections; the others are made (connecting in the
// background) and returned in made. dropped are old's nodes that cm no
// longer names: the caller closes them once the view is published.
func (c *Client) buildView(cm clusterMap, old *clusterView) (v *clusterView, made, dropped []*node, err error) {
	cs := c.cluster
	v = &clusterView{}
	byAddr := map[string]*node{}
	if old != nil {
		for _, n := range old.nodes {
			byAddr[n.addr] = n
		}
	}
	kept := map[*node]bool{}
	for _, r := range cm {
		n := byAddr[r.primary]
		if n == nil {
			cn, err := pipe.New(c.masterOptions(cs.entry.nodeOptions(r.primary)))
			if err != nil {
				for _, n := range made {
					n.cn.Close()
				}
				return nil, nil, nil, fmt.Errorf("redlock: Config.Addrs: %w", err)
			}
			n = &node{addr: r.primary, cn: cn, gidx: -1, moved: make([]atomic.Int64, cs.copies)}
			byAddr[r.primary] = n
			made = append(made, n)
		}
		if !kept[n] {
			kept[n] = true
			v.nodes = append(v.nodes, n)
		}
		for s := r.first; s <= r.last; s++ {
			v.owner[s] = n
		}
	}
	if old != nil {
		for _, n := range old.nodes {
			if !kept[n] {
				dropped = append(dropped, n)
			}
		}
	}
	v.byCopy = make([][]*node, cs.copies)
	for i := range cs.copies {
		for p := range cs.width {
			n := v.owner[cs.copySlot(i, p)]
			if len(v.byCopy[i]) == 0 || !containsNode(v.byCopy[i], n) {
				v.byCopy[i] = append(v.byCopy[i], n)
			}
		}
	}
	for p := range cs.width {
		if cs.sharedAt(v, p) {
			v.shared++
		}
	}
	return v, made, dropped, nil
}

// sharedAt reports whether two copies at place p are on one primary in v.
func (cs *clusterState) sharedAt(v *clusterView, p int) bool {
	for i := 1; i < cs.copies; i++ {
		for j := range i {
			if v.owner[cs.copySlot(i, p)] == v.owner[cs.copySlot(j, p)] {
				return true
			}
		}
	}
	return false
}

// sharesWith returns the copies that are on a primary with copy i at
// some place in v, in order.
func (cs *clusterState) sharesWith(v *clusterView, i int) []int {
	var out []int
	for j := range cs.copies {
		if j == i {
			continue
		}
		for p := range cs.width {
			if v.owner[cs.copySlot(i, p)] == v.owner[cs.copySlot(j, p)] {
				out = append(out, j)
				break
			}
		}
	}
	return out
}

// noteSharing reports a change between old and v in whether some copies
// share a primary: EventCopiesShared or EventCopiesApart (old nil: the
// first view, reported only if shared).
func (c *Client) noteSharing(old, v *clusterView) {
	was := old != nil && old.shared > 0
	switch is := v.shared > 0; {
	case is && !was:
		c.event(EventCopiesShared, "")
	case was && !is:
		c.event(EventCopiesApart, "")
	}
}

func containsNode(ns []*node, n *node) bool {
	for _, m := range ns {
		if m == n {
			return true
		}
	}
	return false
}

// addCluster discovers the cluster of entry addr and makes its copies
// c's masters, with a connection to every primary. A cluster entry is
// Config.Addrs' only entry.
func (c *Client) addCluster(ctx context.Context, addr string) (*clusterEntry, error) {
	switch {
	case len(c.cfg.Addrs) != 1:
		return nil, invalidf("Config.Addrs: a redis-cluster:// entry must be the only entry (the cluster's primaries are the masters)")
	}
	e, err := parseClusterAddr(addr, c.cfg.Conn.options(c.cfg.MasterTimeout))
	if err != nil {
		return nil, err
	}
	cm, err := discover(ctx, &e, e.seeds)
	if err != nil {
		if errors.Is(err, errNotCluster) {
			return nil, fmt.Errorf("%w: %w", ErrMasterUnusable, err)
		}
		return nil, err
	}
	primaries := len(cm.primaries())
	n := e.copies
	if n == 0 {
		n = min(defaultCopies, primaries)
	}
	if n > primaries {
		return nil, fmt.Errorf("%w: the cluster has %d primaries, fewer than the %d copies asked for: two copies of every lock would share a primary and fail together", ErrMasterUnusable, primaries, n)
	}
	c.cluster = newClusterState(&e, n)
	v, _, _, err := c.buildView(cm, nil)
	if err != nil {
		return nil, err
	}
	for i, nd := range v.nodes {
		nd.gidx = i
	}
	c.cluster.view.Store(v)
	c.noteSharing(nil, v)
	c.tagLen = slot.TagLen
	for i := range n {
		first := c.cluster.copySlot(i, 0)
		m := &master{addr: fmt.Sprintf("cluster copy %d of %d (slots %d-%d)", i, n, first, first+c.cluster.width-1), copy: i}
		c.masters = append(c.masters, m)
	}
	return &e, nil
}

// nodeConns returns the connections of the cluster's nodes, in Group
// order.
func (cs *clusterState) nodeConns() []*pipe.Conn {
	v := cs.view.Load()
	out := make([]*pipe.Conn, len(v.nodes))
	for _, n := range v.nodes {
		out[n.gidx] = n.cn
	}
	return out
}

// copiesKey is the key of the layout record (see agreeOnCopies).
const copiesKey = "volley:copies"

// layoutPrefix starts the layout record's value: "spread:N" for Clients
// that place each key's copies by the key (this layout), a bare N for
// Clients of the earlier layout, which put copy i of every lock in one
// slot.
const layoutPrefix = "spread:"

// agreeOnCopies records this Client's layout and number of copies where
// every Client of a cluster looks for it, and fails with
// ErrMasterUnusable when the record says otherwise: Clients that place
// copies differently lock under different keys and would not exclude one
// another. The record is the key legacyTag(k)+"volley:copies" for every k
// from 1 to the number of primaries: exactly where a Client of the
// earlier layout with k copies records its own number (as a bare number)
// and checks it, so each kind of Client refuses to start beside the
// other. The record has no TTL; delete the keys (KEYS "{vl*}volley:copies")
// only when no Client of the old layout or number is left. A cluster that
// is changing is asked again (see recordLayout) for up to the dial
// timeout.
func (c *Client) agreeOnCopies(ctx context.Context) error {
	cs := c.cluster
	want := layoutPrefix + strconv.Itoa(cs.copies)
	v := cs.view.Load()
	// A cluster that is changing is asked again, for as long as New gives
	// a master's first connect.
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Conn.dialTimeout())
	defer cancel()
	for _, tag := range legacyTags(len(v.nodes)) {
		cn := v.owner[slot.Of(tag)].cn
		if cn.Err() != nil {
			continue
		}
		key := tag + copiesKey
		at, vals, err := c.recordLayout(ctx, cn, key, want)
		if err != nil {
			return fmt.Errorf("redlock: recording the cluster layout on %s: %w", at, err)
		}
		got := string(vals[0].Bytes)
		switch n, spread := strings.CutPrefix(got, layoutPrefix); {
		case vals[0].Null || got == want:
		case spread:
			return fmt.Errorf("%w: %s says the Clients of this cluster place %s copies of each lock (key %s); this one would place %d: set ?copies=%s in the address", ErrMasterUnusable, at, n, key, cs.copies, n)
		default:
			return fmt.Errorf("%w: %s holds %s = %s, the record of Clients of Volley's earlier cluster layout (every lock's copy i in one slot): they and this Client lock under different keys and would not exclude each other. Stop every Client of the earlier version, delete the keys matching {vl*}volley:copies, then start this one (see CHANGELOG)", ErrMasterUnusable, at, key, got)
		}
	}
	return nil
}

// Back-off bounds between the attempts of recordLayout.
const (
	layoutRetryMin = 10 * time.Millisecond
	layoutRetryMax = 200 * time.Millisecond
)

// recordLayout sets the layout record key to want unless it exists (SET
// NX GET) on cn, the node that serves its slot in the map New read, and
// returns the node that answered and its answer (the record's earlier
// value, or null). A cluster that is changing is asked again after a
// jittered back-off (from layoutRetryMin, doubling up to layoutRetryMax)
// until ctx ends: CLUSTERDOWN (a failover under way) and TRYAGAIN at the
// same node, MOVED (the slot moved since the map was read) at the node it
// names. Any other error, or ctx's end, is returned with the last answer.
func (c *Client) recordLayout(ctx context.Context, cn *pipe.Conn, key, want string) (at string, vals []resp.Value, err error) {
	backoff := layoutRetryMin
	var moved *pipe.Conn // a connection of ours to the node a MOVED named
	defer func() {
		if moved != nil {
			moved.Close()
		}
	}()
	for {
		at = cn.Addr()
		vals, err = cn.Do(ctx, "SET", key, want, "NX", "GET")
		var se *resp.ServerError
		if err == nil || !errors.As(err, &se) {
			return at, vals, err
		}
		switch se.Prefix {
		case "CLUSTERDOWN", "TRYAGAIN":
		case "MOVED":
			// "MOVED <slot> <host:port>"
			fields := strings.Fields(se.Message)
			if len(fields) != 3 {
				return at, vals, err
			}
			to := fields[2]
			if next := c.cluster.nodeConn(to); next != nil {
				cn = next
				break
			}
			if moved == nil || moved.Addr() != to {
				if moved != nil {
					moved.Close()
				}
				if moved, err = pipe.Dial(ctx, c.cluster.entry.nodeOptions(to)); err != nil {
					return to, nil, err
				}
			}
			cn = moved
		default:
			return at, vals, err
		}
		t := time.NewTimer(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return at, vals, fmt.Errorf("%w (%w)", err, ctxerr.Of(ctx))
		}
		backoff = min(2*backoff, layoutRetryMax)
	}
}

// legacyTags returns the distinct tags under which Clients of the earlier
// layout with 1 to maxCopies copies kept copy 0 of every lock: "{vl" +
// five digits + "}", the first such tag whose slot lies in [0,
// 16384/copies).
func legacyTags(maxCopies int) []string {
	var out []string
	for n := 1; n <= maxCopies; n++ {
		for k := 0; k < 100000; k++ {
			tag := fmt.Sprintf("{vl%05d}", k)
			if slot.Of(tag) < slot.Count/n {
				if len(out) == 0 || out[len(out)-1] != tag {
					out = append(out, tag)
				}
				break
			}
		}
	}
	return out
}

// graceMargin is what clusterGrace adds to the cluster's node timeout: a
// primary cut off from the majority refuses writes once it has missed
// the majority for cluster-node-timeout, which it checks in its cron (ten
// times a second); the margin covers that check and the coarseness of its
// clock.
const graceMargin = time.Second

// clusterGrace returns the FailoverGrace of a cluster whose Client was
// given none: the largest cluster-node-timeout its nodes report (CONFIG
// GET) plus graceMargin, or, when no node answers (a managed service that
// refuses CONFIG, an ACL without +config|get), the default FailoverGrace
// of 15s, Redis Cluster's own default node timeout.
func (c *Client) clusterGrace(ctx context.Context) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Conn.dialTimeout())
	defer cancel()
	var timeout time.Duration
	for _, n := range c.cluster.view.Load().nodes {
		vals, err := n.cn.Do(ctx, "CONFIG", "GET", "cluster-node-timeout")
		// [name, value]: an array of two in RESP2, a map of one pair in RESP3.
		if err != nil || len(vals) != 3 || (vals[0].Type != resp.TypeArray && vals[0].Type != resp.TypeMap) {
			continue
		}
		ms, err := strconv.ParseInt(string(vals[2].Bytes), 10, 64)
		if err != nil || ms <= 0 {
			continue
		}
		timeout = max(timeout, time.Duration(ms)*time.Millisecond)
	}
	if timeout == 0 {
		return c.cfg.FailoverGrace
	}
	return timeout + graceMargin
}
