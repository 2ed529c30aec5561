package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/internal/slot"
	"github.com/volleylock/volley/resp"
)

// A Redis Cluster as the lock store (see "Redis Cluster" in the package
// documentation): a Config.Addrs entry
//
//	redis-cluster://[[user]:password@]host:port[,host:port...][?copies=N]
//	rediss-cluster://...   (the same, with TLS)
//
// names seed nodes. The Client places N copies of every lock (default:
// defaultCopies, fewer when the cluster has fewer primaries), each one
// master of the quorum. Copy i of a key lives in the i-th of N ranges of
// the 16384 slots, at the slot that the key's place (see placement) picks
// inside that range, under that slot's tag (slot.Tag): different keys
// spread over every primary that owns part of a range.

// defaultCopies is the number of copies when the address does not say:
// the Redlock spec's smallest useful quorum, so that a lock's cost stays
// the same as primaries are added (they add capacity, not copies).
const defaultCopies = 3

// clusterEntry is a parsed cluster address.
type clusterEntry struct {
	seeds  []string     // host:port
	opts   pipe.Options // every node's, Addr aside
	copies int          // 0: defaultCopies
}

// isClusterAddr reports whether addr is a cluster entry.
func isClusterAddr(addr string) bool {
	return strings.HasPrefix(addr, "redis-cluster://") || strings.HasPrefix(addr, "rediss-cluster://")
}

// parseClusterAddr parses a cluster entry over base. Its errors never
// contain the password.
func parseClusterAddr(addr string, base pipe.Options) (clusterEntry, error) {
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
func (e *clusterEntry) nodeOptions(addr string) pipe.Options { return atAddr(e.opts, addr) }

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
		cn, err := pipe.Dial(ctx, opts)
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
