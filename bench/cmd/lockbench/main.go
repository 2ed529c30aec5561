// Command lockbench measures Volley's Redlock client side by side with
// go-redsync/redsync (over go-redis and redigo), bsm/redislock and
// rueidislock, on the same masters, interleaved round by round, and next
// to the floor (floor.go), the lowest-overhead Lock+Unlock the machine
// allows, so that every run measures Volley's distance to it.
//
//	go run ./cmd/lockbench -quick                # the make bench pass, about 4 min
//	go run ./cmd/lockbench -mode all -json results/lockbench.json -plot results/lockbench
//	go run ./cmd/lockbench -replot results/lockbench.json -plot results/lockbench  # redraw only
//
// By default it starts five local masters (redis-server when installed,
// in-process fakes otherwise) and stops them on exit, Ctrl-C included.
//
// The semaphore mode (semaphore.go) measures Volley's counting semaphore:
// Acquire+Release against the mutex's Lock+Unlock, and one semaphore
// contended from child processes against other semaphores, among them the
// npm package redis-semaphore run by node where node is installed (npm
// installs it once into the user's cache directory, see semaphore_node.go).
//
// The fleet mode (fleet.go) has P processes, each with a Client of its
// own, contend for one key, Volley against redsync, each with its
// library's own retry settings:
//
//	go run ./cmd/lockbench -mode fleet -fleet-procs 16,64 -fleet-g 1 -fleet-hold 0,1ms -fleet-duration 10s -fleet-rounds 3
//
// With -fleet-stall D (and -fleet-stall-masters N, default 1) it pauses
// the first N masters for D (CLIENT PAUSE ALL) at the middle of every
// window and says how soon after the pause's end the next grant came.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == handoffChildCmd {
		os.Exit(handoffChildMain(append(allContenders(), semaphoreDefs()...)))
	}
	os.Exit(run(os.Args[1:]))
}

// handoffChildMain runs lockbench as a child of the handoff or semaphore
// mode, on its stdin and stdout. Anything else that would print to
// os.Stdout (a library's logger) goes to stderr: stdout carries only the
// protocol.
func handoffChildMain(defs []contenderDef) int {
	out := os.Stdout
	os.Stdout = os.Stderr
	return handoffChild(defs, os.Stdin, out, os.Stderr)
}

