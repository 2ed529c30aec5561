// Command torture runs Redlock against five real redis-server masters
// behind fault-injecting proxies (or, with -cluster, over a Redis Cluster
// whose primaries fail over, some losing their last writes, die and lose
// slots) and checks that no two clients ever hold the same lock, and that
// fencing tokens grow; with -election, that no two leaders of an election
// ever lead at once, that terms grow, that a leader stops before its
// lease ends and that followers take over in time. See package
// internal/torture.
//
//	go run ./internal/cmd/torture -duration 10m -seed 42
//	go run ./internal/cmd/torture -cluster -duration 10m
//	go run ./internal/cmd/torture -election -duration 10m
//
// It first runs the safe schedule (restart guard on, every fault in
// rotation) for -duration, then, unless -unsafe-duration is 0, the crash
// with immediate restart with the guard OFF, where violations are expected
// and reported but do not fail the run. It exits 1 if the safe schedule
// found a violation, a lock granted under a majority partition, a panic, a
// stuck operation, a fencing token not greater than an earlier holder's
// (with -fencing, the default), a goroutine leak, a fault never recovered from or a
// slow-rotation fault past its liveness bounds (torture.MaxSlowGap,
// torture.MaxSlowRecovery); 2 on a setup error. Ctrl-C or SIGTERM stops the
// run, kills the masters and prints what was found so far.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/volleylock/volley/redlock/internal/torture"
)

