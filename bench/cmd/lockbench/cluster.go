package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/volleylock/volley/internal/redistest"
)

// Cluster mode: where a Redis Cluster is the lock store. On one local
// cluster of -primaries' first size (3) (no replicas, as the standalone
// masters beside it), interleaved round by round, Lock+Unlock latency from
// one goroutine of
//
//   - Volley over the cluster's primaries (an Addrs entry redis-cluster://),
//   - Volley over as many standalone masters (the same server binary), the
//     reference the cluster's cost is measured against,
//   - rueidislock over its own cluster client (cluster-native: its keys
//     spread over slots), and
//   - redsync over one go-redis ClusterClient (one pool: the key lives on
//     one primary), how redsync's users point it at a cluster.
//
// With more than one size in -primaries (default 3 and 6), Volley runs on
// a cluster of each further size too, in the same interleaved rounds
// (volley-cluster-6p): its p50 should not grow with the primaries, since a
// lock's copies stay three. Then, per cluster size, the spread: 10,000
// distinct names locked and unlocked by 16 goroutines, each primary's
// share of the lock commands (SET, EVAL, EVALSHA from INFO commandstats)
// against the mean, and the locks per second.
//
// Then, on a fresh cluster per contender (a replica per primary), the time
// from a primary's death
// (SIGKILL of the primary that owns the lock key's slot) to the first
// Lock+Unlock that succeeds again, beside the time the cluster took to
// promote its replica.
//
// It runs on local redis-server or valkey-server processes only: the
// in-process fakes have no cluster. Its contenders are its own
// (clusterContenders); -contenders does not choose among them.

const (
	modeCluster = "cluster"

	nameVolleyCluster      = "volley-cluster"
	nameVolleyStandalone   = "volley-standalone"
	nameRueidislockCluster = "rueidislock-cluster"
	nameRedsyncCluster     = "redsync-goredis-cluster"

	errClusterNeedsServers = "needs local redis-server or valkey-server processes; the fakes have no cluster"

	// clusterAttempt bounds one attempt after a primary's death.
	clusterAttempt = time.Second
)

// ClusterLatency is one contender's Lock+Unlock latency in the cluster
// mode.
type ClusterLatency struct {
	Name   string  `json:"name"`
	Note   string  `json:"note"`
	Lat    Latency `json:"latency"`
	Errors int     `json:"errors"`
}

// ClusterRecovery is one contender's time from a primary's death to its
// first lock granted again, and the cluster's time to promote a replica.
type ClusterRecovery struct {
	Name         string  `json:"name"`
	FirstLockMs  float64 `json:"first_lock_ms"`
	PromotedMs   float64 `json:"promoted_ms"`
	FailedTries  int     `json:"failed_tries"`
	BoundMs      float64 `json:"bound_ms"` // how long the first lock was waited for
	NeverLocked  bool    `json:"never_locked,omitempty"`
	LastError    string  `json:"last_error,omitempty"`
	PromoteError string  `json:"promote_error,omitempty"`
}

// ClusterSpread is how one cluster size shared the lock commands of
// spreadNames distinct names among its primaries.
type ClusterSpread struct {
	Primaries   int     `json:"primaries"`
	Copies      int     `json:"copies"`
	Names       int     `json:"names"`
	LocksPerSec float64 `json:"locks_per_sec"`
	// Commands is, per primary, the SET, EVAL and EVALSHA calls it served
	// during the run; MinShare and MaxShare the least and most of them
	// against the mean.
	Commands []int64 `json:"commands"`
	MinShare float64 `json:"min_share"`
	MaxShare float64 `json:"max_share"`
	Errors   int     `json:"errors"`
}

// The spread run: spreadNames names over spreadG goroutines.
const (
	spreadNames = 10000
	spreadG     = 16
)

// clusterContender builds a contender on a cluster (seeds: its primaries'
// addresses) or, for the standalone reference, on standalone masters.
type clusterContender struct {
	name string
	new  func(s Setup, seeds, standalone []string) (Contender, error)
}

var clusterContenders = []clusterContender{
	{nameVolleyStandalone, func(s Setup, _, standalone []string) (Contender, error) {
		s.Addrs = standalone
		c, err := newVolley(s)
		return renamed(c, err, nameVolleyStandalone, "DisableRestartGuard (fresh masters); "+strconv.Itoa(len(standalone))+" standalone masters")
	}},
	{nameVolleyCluster, func(s Setup, seeds, _ []string) (Contender, error) {
		s.Addrs = []string{"redis-cluster://" + strings.Join(seeds, ",")}
		c, err := newVolley(s)
		return renamed(c, err, nameVolleyCluster, "DisableRestartGuard (fresh masters); one Addrs entry redis-cluster://: a copy per primary, quorum over primaries")
	}},
	{nameRueidislockCluster, newRueidislockCluster},
	{nameRedsyncCluster, newRedsyncCluster},
}

