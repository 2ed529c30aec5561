package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/slot"
	"github.com/volleylock/volley/resp"
)

// A Redis Cluster as the lock store (see "Redis Cluster" in the package
// documentation): a Config.Addrs entry
//
//	redis-cluster://[[user]:password@]host:port[,host:port...][?copies=N]
//	rediss-cluster://...   (the same, with TLS)
//
// names seed nodes. The Client places N copies of every lock (default: one
// per primary at New), copy i under the hash tag copyTag(i, N), whose slot
// lies in the i-th of N equal ranges of the 16384 slots, so that on a
// cluster whose primaries own equal ranges each copy lands on its own
// primary. Each copy is one master of the quorum.

// clusterEntry is a parsed cluster address.
type clusterEntry struct {
	seeds  []string     // host:port
	opts   conn.Options // every node's, Addr aside
	copies int          // 0: one per primary
}

// isClusterAddr reports whether addr is a cluster entry.
func isClusterAddr(addr string) bool {
	return strings.HasPrefix(addr, "redis-cluster://") || strings.HasPrefix(addr, "rediss-cluster://")
}

// parseClusterAddr parses a cluster entry over base. Its errors never
// contain the password.
func parseClusterAddr(addr string, base conn.Options) (clusterEntry, error) {
	scheme, rest, q, opts, err := parseEntry(addr, base)
	if err != nil {
		return clusterEntry{}, err
	}
	e := clusterEntry{opts: opts}
	e.opts.DB = 0
	if e.seeds, err = hostPorts(strings.TrimSuffix(rest, "/"), scheme, "seed"); err != nil {
		return e, err
	}
	for k, v := range q {
		switch k {
		case "copies":
			n, err := strconv.Atoi(v[len(v)-1])
			if err != nil || n < 1 || n > slot.Count {
				return e, fmt.Errorf("redlock: %s address: copies=%q: want a number from 1", scheme, v[len(v)-1])
			}
			e.copies = n
		default:
			return e, fmt.Errorf("redlock: %s address: unknown parameter %q", scheme, k)
		}
	}
	return e, nil
}

// nodeOptions returns e's options for the node at addr.
func (e *clusterEntry) nodeOptions(addr string) conn.Options { return atAddr(e.opts, addr) }

// slotRange is a range of slots and the address of the primary that owns
// it.
type slotRange struct {
	first, last int
	primary     string
}

// clusterMap is a cluster's slot ownership, as one node reported it.
type clusterMap []slotRange

// owner returns the primary that owns s, or "".
func (cm clusterMap) owner(s int) string {
	for _, r := range cm {
		if s >= r.first && s <= r.last {
			return r.primary
		}
	}
	return ""
}

// primaries returns the distinct primaries that own slots.
func (cm clusterMap) primaries() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range cm {
		if !seen[r.primary] {
			seen[r.primary] = true
			out = append(out, r.primary)
		}
	}
	return out
}

// errNotCluster: a seed answered, but is not a cluster node.
var errNotCluster = errors.New("not a Redis Cluster node (cluster support disabled): list it as a standalone master instead of in a redis-cluster:// address")

