// Command faultloop measures how long a single Lock blocks, and how long
// a key goes without a grant, while the masters' servers fail over one
// after another (issue #54): one Client with the default Config, one
// goroutine per key (no key is contended) looping Lock (context of
// -lock-timeout) and Unlock, while each round kills a primary (SIGKILL),
// waits until a replica took its place, restarts the killed server (it
// comes back as a replica) and lets things settle.
//
// Over a Redis Cluster (the default: -primaries primaries, a replica
// each) the bound on a Lock and on a gap is the longest promotion plus
// -slack (1 s): the cluster's failure detection. With -sentinel, over
// -primaries Sentinel groups (a primary, a replica and three Sentinels
// each; the Client's masters are redis-sentinel:// entries), every other
// round is a SENTINEL FAILOVER instead of a kill, and the bound is the
// Sentinels' longest failover plus -slack (default 2 s there). It fails
// when a Lock failed or either bound was passed.
//
// It first waits out the restart guard of the servers it just started,
// and spaces the faults by MaxTTL + FailoverGrace + 1 s (-settle), the
// longest a moved master is held out: each fault then meets a quorum of
// masters that are not held out. Closer faults (-settle 3s) hold out two
// of a key's three copies at once, its Locks wait for the first guard
// to end, and the run fails: the check's broken variant.
//
//	go run ./redlock/internal/cmd/faultloop -faults 9
//	go run ./redlock/internal/cmd/faultloop -sentinel -faults 6
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/redlock"
)

func main() { os.Exit(run()) }

// defaultMaxTTL is redlock's default Config.MaxTTL, which the Client uses.
const defaultMaxTTL = 30 * time.Second

// lockRecord is one Lock call: its key, when it began, how long it took,
// and its error.
type lockRecord struct {
	key   string
	start time.Time
	took  time.Duration
	err   error
}

// target is the servers under test: the Client's Addrs, its keys, and
// one fault at a time.
type target interface {
	addrs() []string
	keys(perMaster int) []string
	// fault injects fault k and returns once the servers took over and
	// the faulted server runs again: what it did and how long the
	// takeover took (from the fault to the new primary).
	fault(k int) (desc string, takeover time.Duration, err error)
	stop()
}