// namedContender is a contender under another name and note.
type namedContender struct {
	Contender
	name, note string
}

func (n namedContender) Name() string { return n.name }
func (n namedContender) Note() string { return n.note }

// renamed gives c (made with err) another name and note.
func renamed(c Contender, err error, name, note string) (Contender, error) {
	if err != nil {
		return nil, err
	}
	return namedContender{c, name, note}, nil
}

func newRueidislockCluster(s Setup, seeds, _ []string) (Contender, error) {
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		KeyPrefix:    rueidisPrefix,
		KeyValidity:  s.TTL,
		TryNextAfter: s.MasterTimeout,
		KeyMajority:  2, // its default: 2 of 3 keys, in the slots their names hash to
		ClientOption: rueidis.ClientOption{InitAddress: seeds},
	})
	if err != nil {
		return nil, err
	}
	return namedContender{&rueidisLock{lk: lk}, nameRueidislockCluster, "its cluster client; KeyMajority 2 of 3 keys, each in the slot its name hashes to (not necessarily on 3 primaries)"}, nil
}

func newRedsyncCluster(s Setup, seeds, _ []string) (Contender, error) {
	cl := goredislib.NewClusterClient(&goredislib.ClusterOptions{
		Addrs:        seeds,
		PoolSize:     s.PoolSize,
		MinIdleConns: 1,
		ReadTimeout:  3 * time.Second,
		WriteTimeout: 3 * time.Second,
	})
	c := &redsyncGoredis{rs: redsync.New(goredis.NewPool(cl)), opts: redsyncOptions(s)}
	return namedContender{&clusterClosing{c, cl}, nameRedsyncCluster, redsyncNote(false, "one go-redis ClusterClient pool: the lock is one key, on the primary of its slot")}, nil
}

// clusterClosing closes a cluster client with the contender.
type clusterClosing struct {
	Contender
	cl *goredislib.ClusterClient
}

func (c *clusterClosing) Close() error { return errors.Join(c.Contender.Close(), c.cl.Close()) }

// clusterBinary is the server binary of the cluster mode's nodes: the
// run's, or redis-server for external masters. ok is false for fakes.
func (r *Runner) clusterBinary() (bin string, ok bool) {
	switch r.masters.Kind {
	case kindFake:
		return "", false
	case kindExternal:
		return "redis-server", true
	}
	return r.masters.Kind, true
}

func (r *Runner) cluster(ctx context.Context) error {
	bin, ok := r.clusterBinary()
	if !ok {
		r.skip(modeCluster+" mode", errClusterNeedsServers)
		return nil
	}
	sizes := r.opts.ClusterPrimaries
	first := sizes[0]
	r.progress.phase("cluster: starting clusters of %v primaries (%s) and %d standalone masters", sizes, bin, first)
	// No replicas here, as the standalone masters have none: on a small
	// machine a replica's share of every write is the server's cost, not
	// the client's. The recovery clusters have one per primary.
	clusters := make([]*redistest.Cluster, len(sizes))
	defer func() {
		for _, cl := range clusters {
			if cl != nil {
				cl.Stop()
			}
		}
	}()
	for i, n := range sizes {
		cl, err := redistest.StartCluster(redistest.ClusterOptions{Shards: n, Replicas: -1, Server: redistest.Options{Binary: bin}})
		if err != nil {
			return fmt.Errorf("lockbench: cluster mode: %d primaries: %w", n, err)
		}
		clusters[i] = cl
	}
	standalone, stopStandalone, err := startServers(first, bin)
	if err != nil {
		return fmt.Errorf("lockbench: cluster mode: %w", err)
	}
	defer stopStandalone()

	var cs []Contender
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for _, d := range clusterContenders {
		c, err := r.clusterConnect(d, clusters[0].SeedAddrs(), standalone.Addrs)
		if err != nil {
			r.skip(d.name, err.Error())
			continue
		}
		cs = append(cs, c)
	}
	for i, n := range sizes[1:] {
		d := volleyOnPrimaries(n)
		c, err := r.clusterConnect(d, clusters[1+i].SeedAddrs(), nil)
		if err != nil {
			r.skip(d.name, err.Error())
			continue
		}
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return errors.New("lockbench: cluster mode: no contender could lock")
	}
	if err := r.clusterLatency(ctx, cs); err != nil {
		return err
	}
	for i, cl := range clusters {
		sp, err := r.clusterSpread(ctx, cl, sizes[i])
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.skip(fmt.Sprintf("cluster spread, %d primaries", sizes[i]), err.Error())
			continue
		}
		r.report.ClusterSpread = append(r.report.ClusterSpread, sp)
	}
	for _, c := range cs {
		if c.Name() == nameVolleyStandalone || strings.HasPrefix(c.Name(), nameVolleyCluster+"-") {
			continue // no cluster to lose a primary of; one recovery of Volley is enough
		}
		d := clusterContenders[indexOf(c.Name())]
		rec, err := r.clusterRecovery(ctx, bin, d)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.skip(d.name, "recovery: "+err.Error())
			continue
		}
		r.report.ClusterRecovery = append(r.report.ClusterRecovery, rec)
	}
	return nil
}