// run is main with an exit code, so that every deferred cleanup (the
// masters) runs before the process exits.
func run(args []string) int {
	fs := flag.NewFlagSet("lockbench", flag.ContinueOnError)
	var (
		masters       = fs.String("masters", "", "comma-separated masters host:port (default: start local ones)")
		tlsMasters    = fs.String("tls-masters", "", "with -masters: the same masters' TLS ports host:port, in the same order, for volley-tls (local masters get TLS ports of their own)")
		tlsCA         = fs.String("tls-ca", "", "with -tls-masters: a PEM file of the certificate(s) that sign the TLS masters' certificates")
		n             = fs.Int("n", 5, "how many local masters to start when -masters is empty")
		fake          = fs.Bool("fake", false, "use in-process fake masters even if redis-server is installed")
		server        = fs.String("server", "redis", "local masters' server: redis (redis-server), valkey (valkey-server), or a server binary's path")
		modes         = fs.String("mode", "all", "comma-separated modes: "+strings.Join(allModes, ",")+" or all")
		quick         = fs.Bool("quick", false, "the short pass of make bench: -rounds 3 -duration 400ms (latency mode: 7 rounds x 1s; fleet mode: 1 round x 3s, hold 0) unless set")
		duration      = fs.Duration("duration", time.Second, "length of one measurement (one contender, one round)")
		rounds        = fs.Int("rounds", 5, "interleaved rounds; figures are medians over rounds")
		goroutines    = fs.String("goroutines", "1,16,64,256", "throughput mode goroutine counts")
		contendedG    = fs.Int("contended", 8, "contended mode goroutine count")
		hold          = fs.Duration("hold", 0, "contended and handoff modes: how long each holder keeps the lock")
		ttl           = fs.Duration("ttl", 10*time.Second, "lock TTL, for every contender")
		masterTimeout = fs.Duration("master-timeout", 50*time.Millisecond, "per-master timeout, for every contender")
		retryDelay    = fs.Duration("retry-delay", 5*time.Millisecond, "retry pause upper bound (uniform in [d/2, d]), for every contender")
		tries         = fs.Int("tries", 1000, "attempts per Lock call (the harness's deadline ends them sooner)")
		only          = fs.String("contenders", "", "comma-separated subset of contenders (default all)")
		jsonOut       = fs.String("json", "", "write the report as JSON to this file")
		cpuProfile    = fs.String("cpuprofile", "", "write a CPU profile of the measurements (not the masters' start) to this file")
		plotOut       = fs.String("plot", "", "write the figure (latency CDF, throughput vs goroutines, handoff, degraded timeline; the modes run) to PATH.svg and PATH.png; an .svg or .png extension on PATH is dropped")
		replot        = fs.String("replot", "", "read a report written by -json and only redraw it with -plot (no measurement)")
		window        = fs.Duration("degraded-window", 2*time.Second, "degraded mode: how long each master stays slow")
		degRounds     = fs.Int("degraded-rounds", 0, "degraded mode: rounds (default -rounds)")
		latRounds     = fs.Int("latency-rounds", 0, "latency mode: rounds (default -rounds)")
		latDuration   = fs.Duration("latency-duration", 0, "latency mode: length of one measurement (default -duration)")
		seed          = fs.Uint64("seed", 1, "degraded mode: seed of the slow-master schedule")
		renewFor      = fs.Duration("renewal-duration", 30*time.Second, "renewal mode: how long each lock count is held")
		renewLocks    = fs.String("renewal-locks", "1000,10000", "renewal mode: lock counts")
		hoProcs       = fs.Int("handoff-procs", 4, "handoff and semaphore modes: child processes contending for one key")
		hoG           = fs.Int("handoff-g", 4, "handoff and semaphore modes: goroutines per child process")
		semHold       = fs.Duration("semaphore-hold", 5*time.Millisecond, "semaphore mode: how long each holder keeps its permit")
		fleetProcs    = fs.String("fleet-procs", "16,64", "fleet mode: child processes contending for one key, each with a Client of its own")
		fleetG        = fs.Int("fleet-g", 1, "fleet mode: goroutines per child process")
		fleetHolds    = fs.String("fleet-hold", "0,1ms", "fleet mode: comma-separated holds (how long each holder keeps the lock)")
		fleetRounds   = fs.Int("fleet-rounds", 0, "fleet mode: rounds (default -rounds)")
		fleetDuration = fs.Duration("fleet-duration", 0, "fleet mode: the window of one measurement (default -duration)")
		fleetStallFor = fs.Duration("fleet-stall", 0, "fleet mode: pause masters (CLIENT PAUSE ALL) this long at the middle of every window, and report how soon grants resume (0: no pause)")
		fleetStallN   = fs.Int("fleet-stall-masters", 1, "fleet mode: how many masters -fleet-stall pauses (the first ones)")
		electionTTL   = fs.Duration("election-ttl", 2*time.Second, "election mode: the leaders' lease")
		electionRnds  = fs.Int("election-rounds", 5, "election mode: rounds (each: a resignation and a crash per election)")
		primaries     = fs.String("primaries", "3,6", "cluster mode: cluster sizes (primaries); every contender on the first, Volley on each")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *replot != "" {
		return redraw(*replot, *plotOut)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick {
		if !set["rounds"] {
			*rounds = 3
		}
		if !set["duration"] {
			*duration = 400 * time.Millisecond
		}
		if !set["degraded-window"] {
			*window = time.Second
		}
		if !set["degraded-rounds"] {
			*degRounds = 1
		}
		// A p99 over the quick pass's 400ms rounds rests on a dozen
		// samples per round: the latency mode measures longer.
		if !set["latency-rounds"] {
			*latRounds = 7
		}
		if !set["latency-duration"] {
			*latDuration = time.Second
		}
		if !set["renewal-duration"] {
			*renewFor = 3 * time.Second
		}
		if !set["renewal-locks"] {
			*renewLocks = "1000"
		}
		if !set["election-rounds"] {
			*electionRnds = 3
		}
		// The fleet mode's windows are seconds long: a contender whose
		// grants collapse with P shows it only over a window of a few
		// of its retry delays.
		if !set["fleet-rounds"] {
			*fleetRounds = 1
		}
		if !set["fleet-duration"] {
			*fleetDuration = 3 * time.Second
		}
		if !set["fleet-hold"] {
			*fleetHolds = "0"
		}
	}
	ms, err := parseModes(*modes)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		return 2
	}
	rl, err := parseInts(*renewLocks)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench: -renewal-locks:", err)
		return 2
	}
	ps, err := parseInts(*primaries)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench: -primaries:", err)
		return 2
	}
	gs, err := parseInts(*goroutines)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench: -goroutines:", err)
		return 2
	}
	fps, err := parseInts(*fleetProcs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench: -fleet-procs:", err)
		return 2
	}
	fhs, err := parseDurations(*fleetHolds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench: -fleet-hold:", err)
		return 2
	}
	defs := allContenders()
	if *only != "" {
		want := strings.Split(*only, ",")
		defs = slices.DeleteFunc(defs, func(d contenderDef) bool { return !slices.Contains(want, d.name) })
		if len(defs) == 0 {
			fmt.Fprintln(os.Stderr, "lockbench: -contenders matches none of", names(allContenders()))
			return 2
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	prog := newProgress(os.Stderr)
	defer prog.done()

	var mas Masters
	if *masters != "" {
		mas = Masters{Kind: kindExternal, Addrs: strings.Split(*masters, ",")}
		if *tlsMasters != "" {
			mas.TLSAddrs = strings.Split(*tlsMasters, ",")
			if len(mas.TLSAddrs) != len(mas.Addrs) || *tlsCA == "" {
				fmt.Fprintln(os.Stderr, "lockbench: -tls-masters wants one TLS port per -masters entry, and -tls-ca")
				return 2
			}
			if mas.TLSRoots, err = loadRoots(*tlsCA); err != nil {
				fmt.Fprintln(os.Stderr, "lockbench:", err)
				return 2
			}
		}
	} else {
		prog.phase("starting %d local masters", *n)
		var stopMasters func()
		bin, ok := serverBinaries[*server]
		if strings.ContainsRune(*server, os.PathSeparator) {
			bin, ok = *server, true // a server binary of its own, such as one of make servers
		}
		if !ok {
			prog.note("-server %q: want redis, valkey, or the path of a server binary", *server)
			return 2
		}
		mas, stopMasters, err = startMasters(*n, *fake, bin)
		defer stopMasters()
		if err != nil {
			prog.note("%v", err)
			return 1
		}
	}
	prog.note("masters: %d %s (%s)", len(mas.Addrs), mas.Kind, strings.Join(mas.Addrs, ", "))
	if len(mas.TLSAddrs) > 0 {
		prog.note("their TLS ports, for volley-tls: %s", strings.Join(mas.TLSAddrs, ", "))
	}
	prog.note("volley runs with DisableRestartGuard: true (fresh masters); redsync with fail-fast; bsm/redislock on the first master only")

	opts := Options{
		Modes:      ms,
		Duration:   *duration,
		Rounds:     *rounds,
		Goroutines: gs,
		ContendedG: *contendedG,
		Hold:       *hold,
		Contenders: defs,
		StartProxy: startFaultProxy,

		DegradedWindow: *window,
		DegradedRounds: *degRounds,

		LatencyRounds:   *latRounds,
		LatencyDuration: *latDuration,
		Seed:            *seed,

		RenewalDuration:  *renewFor,
		RenewalLocks:     rl,
		ClusterPrimaries: ps,

		ElectionTTL:    *electionTTL,
		ElectionRounds: *electionRnds,

		HandoffProcs:  *hoProcs,
		HandoffG:      *hoG,
		SemaphoreHold: *semHold,

		FleetProcs:    fps,
		FleetG:        *fleetG,
		FleetHolds:    fhs,
		FleetRounds:   *fleetRounds,
		FleetDuration: *fleetDuration,
		FleetStall:    fleetStall{Masters: *fleetStallN, For: *fleetStallFor},
		Setup: Setup{
			MasterTimeout: *masterTimeout,
			TTL:           *ttl,
			RetryDelay:    *retryDelay,
			Tries:         *tries,
			PoolSize:      max(slices.Max(gs), *contendedG, *hoG, 16),
		},
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockbench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "lockbench:", err)
			return 1
		}
	}
	rep, runErr := NewRunner(opts, mas, prog).Run(ctx)
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	prog.done()
	if rep != nil {
		if rep.Targets == nil {
			rep.Targets = evaluateTargets(rep)
		}
		rep.WriteTables(os.Stdout)
		if *jsonOut != "" {
			if err := writeJSON(*jsonOut, rep); err != nil {
				fmt.Fprintln(os.Stderr, "lockbench:", err)
				return 1
			}
			fmt.Fprintln(os.Stderr, "lockbench: wrote", *jsonOut)
		}
		if *plotOut != "" {
			paths, err := writePlots(*plotOut, rep)
			switch {
			case errors.Is(err, errNothingToPlot):
				fmt.Fprintln(os.Stderr, "lockbench: -plot:", err) // the modes run have no figure: not a failure
			case err != nil:
				fmt.Fprintln(os.Stderr, "lockbench: -plot:", err)
				return 1
			}
			for _, p := range paths {
				fmt.Fprintln(os.Stderr, "lockbench: wrote", p)
			}
		}
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			fmt.Fprintln(os.Stderr, "lockbench: interrupted")
			return 130
		}
		fmt.Fprintln(os.Stderr, "lockbench: FAIL:", runErr)
		return 1
	}
	return 0
}