func run() int {
	var (
		sentinel    = flag.Bool("sentinel", false, "Sentinel groups instead of a Redis Cluster")
		primaries   = flag.Int("primaries", 3, "cluster primaries, or Sentinel groups (a replica each)")
		faults      = flag.Int("faults", 9, "faults, one after another, round robin over the primaries")
		keysPer     = flag.Int("keys-per-primary", 2, "keys per primary (with Sentinel, per group), each looped by a goroutine of its own")
		ttl         = flag.Duration("ttl", time.Second, "the Lock's TTL")
		lockTimeout = flag.Duration("lock-timeout", 60*time.Second, "each Lock's context")
		settle      = flag.Duration("settle", 0, "quiet time after each fault (default: MaxTTL + FailoverGrace + 1s, the longest a moved master is held out, so that faults do not overlap)")
		verbose     = flag.Bool("v", false, "print each Lock that took longer than a second, and the masters' states after each fault")
		slack       = flag.Duration("slack", 0, "how much longer than the longest takeover a Lock or a gap may take (default 1s over a cluster, 2s with Sentinel)")
	)
	flag.Parse()
	if *slack == 0 {
		*slack = time.Second
		if *sentinel {
			*slack = 2 * time.Second
		}
	}

	var t target
	var err error
	if *sentinel {
		t, err = startSentinels(*primaries)
	} else {
		t, err = startCluster(*primaries)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultloop:", err)
		return 2
	}
	defer t.stop()

	ctx := context.Background()
	c, err := redlock.New(ctx, redlock.Config{Addrs: t.addrs()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultloop: New:", err)
		return 2
	}
	defer c.Close()
	fmt.Printf("FailoverGrace %v, MaxTTL %v\n", c.FailoverGrace(), defaultMaxTTL)
	if *settle == 0 {
		*settle = defaultMaxTTL + c.FailoverGrace() + time.Second
	}
	// The servers were started just now: the restart guard holds each out
	// until it has run for MaxTTL. Wait that out, so that what follows
	// measures the faults alone.
	var guarded time.Time
	for _, m := range c.Masters() {
		if m.Guard.After(guarded) {
			guarded = m.Guard
		}
	}
	if wait := time.Until(guarded); wait > 0 {
		fmt.Printf("waiting %v for the fresh servers' restart guard\n", wait.Round(time.Second))
		time.Sleep(wait)
	}

	stop := make(chan struct{})
	var (
		mu      sync.Mutex
		records []lockRecord
		wg      sync.WaitGroup
	)
	for _, key := range t.keys(*keysPer) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				lctx, cancel := context.WithTimeout(ctx, *lockTimeout)
				start := time.Now()
				l, err := c.Lock(lctx, key, *ttl)
				took := time.Since(start)
				cancel()
				mu.Lock()
				records = append(records, lockRecord{key: key, start: start, took: took, err: err})
				mu.Unlock()
				if *verbose && took > time.Second {
					fmt.Printf("  %s: Lock took %v: %v\n", key, took.Round(time.Millisecond), err)
				}
				if err == nil {
					l.Unlock(ctx)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}

	time.Sleep(3 * time.Second)
	t0 := time.Now()
	var takeovers []time.Duration
	failed := false
	for k := range *faults {
		desc, took, err := t.fault(k)
		if err != nil {
			fmt.Fprintf(os.Stderr, "faultloop: fault %d: %v\n", k+1, err)
			failed = true
			break
		}
		takeovers = append(takeovers, took)
		fmt.Printf("fault %d at %v: %s, new primary after %v\n", k+1, time.Since(t0).Round(time.Millisecond), desc, took.Round(time.Millisecond))
		if *verbose {
			for _, m := range c.Masters() {
				fmt.Printf("  %+v\n", m)
			}
		}
		time.Sleep(*settle)
	}
	end := time.Now()
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	var longest lockRecord
	var errs int
	var lastErr error
	took := make([]time.Duration, 0, len(records))
	granted := map[string]time.Time{} // per key, its last grant (or t0)
	var gap time.Duration
	var gapKey string
	var gapAt time.Duration
	for _, r := range records {
		if r.start.Before(t0) {
			continue
		}
		took = append(took, r.took)
		if r.took > longest.took {
			longest = r
		}
		if r.err != nil {
			errs++
			lastErr = r.err
			continue
		}
		at := r.start.Add(r.took)
		last, ok := granted[r.key]
		if !ok {
			last = t0
		}
		if g := at.Sub(last); g > gap {
			gap, gapKey, gapAt = g, r.key, last.Sub(t0)
		}
		granted[r.key] = at
	}
	for k, last := range granted {
		if g := end.Sub(last); g > gap {
			gap, gapKey, gapAt = g, k, last.Sub(t0)
		}
	}
	slices.Sort(took)
	maxTakeover := slices.Max(append([]time.Duration{0}, takeovers...))
	bound := maxTakeover + *slack
	fmt.Printf("Locks during the faults: %d, failed %d; p50 %v, p99 %v, longest %v (%s, began %v after the first fault)\n",
		len(took), errs, pct(took, 0.5), pct(took, 0.99), longest.took.Round(time.Millisecond), longest.key, longest.start.Sub(t0).Round(time.Millisecond))
	fmt.Printf("longest gap without a grant on a key: %v (%s, from %v after the first fault)\n", gap.Round(time.Millisecond), gapKey, gapAt.Round(time.Millisecond))
	fmt.Printf("takeovers: longest %v; bound on a Lock and on a gap: %v\n", maxTakeover.Round(time.Millisecond), bound.Round(time.Millisecond))
	if errs > 0 {
		fmt.Printf("FAIL: %d Locks failed, the last: %v\n", errs, lastErr)
		failed = true
	}
	if longest.took > bound {
		fmt.Printf("FAIL: a Lock took %v, beyond the bound %v\n", longest.took.Round(time.Millisecond), bound.Round(time.Millisecond))
		failed = true
	}
	if gap > bound {
		fmt.Printf("FAIL: a key went %v without a grant, beyond the bound %v\n", gap.Round(time.Millisecond), bound.Round(time.Millisecond))
		failed = true
	}
	if failed {
		return 1
	}
	fmt.Println("PASS")
	return 0
}

func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))].Round(100 * time.Microsecond)
}

