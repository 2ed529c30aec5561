// Command soak runs Do calls on a busy machine for a while and counts the
// locks that Do lost: a loss (Do's error matching redlock.ErrNotHeld) on
// healthy masters means that an extension failed for no fault but load,
// and fn's work went on without the lock (#53: "a busy but healthy master
// or client does not fail Extends").
//
// It starts -masters local redis-server masters (or uses -addrs), then
// -clients Clients of -goroutines goroutines each; every goroutine loops
// Do on one of -keys keys with the default Config (but MaxTTL, and no
// restart guard on masters it started itself: they are fresh) and TTL
// -ttl, its fn holding the lock for a random time up to -hold (several
// TTLs, so that renewals run) and checking that nobody else is inside
// fn for that key. With -hogs it also runs that many busy goroutines in
// a child process of its own (default 2 per CPU), so the load average
// stays above the cores' count.
//
// It prints a summary and exits 1 when any Do lost its lock, two
// holders overlapped, or no Do completed; 2 on a setup error. With
// -break-renewals the renewals are starved on purpose (fn outlives its
// lock with MaxExtensions 1): the run must then report losses, which
// shows that the count can fail.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/redlock"
)

func main() { os.Exit(run()) }

// run is the soak; it returns the exit status, after stopping everything
// it started.
func run() int {
	var (
		duration   = flag.Duration("duration", 10*time.Minute, "length of the soak")
		masters    = flag.Int("masters", 5, "local redis-server masters to start (ignored with -addrs)")
		addrs      = flag.String("addrs", "", "comma-separated masters host:port instead of starting them")
		clients    = flag.Int("clients", 4, "independent Clients")
		goroutines = flag.Int("goroutines", 16, "goroutines per Client, each looping Do")
		keys       = flag.Int("keys", 8, "keys the goroutines share")
		ttl        = flag.Duration("ttl", 10*time.Second, "Do's TTL")
		hold       = flag.Duration("hold", 30*time.Second, "longest time fn holds the lock (random in [0, hold])")
		hogs       = flag.Int("hogs", 2*runtime.NumCPU(), "busy goroutines in a child process (0: none)")
		broken     = flag.Bool("break-renewals", false, "starve the renewals (MaxExtensions 1): the soak must report losses")
		hogChild   = flag.Int("hog-child", 0, "internal: run as the hog process with this many busy goroutines")
	)
	flag.Parse()
	if *hogChild > 0 {
		hog(*hogChild)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	list, cleanup, err := startMasters(*addrs, *masters)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	defer cleanup()

	if *hogs > 0 {
		child := exec.Command(os.Args[0], "-hog-child", fmt.Sprint(*hogs))
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "soak: hogs:", err)
			return 2
		}
		defer func() {
			child.Process.Kill()
			child.Wait()
		}()
	}

	// Masters the soak started are fresh: they held nothing before, so
	// the restart guard (which would hold every Lock out for MaxTTL) has
	// nothing to guard, as in lockbench.
	cfg := redlock.Config{Addrs: list, MaxTTL: *ttl, DisableRestartGuard: *addrs == ""}
	if *broken {
		cfg.MaxExtensions = 1
	}
	var cs []*redlock.Client
	for range *clients {
		c, err := redlock.New(ctx, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak: New:", err)
			return 2
		}
		defer c.Close()
		cs = append(cs, c)
	}

	var (
		done, lost, overlaps, lockErrs atomic.Int64
		inside                         = make([]atomic.Int32, *keys)
		firstLoss, firstLockErr        atomic.Pointer[string]
	)
	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for ci, c := range cs {
		for g := range *goroutines {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(ci), uint64(g)))
				for runCtx.Err() == nil {
					k := rng.IntN(*keys)
					held := time.Duration(rng.Int64N(int64(*hold) + 1))
					err := c.Do(runCtx, fmt.Sprintf("soak:%d", k), *ttl, func(fnCtx context.Context) error {
						if inside[k].Add(1) != 1 {
							overlaps.Add(1)
						}
						defer inside[k].Add(-1)
						t := time.NewTimer(held)
						defer t.Stop()
						select {
						case <-t.C:
						case <-fnCtx.Done():
						}
						return nil
					})
					switch {
					case err == nil:
						done.Add(1)
					case errors.Is(err, redlock.ErrNotHeld):
						lost.Add(1)
						msg := err.Error()
						firstLoss.CompareAndSwap(nil, &msg)
					case runCtx.Err() != nil:
					default:
						lockErrs.Add(1) // not taken: contention or the soak's end
						msg := err.Error()
						firstLockErr.CompareAndSwap(nil, &msg)
					}
				}
			})
		}
	}
	wg.Wait()
	fmt.Printf("soak: %v, %d masters, %d Clients x %d goroutines on %d keys, TTL %v, holds up to %v, %d hogs\n",
		time.Since(start).Round(time.Second), len(list), *clients, *goroutines, *keys, *ttl, *hold, *hogs)
	fmt.Printf("soak: %d Do calls completed, %d lost their lock, %d overlaps, %d Lock errors (not taken)\n",
		done.Load(), lost.Load(), overlaps.Load(), lockErrs.Load())
	if p := firstLoss.Load(); p != nil {
		fmt.Printf("soak: first loss: %s\n", *p)
	}
	if p := firstLockErr.Load(); p != nil {
		fmt.Printf("soak: first Lock error: %s\n", *p)
	}
	if lost.Load() > 0 || overlaps.Load() > 0 || done.Load() == 0 {
		fmt.Println("soak: FAIL")
		return 1
	}
	fmt.Println("soak: PASS")
	return 0
}

// startMasters returns the masters' addresses: addrs when given, else
// those of n redis-servers it starts, which cleanup stops.
func startMasters(addrs string, n int) ([]string, func(), error) {
	if addrs != "" {
		return strings.Split(addrs, ","), func() {}, nil
	}
	var servers []*redistest.Server
	cleanup := func() {
		for _, s := range servers {
			s.Stop()
		}
	}
	for range n {
		s, err := redistest.StartServer(redistest.Options{})
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		servers = append(servers, s)
	}
	return redistest.Addrs(servers), cleanup, nil
}

// hog keeps n goroutines busy until the process is killed.
func hog(n int) {
	runtime.GOMAXPROCS(n)
	for range n - 1 {
		go spin()
	}
	spin()
}

// spin burns a processor.
func spin() {
	x := 0
	for {
		x++
	}
}
