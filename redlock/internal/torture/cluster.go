package torture

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/volleylock/volley/internal/faultproxy"
	"github.com/volleylock/volley/internal/redistest"
)

// cluster is the masters and the proxy in front of each, or, for
// Config.Cluster, a Redis Cluster (rc), whose nodes the clients reach
// directly: they follow its slot map, which names the nodes themselves.
type cluster struct {
	servers []*redistest.Server
	proxies []*faultproxy.Proxy
	rc      *redistest.Cluster
}

// startRedisCluster starts a Redis Cluster of n primaries with a replica
// each.
func startRedisCluster(n int) (*cluster, error) {
	rc, err := redistest.StartCluster(redistest.ClusterOptions{Shards: n})
	if err != nil {
		return nil, fmt.Errorf("torture: starting a cluster: %w", err)
	}
	return &cluster{rc: rc}, nil
}

// startCluster starts n redis-servers (concurrently) and a proxy for each.
// On error everything started is stopped.
func startCluster(n int) (*cluster, error) {
	cl := &cluster{servers: make([]*redistest.Server, n), proxies: make([]*faultproxy.Proxy, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.servers[i], errs[i] = redistest.StartServer(redistest.Options{})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		cl.stop()
		return nil, fmt.Errorf("torture: starting masters: %w", err)
	}
	for i, s := range cl.servers {
		p, err := faultproxy.Start(s.Addr())
		if err != nil {
			cl.stop()
			return nil, fmt.Errorf("torture: %w", err)
		}
		cl.proxies[i] = p
	}
	return cl, nil
}

// addrs returns what the clients dial: the proxies' addresses, or the
// cluster's entry.
func (cl *cluster) addrs() []string {
	if cl.rc != nil {
		return []string{"redis-cluster://" + strings.Join(cl.rc.SeedAddrs(), ",")}
	}
	out := make([]string, len(cl.proxies))
	for i, p := range cl.proxies {
		out[i] = p.Addr()
	}
	return out
}

// stop closes the proxies and kills the servers (paused ones included).
func (cl *cluster) stop() {
	if cl.rc != nil {
		cl.rc.Stop()
	}
	for _, p := range cl.proxies {
		if p != nil {
			p.Close()
		}
	}
	for _, s := range cl.servers {
		if s != nil {
			s.Stop()
		}
	}
}

// aheadOfClock is where aheadCounters sets the counters: 2^52, some 140
// years of microseconds past the epoch, under redlock's largest token
// (2^53-1).
const aheadOfClock = 1 << 52

// aheadCounters takes and releases a lock of each key (shortLivedKey too)
// with lk, so that
// every copy of each has a fencing counter, then sets every counter of
// the cluster to aheadOfClock. Tokens then come from the counters (a
// Lock's second round, or a proposal that is the client's largest token
// seen plus one), not from the clients' clock, which all clients share
// here: tokens taken from it would grow whatever the counters held, and
// the fencing check could not tell a counter that lost writes.
func (r *run) aheadCounters(ctx context.Context, lk Locker) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	keys := []string{shortLivedKey}
	for k := range r.cfg.Keys {
		keys = append(keys, keyName(&r.cfg, k))
	}
	for _, key := range keys {
		h, err := lk.Lock(ctx, key, r.cfg.TTL)
		if err != nil {
			return fmt.Errorf("torture: a first fenced lock of %s: %w", key, err)
		}
		if err := h.Unlock(ctx); err != nil {
			return err
		}
	}
	for _, p := range r.cl.rc.Primaries() {
		vals, err := redistest.Do(p.Addr(), "KEYS", "*volley:fence")
		if err != nil {
			return err
		}
		for _, v := range vals[1:] { // after the array's header
			if _, err := redistest.Do(p.Addr(), "SET", string(v.Bytes), strconv.Itoa(aheadOfClock)); err != nil {
				return err
			}
		}
	}
	return nil
}