// clusterTarget is a local Redis Cluster whose primaries are killed.
type clusterTarget struct{ cl *redistest.Cluster }

func startCluster(primaries int) (target, error) {
	cl, err := redistest.StartCluster(redistest.ClusterOptions{Shards: primaries})
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	return clusterTarget{cl}, nil
}

func (t clusterTarget) addrs() []string {
	return []string{"redis-cluster://" + strings.Join(t.cl.SeedAddrs(), ",")}
}

// keys returns perShard keys on each shard's slots.
func (t clusterTarget) keys(perShard int) []string {
	var keys []string
	for s := range len(t.cl.Primaries()) {
		for k := range perShard {
			prefix := "faultloop:" + strconv.Itoa(s) + ":" + strconv.Itoa(k) + ":"
			for i := 0; ; i++ {
				if key := prefix + strconv.Itoa(i); t.cl.ShardOf(redistest.KeySlot(key)) == s {
					keys = append(keys, key)
					break
				}
			}
		}
	}
	return keys
}

func (t clusterTarget) fault(k int) (string, time.Duration, error) {
	shard := k % len(t.cl.Primaries())
	victim := t.cl.Primary(shard)
	at := time.Now()
	if err := t.cl.KillPrimary(shard); err != nil {
		return "", 0, err
	}
	took := time.Since(at)
	if err := victim.Restart(false); err != nil {
		return "", 0, fmt.Errorf("restart %s: %w", victim.Addr(), err)
	}
	if err := t.cl.WaitOK(30 * time.Second); err != nil {
		return "", 0, err
	}
	return fmt.Sprintf("shard %d's primary %s killed and restarted", shard, victim.Addr()), took, nil
}

func (t clusterTarget) stop() { t.cl.Stop() }

// sentinelTarget is Sentinel groups whose primaries are killed or failed
// over.
type sentinelTarget struct{ groups []*redistest.SentinelGroup }

func startSentinels(n int) (target, error) {
	t := sentinelTarget{}
	for i := range n {
		g, err := redistest.StartSentinelGroup(redistest.SentinelOptions{MasterName: "faultloop" + strconv.Itoa(i)})
		if err != nil {
			t.stop()
			return nil, fmt.Errorf("start Sentinel group %d: %w", i, err)
		}
		t.groups = append(t.groups, g)
	}
	return t, nil
}

func (t sentinelTarget) addrs() []string {
	var addrs []string
	for _, g := range t.groups {
		addrs = append(addrs, "redis-sentinel://"+strings.Join(g.SentinelAddrs(), ",")+"/"+g.MasterName())
	}
	return addrs
}

func (t sentinelTarget) keys(n int) []string {
	var keys []string
	for k := range n * len(t.groups) {
		keys = append(keys, "faultloop:"+strconv.Itoa(k))
	}
	return keys
}

// fault kills the primary of group k/2 (even k) or fails it over (odd k).
func (t sentinelTarget) fault(k int) (string, time.Duration, error) {
	g := t.groups[(k/2)%len(t.groups)]
	old := g.Primary()
	at := time.Now()
	if k%2 == 1 {
		if err := g.Failover(); err != nil {
			return "", 0, err
		}
		return fmt.Sprintf("%s failed over from %s to %s", g.MasterName(), old.Addr(), g.Primary().Addr()), time.Since(at), nil
	}
	g.KillPrimary()
	next, err := g.WaitNewPrimary(30 * time.Second)
	if err != nil {
		return "", 0, err
	}
	took := time.Since(at)
	if err := old.Restart(false); err != nil {
		return "", 0, fmt.Errorf("restart %s: %w", old.Addr(), err)
	}
	return fmt.Sprintf("%s's primary %s killed (new primary %s) and restarted", g.MasterName(), old.Addr(), next.Addr()), took, nil
}

func (t sentinelTarget) stop() {
	for _, g := range t.groups {
		g.Stop()
	}
}