func parseModes(s string) ([]string, error) {
	if s == "all" || s == "" {
		return allModes, nil
	}
	var out []string
	for _, m := range strings.Split(s, ",") {
		if m == "all" {
			return allModes, nil
		}
		if !slices.Contains(allModes, m) {
			return nil, fmt.Errorf("unknown mode %q (want %s or all)", m, strings.Join(allModes, ","))
		}
		out = append(out, m)
	}
	// Run in the canonical order.
	slices.SortFunc(out, func(a, b string) int { return slices.Index(allModes, a) - slices.Index(allModes, b) })
	return slices.Compact(out), nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseDurations parses comma-separated durations, none negative ("0"
// is one).
func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("bad duration %q", f)
		}
		out = append(out, d)
	}
	return out, nil
}

func names(defs []contenderDef) string {
	var s []string
	for _, d := range defs {
		s = append(s, d.name)
	}
	return strings.Join(s, ",")
}

func writeJSON(path string, rep *Report) error {
	return writeFile(path, func(f *os.File) error {
		enc := json.NewEncoder(f)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
}

// writeFile creates path (and its directory) and fills it with fn.
func writeFile(path string, fn func(*os.File) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// redraw writes the figure of a saved JSON report to out.svg and out.png.
func redraw(in, out string) int {
	if out == "" {
		fmt.Fprintln(os.Stderr, "lockbench: -replot needs -plot PATH (writes PATH.svg and PATH.png)")
		return 2
	}
	b, err := os.ReadFile(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		return 1
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", in+":", err)
		return 1
	}
	paths, err := writePlots(out, &rep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench: -plot:", err)
		return 1
	}
	for _, p := range paths {
		fmt.Fprintln(os.Stderr, "lockbench: wrote", p)
	}
	return 0
}