func main() {
	var (
		duration       = flag.Duration("duration", time.Minute, "length of the safe schedule")
		unsafeDuration = flag.Duration("unsafe-duration", 30*time.Second, "length of the restart-guard-OFF demonstration (0: skip)")
		seed           = flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of every random choice (default: time-based)")
		masters        = flag.Int("masters", 5, "redis-server masters")
		clients        = flag.Int("clients", 4, "independent lock clients")
		goroutines     = flag.Int("goroutines", 16, "goroutines per client")
		keys           = flag.Int("keys", 3, "contended keys")
		ttl            = flag.Duration("ttl", 800*time.Millisecond, "lock TTL")
		maxTTL         = flag.Duration("max-ttl", 2*time.Second, "redlock MaxTTL (the restart guard's window)")
		masterTimeout  = flag.Duration("master-timeout", 30*time.Millisecond, "redlock MasterTimeout")
		faultTime      = flag.Duration("fault-time", 4*time.Second, "longest fault (each lasts [x/2, x])")
		healTime       = flag.Duration("heal-time", 2*time.Second, "quiet time after each recovery")
		faults         = flag.String("faults", "", "comma-separated faults (default: all): "+faultNames())
		jsonPath       = flag.String("json", "", "write the report as JSON to this file")
		quiet          = flag.Bool("q", false, "do not log each fault")
		fencing        = flag.Bool("fencing", true, "fenced locks (redlock Config.Fencing), with every holder's token checked against earlier holders' (with -permits, per permit; with -read-share, the writers')")
		permits        = flag.Int("permits", 0, "above 0: every key is a semaphore of this many permits (redlock Semaphore), checked for more holders at once; no fencing")
		readShare      = flag.Float64("read-share", 0, "above 0: every key is a read-write lock (redlock RWMutex), this share of rounds taking its read lock, checked for a reader beside a writer; no fencing")
		election       = flag.Bool("election", false, "run one election instead of locks: -clients x -goroutines (default 2) candidates, each with a client of its own, lead, resign or crash; checked for two leaders at once, terms that do not grow, leaders past their lease and slow takeovers; no unsafe schedule")
		longLeads      = flag.Float64("long-leads", 0, "with -election: the share of leaderships held for one to -lead-ttls TTLs (default 0.15; negative: none)")
		doShare        = flag.Float64("do-share", 0, "share of single-key rounds that hold their key through Client.Do for one to -do-ttls TTLs (renewals meet the faults); the report counts holds lost before their end; plain locks only")
		doTTLs         = flag.Int("do-ttls", 0, "with -do-share: the longest hold, in TTLs (default 30)")
		breakRenewals  = flag.Bool("break-renewals", false, "with -do-share: MaxExtensions 1, so that long Do holds are lost and the report must count them")
		leadTTLs       = flag.Int("lead-ttls", 0, "with -election: the longest leadership, in TTLs (default 4)")
		clusterMode    = flag.Bool("cluster", false, "run over a Redis Cluster of -masters primaries (default 3) with a replica each, under its faults ("+clusterFaultNames()+"); no unsafe schedule")
	)
	flag.Parse()
	log.SetFlags(0)
	if *clusterMode {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["masters"] {
			*masters = 3
		}
		// The unsafe schedule's crash needs standalone masters.
		*unsafeDuration = 0
	}

	if *election {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["goroutines"] {
			*goroutines = 2
		}
		*unsafeDuration = 0
	}

	cfg := torture.Config{
		Duration: *duration, Seed: *seed,
		Masters: *masters, Clients: *clients, Goroutines: *goroutines, Keys: *keys,
		TTL: *ttl, MaxTTL: *maxTTL, MasterTimeout: *masterTimeout,
		FaultTime: *faultTime, HealTime: *healTime, Fencing: *fencing,
		Cluster: *clusterMode, Permits: *permits, ReadShare: *readShare,
		Election: *election, LongLeads: *longLeads, LeadTTLs: *leadTTLs,
		DoShare: *doShare, DoTTLs: *doTTLs, BreakRenewals: *breakRenewals,
	}
	if *faults != "" {
		fs, err := torture.ParseFaults(strings.Split(*faults, ","))
		if err != nil {
			log.Print(err)
			os.Exit(2)
		}
		cfg.Faults = fs
	}
	if !*quiet {
		cfg.Logf = log.Printf
	}
	fmt.Printf("torture: seed %d (rerun with -seed %d)\n", *seed, *seed)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	out := struct {
		Safe   *torture.Report `json:"safe"`
		Unsafe *torture.Report `json:"unsafe,omitempty"`
	}{}
	safe, err := torture.Run(ctx, cfg)
	if err != nil {
		log.Print(err)
		os.Exit(2)
	}
	out.Safe = safe
	fmt.Println("\n== safe schedule: restart guard on, faults:", safe.Faults)
	safe.WriteTable(os.Stdout)

	if *unsafeDuration > 0 && ctx.Err() == nil {
		u := cfg
		// Unfenced: a fenced lock also keeps a restarted master out, for
		// about MaxTTL, until a repair vouches for its counter again.
		u.Duration, u.DisableRestartGuard, u.Fencing = *unsafeDuration, true, false
		u.Faults = []torture.Fault{torture.FaultCrashImmediate}
		u.Seed = cfg.Seed + 1
		unsafe, err := torture.Run(ctx, u)
		if err != nil {
			log.Print(err)
			os.Exit(2)
		}
		out.Unsafe = unsafe
		fmt.Println("\n== unsafe schedule: restart guard OFF, crash with immediate restart (violations expected, not a failure)")
		unsafe.WriteTable(os.Stdout)
	}

	if *jsonPath != "" {
		b, err := json.MarshalIndent(out, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonPath, b, 0o644)
		}
		if err != nil {
			log.Printf("torture: writing %s: %v", *jsonPath, err)
			os.Exit(2)
		}
	}
	if problems := safe.Problems(); len(problems) > 0 {
		fmt.Printf("\nFAIL (seed %d):\n", *seed)
		for _, p := range problems {
			fmt.Println("  -", p)
		}
		os.Exit(1)
	}
	fmt.Printf("\nPASS (seed %d)\n", *seed)
}

func faultNames() string { return joinFaults(torture.SafeFaults()) }

func clusterFaultNames() string { return joinFaults(torture.ClusterFaults()) }

func joinFaults(fs []torture.Fault) string {
	var names []string
	for _, f := range fs {
		names = append(names, string(f))
	}
	return strings.Join(names, ",")
}