// volleyOnPrimaries is Volley over a cluster of n primaries, beside the
// first size's.
func volleyOnPrimaries(n int) clusterContender {
	name := fmt.Sprintf("%s-%dp", nameVolleyCluster, n)
	return clusterContender{name, func(s Setup, seeds, _ []string) (Contender, error) {
		s.Addrs = []string{"redis-cluster://" + strings.Join(seeds, ",")}
		c, err := newVolley(s)
		return renamed(c, err, name, fmt.Sprintf("as %s, on %d primaries: still 3 copies a lock", nameVolleyCluster, n))
	}}
}

// clusterSpread locks and unlocks spreadNames distinct names on cl (of n
// primaries) from spreadG goroutines with a fresh Volley Client, and
// reads each primary's lock commands from INFO commandstats (reset
// before).
func (r *Runner) clusterSpread(ctx context.Context, cl *redistest.Cluster, n int) (ClusterSpread, error) {
	r.progress.step("cluster spread: %d names on %d primaries", spreadNames, n)
	s := r.opts.Setup
	s.Addrs = []string{"redis-cluster://" + strings.Join(cl.SeedAddrs(), ",")}
	c, err := newVolley(s)
	if err != nil {
		return ClusterSpread{}, err
	}
	defer c.Close()
	for i := range n {
		if _, err := redistest.Do(cl.Primary(i).Addr(), "CONFIG", "RESETSTAT"); err != nil {
			return ClusterSpread{}, err
		}
	}
	var next, errs atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range spreadG {
		wg.Add(1)
		go func() { // joined below
			defer wg.Done()
			for k := next.Add(1); k <= spreadNames && ctx.Err() == nil; k = next.Add(1) {
				if c.LockUnlock(ctx, fmt.Sprintf("lb:%s:spread:%d:%d", r.run, n, k), s.TTL) != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if err := ctx.Err(); err != nil {
		return ClusterSpread{}, err
	}
	sp := ClusterSpread{Primaries: n, Copies: min(3, n), Names: spreadNames, LocksPerSec: spreadNames / took.Seconds(), Errors: int(errs.Load())}
	var total int64
	for i := range n {
		calls, err := lockCommands(cl.Primary(i).Addr())
		if err != nil {
			return ClusterSpread{}, err
		}
		sp.Commands = append(sp.Commands, calls)
		total += calls
	}
	mean := float64(total) / float64(n)
	sp.MinShare, sp.MaxShare = math.Inf(1), 0
	for _, calls := range sp.Commands {
		sp.MinShare = min(sp.MinShare, float64(calls)/mean)
		sp.MaxShare = max(sp.MaxShare, float64(calls)/mean)
	}
	return sp, nil
}

// lockCommands returns the SET, EVAL and EVALSHA calls the server at addr
// counted since its statistics were reset.
func lockCommands(addr string) (int64, error) {
	vals, err := redistest.Do(addr, "INFO", "commandstats")
	if err != nil {
		return 0, err
	}
	stats, err := commandStats(string(vals[0].Bytes))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", addr, err)
	}
	return stats["set"].Calls + stats["eval"].Calls + stats["evalsha"].Calls, nil
}

// indexOf returns the index of a cluster contender by name.
func indexOf(name string) int {
	for i, d := range clusterContenders {
		if d.name == name {
			return i
		}
	}
	panic("lockbench: no cluster contender " + name)
}

// clusterConnect builds d and proves it can lock.
func (r *Runner) clusterConnect(d clusterContender, seeds, standalone []string) (Contender, error) {
	c, err := d.new(r.opts.Setup, seeds, standalone)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.LockUnlock(ctx, "lb:"+r.run+":cluster-probe:"+d.name, r.opts.Setup.TTL); err != nil {
		c.Close()
		return nil, fmt.Errorf("first lock failed: %w", err)
	}
	return c, nil
}

// clusterLatency is the latency mode's measurement over the cluster
// contenders.
func (r *Runner) clusterLatency(ctx context.Context, cs []Contender) error {
	ttl, d := r.opts.Setup.TTL, r.opts.LatencyDuration
	if d <= 0 {
		d = r.opts.Duration
	}
	rounds := map[string][]Latency{}
	errs := map[string]int{}
	keys := map[string][]string{}
	for _, c := range cs {
		keys[c.Name()] = r.keyRing(c, modeCluster, 0, 8192)
	}
	r.progress.phase("cluster latency: %d rounds x %d contenders x %v", r.opts.Rounds, len(cs), d)
	err := eachRound(ctx, r, "cluster latency", cs, func(_ int, c Contender) error {
		warm(ctx, c, keys[c.Name()][:50], ttl)
		s, e := latencySamples(ctx, c, keys[c.Name()], ttl, d, nil)
		rounds[c.Name()] = append(rounds[c.Name()], summarize(s))
		errs[c.Name()] += e
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cs {
		r.report.ClusterLatency = append(r.report.ClusterLatency, ClusterLatency{
			Name: c.Name(), Note: c.Note(), Lat: medianLatency(rounds[c.Name()]), Errors: errs[c.Name()],
		})
	}
	return nil
}

// clusterRecovery starts a fresh cluster for d, locks a key of shard 0's
// slots, kills shard 0's primary, and times the first Lock+Unlock of that
// key that succeeds again, while the cluster promotes a replica.
func (r *Runner) clusterRecovery(ctx context.Context, bin string, d clusterContender) (ClusterRecovery, error) {
	r.progress.step("cluster recovery: %s: starting a fresh cluster", d.name)
	cl, err := redistest.StartCluster(redistest.ClusterOptions{Shards: r.opts.ClusterPrimaries[0], Server: redistest.Options{Binary: bin}})
	if err != nil {
		return ClusterRecovery{}, err
	}
	defer cl.Stop()
	c, err := r.clusterConnect(d, cl.SeedAddrs(), nil)
	if err != nil {
		return ClusterRecovery{}, err
	}
	defer c.Close()
	key := keyOfShard(cl, 0, "lb:"+r.run+":cluster-recovery:"+d.name+":")
	ttl := r.opts.Setup.TTL
	for range 20 {
		if err := c.LockUnlock(ctx, key, ttl); err != nil {
			return ClusterRecovery{}, fmt.Errorf("before the kill: %w", err)
		}
	}
	r.progress.step("cluster recovery: %s: primary of shard 0 killed", d.name)
	rec := ClusterRecovery{Name: d.name, BoundMs: ms(r.opts.ClusterRecoveryBound)}
	t0 := time.Now()
	cl.Primary(0).Kill()
	promoted := make(chan error, 1)
	go func() { // joined below, before the cluster stops
		err := cl.WaitPromoted(0)
		rec.PromotedMs = ms(time.Since(t0))
		promoted <- err
	}()
	rec.NeverLocked = true
	for time.Since(t0) < r.opts.ClusterRecoveryBound && ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, clusterAttempt)
		err := c.LockUnlock(actx, key, ttl)
		cancel()
		if err == nil {
			rec.FirstLockMs = ms(time.Since(t0))
			rec.NeverLocked = false
			break
		}
		rec.FailedTries++
		rec.LastError = err.Error()
	}
	if err := <-promoted; err != nil {
		rec.PromoteError = err.Error()
	}
	return rec, ctx.Err()
}

// keyOfShard returns a key starting with prefix whose slot shard s owns.
func keyOfShard(cl *redistest.Cluster, s int, prefix string) string {
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		if cl.ShardOf(redistest.KeySlot(k)) == s {
			return k
		}
	}
}

// clusterLatencyOf returns a contender's cluster-mode latency, or nil.
func (r *Report) clusterLatencyOf(name string) *ClusterLatency {
	for i := range r.ClusterLatency {
		if r.ClusterLatency[i].Name == name {
			return &r.ClusterLatency[i]
		}
	}
	return nil
}