// discover asks the nodes at addrs, one after another, for the cluster's
// slot map (CLUSTER SLOTS) and returns the first complete answer. A node
// that answers but is not a cluster node ends the search with
// errNotCluster.
func discover(ctx context.Context, e *clusterEntry, addrs []string) (clusterMap, error) {
	var errs []error
	for _, addr := range addrs {
		opts := e.nodeOptions(addr)
		cn, err := conn.Dial(ctx, opts)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		vals, err := cn.Do(ctx, "CLUSTER", "SLOTS")
		cn.Close()
		if err == nil && len(vals) > 0 && vals[0].IsError() {
			err = vals[0].Err()
		}
		if err != nil && strings.Contains(err.Error(), "cluster support disabled") {
			return nil, fmt.Errorf("redlock: %s: %w", addr, errNotCluster)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: CLUSTER SLOTS: %w", addr, err))
			continue
		}
		cm, err := parseClusterSlots(vals, addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		return cm, nil
	}
	return nil, fmt.Errorf("redlock: no cluster node answered with its slot map: %w", errors.Join(errs...))
}

// parseClusterSlots reads CLUSTER SLOTS' answer (flattened, see
// resp.Value): an array of [first, last, [ip, port, id, ...], replicas...].
// An empty ip means the node that answered (asked).
func parseClusterSlots(vals []resp.Value, asked string) (clusterMap, error) {
	bad := errors.New("malformed CLUSTER SLOTS reply")
	if len(vals) == 0 || vals[0].Type != resp.TypeArray {
		return nil, bad
	}
	askedHost, _, _ := net.SplitHostPort(asked)
	var cm clusterMap
	covered := 0
	// A Value's next sibling is at i+1+Size (see resp.Value).
	for i, n := 1, 0; n < int(vals[0].Int); i, n = i+1+vals[i].Size, n+1 {
		if i >= len(vals) {
			return nil, bad
		}
		r := vals[i:min(len(vals), i+1+vals[i].Size)]
		// r: [first, last, primary node, replica nodes...]; a node is
		// [ip, port, id, maybe more].
		if r[0].Type != resp.TypeArray || r[0].Int < 3 || len(r) < 4 ||
			r[1].Type != resp.TypeInteger || r[2].Type != resp.TypeInteger ||
			r[3].Type != resp.TypeArray || r[3].Int < 2 || len(r) < 6 || r[5].Type != resp.TypeInteger {
			return nil, bad
		}
		first, last := int(r[1].Int), int(r[2].Int)
		if first < 0 || last >= slot.Count || first > last {
			return nil, bad
		}
		host := string(r[4].Bytes)
		if host == "" || host == "?" {
			host = askedHost
		}
		cm = append(cm, slotRange{first, last, net.JoinHostPort(host, strconv.FormatInt(r[5].Int, 10))})
		covered += last - first + 1
	}
	if covered < slot.Count {
		return nil, fmt.Errorf("the cluster serves %d of %d slots", covered, slot.Count)
	}
	return cm, nil
}

// copyTag returns the hash tag of copy i of n: "{vl" + five digits + "}",
// the first such tag whose slot lies in [i*16384/n, (i+1)*16384/n).
// Every tag has the same length, so that a command encoded with copy 0's
// tag becomes copy i's by overwriting the tag's bytes (see keyTags). It
// depends on i and n only: every Client of a cluster with the same number
// of copies puts copy i under the same key.
func copyTag(i, n int) string {
	lo, hi := i*slot.Count/n, (i+1)*slot.Count/n
	for k := 0; k < 100000; k++ {
		tag := fmt.Sprintf("{vl%05d}", k)
		if s := slot.Of(tag); s >= lo && s < hi {
			return tag
		}
	}
	panic("redlock: no hash tag for a slot range") // unreachable: every range has a tag below 100000
}

// addCluster discovers the cluster of entry addr and adds its copies to
// c's masters, each connected to the primary that owns its tag's slot.
// A cluster entry is Config.Addrs' only entry, without Fencing.
func (c *Client) addCluster(ctx context.Context, addr string) (*clusterEntry, error) {
	switch {
	case len(c.cfg.Addrs) != 1:
		return nil, errors.New("redlock: Config.Addrs: a redis-cluster:// entry must be the only entry (the cluster's primaries are the masters)")
	case c.cfg.Fencing:
		return nil, errors.New("redlock: Config.Fencing is not available over a Redis Cluster yet")
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
	primaries := cm.primaries()
	n := e.copies
	if n == 0 {
		n = len(primaries)
	}
	if n > len(primaries) {
		return nil, fmt.Errorf("%w: the cluster has %d primaries, fewer than the %d copies asked for: two copies would share a primary and fail together", ErrMasterUnusable, len(primaries), n)
	}
	for i := range n {
		tag := copyTag(i, n)
		owner := cm.owner(slot.Of(tag))
		opts := c.masterOptions(e.nodeOptions(owner))
		cn, err := conn.New(opts)
		if err != nil {
			return nil, fmt.Errorf("redlock: Config.Addrs: %w", err)
		}
		m := newMaster(owner, opts, cn)
		m.tag = tag
		c.masters = append(c.masters, m)
	}
	c.tagLen = len(c.masters[0].tag)
	return &e, nil
}

// copiesKey is, behind each copy's tag, the number of copies the Clients
// of a cluster place: they must agree on it, or each would lock under keys
// of its own (see agreeOnCopies).
const copiesKey = "volley:copies"

// agreeOnCopies records the number of copies on every reachable copy's
// primary, unless one is recorded there, and fails with ErrMasterUnusable
// when one says another number: Clients with different numbers of copies
// place their copies under different tags, and would not exclude one
// another. The record has no TTL; delete the keys (KEYS
// "{vl*}volley:copies") only when no Client of the old number is left.
func (c *Client) agreeOnCopies(ctx context.Context) error {
	n := strconv.Itoa(len(c.masters))
	for _, m := range c.masters {
		if m.conn().Err() != nil {
			continue
		}
		key := m.tag + copiesKey
		vals, err := m.conn().Do(ctx, "SET", key, n, "NX", "GET")
		if err == nil && len(vals) > 0 && vals[0].IsError() {
			err = vals[0].Err()
		}
		if err != nil {
			return fmt.Errorf("redlock: recording the number of copies on %s: %w", m.conn().Addr(), err)
		}
		if got := string(vals[0].Bytes); !vals[0].Null && got != n {
			return fmt.Errorf("%w: %s says the Clients of this cluster place %s copies of each lock (key %s); this one would place %s: set ?copies=%s in the address", ErrMasterUnusable, m.conn().Addr(), got, key, n, got)
		}
	}
	return nil
}
