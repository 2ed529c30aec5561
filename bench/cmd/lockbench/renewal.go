package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Renewal mode: many locks held at once, each kept extended, for a while.
// What it costs the masters (commands/s the clients send, counted by a
// proxy in front of each master: a script's inner calls are not commands
// sent) and the client (CPU, heap), for each lock count in renewalCounts: Volley's Do,
// whose renewals one scheduler per Client batches; redsync by hand, a
// goroutine per lock calling Extend every TTL/3 (redsync has no
// auto-extend); rueidislock's WithContext, which renews each lock itself.
// With Volley, also volley-semaphore: each "lock" a permit of a semaphore
// of one permit held in Semaphore.Do, renewed by the same scheduler in
// batches of permits. The lock counts are Options.RenewalLocks.

// renewer is a contender that can hold a lock and keep it extended.
type renewer interface {
	Name() string
	// HoldRenewed acquires key and keeps it extended until release is
	// called (which releases it). lost reports a lock lost meanwhile.
	HoldRenewed(ctx context.Context, key string, ttl time.Duration, lost func()) (release func(), err error)
	Close() error
}

// RenewalResult is one contender's figures for one lock count.
type RenewalResult struct {
	Name           string  `json:"name"`
	Locks          int     `json:"locks"`
	Seconds        float64 `json:"seconds"`
	CommandsPerSec float64 `json:"commands_per_sec"` // summed over the masters
	CPUPercent     float64 `json:"cpu_percent"`      // of one core, the whole process
	CPUUsPerLockS  float64 `json:"cpu_us_per_lock_second"`
	HeapMiB        float64 `json:"heap_mib"` // live heap while holding, less before
	Lost           int64   `json:"lost"`
	Errors         int     `json:"errors"` // locks that could not be taken
}

func (v *volley) HoldRenewed(ctx context.Context, key string, ttl time.Duration, lost func()) (func(), error) {
	return holdInDo(ctx, lost, func(ctx context.Context, fn func(context.Context) error) error {
		return v.c.Do(ctx, key, ttl, fn)
	})
}

// HoldRenewed holds the one permit of the semaphore key in Semaphore.Do.
func (v *volleySemaphore) HoldRenewed(ctx context.Context, key string, ttl time.Duration, lost func()) (func(), error) {
	s, err := v.semaphore(key)
	if err != nil {
		return nil, err
	}
	return holdInDo(ctx, lost, func(ctx context.Context, fn func(context.Context) error) error {
		return s.Do(ctx, ttl, fn)
	})
}

// holdInDo runs do (a Volley Do) in a goroutine of its own, whose fn holds
// until release is called, reporting a loss (fn's context cancelled) to
// lost. It returns once fn runs, or do's error when nothing was taken.
func holdInDo(ctx context.Context, lost func(), do func(ctx context.Context, fn func(context.Context) error) error) (func(), error) {
	held := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { // owned by release, which waits for it
		done <- do(context.WithoutCancel(ctx), func(ctx context.Context) error {
			close(held)
			select {
			case <-stop:
			case <-ctx.Done():
				lost()
				<-stop
			}
			return nil
		})
	}()
	select {
	case <-held:
		return func() { close(stop); <-done }, nil
	case err := <-done:
		return nil, err
	}
}

func (c *redsyncGoredis) HoldRenewed(ctx context.Context, key string, ttl time.Duration, lost func()) (func(), error) {
	m := c.rs.NewMutex(key, c.opts...) // the contender was built with this ttl
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // owned by release, which waits for it
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if ok, err := m.ExtendContext(ctx); !ok || err != nil {
					lost()
				}
			}
		}
	})
	return func() { close(stop); wg.Wait(); m.UnlockContext(context.WithoutCancel(ctx)) }, nil
}

func (r *rueidisLock) HoldRenewed(ctx context.Context, key string, _ time.Duration, lost func()) (func(), error) {
	lctx, cancel, err := r.lk.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // owned by release, which waits for it
		select {
		case <-stop:
		case <-lctx.Done():
			lost()
		}
	})
	return func() { close(stop); wg.Wait(); cancel() }, nil
}

func (r *Runner) renewal(ctx context.Context) error {
	s := r.opts.Setup
	s.TTL = r.opts.RenewalTTL
	defs := []contenderDef{}
	for _, d := range r.defsFor(modeRenewal) {
		if d.name == nameVolley || d.name == nameRedsyncGoredis || d.name == nameRueidislock {
			defs = append(defs, d)
		}
		if d.name == nameVolley {
			defs = append(defs, contenderDef{name: nameVolleySemaphore, new: newVolleySemaphore})
		}
	}
	s.Permits = 1 // volley-semaphore's: one semaphore of one permit per held "lock"
	r.progress.phase("renewal: %v locks x %d contenders x %v", r.opts.RenewalLocks, len(defs), r.opts.RenewalDuration)
	for _, n := range r.opts.RenewalLocks {
		for _, d := range defs {
			res, err := r.renewOne(ctx, d, s, n)
			if err != nil {
				return err
			}
			r.report.Renewal = append(r.report.Renewal, res)
			r.report.RenewalTTL = s.TTL
		}
	}
	return nil
}

// renewOne holds n locks with one fresh contender for RenewalDuration.
func (r *Runner) renewOne(ctx context.Context, d contenderDef, s Setup, n int) (RenewalResult, error) {
	res := RenewalResult{Name: d.name, Locks: n}
	var counters []*cmdCounter
	defer func() {
		for _, p := range counters {
			p.Close()
		}
	}()
	s.Addrs = nil
	for _, a := range r.masters.Addrs {
		p, err := startCmdCounter(a)
		if err != nil {
			return res, err
		}
		counters = append(counters, p)
		s.Addrs = append(s.Addrs, p.Addr())
	}
	sent := func() uint64 {
		var t uint64
		for _, p := range counters {
			t += p.commands.Load()
		}
		return t
	}
	c, err := d.new(s)
	if err != nil {
		return res, err
	}
	defer c.Close()
	rc, ok := c.(renewer)
	if !ok {
		return res, fmt.Errorf("renewal: %s cannot hold renewed locks", d.name)
	}
	heap0 := liveHeap()
	var lost atomic.Int64
	releases := make([]func(), n)
	var errs atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	prefix := "lb:" + r.run + ":renew:" + d.name + ":" + strconv.Itoa(n) + ":"
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rel, err := rc.HoldRenewed(ctx, prefix+strconv.Itoa(i), s.TTL, func() { lost.Add(1) })
			if err != nil {
				errs.Add(1)
				return
			}
			releases[i] = rel
		})
	}
	wg.Wait()
	defer func() {
		for _, rel := range releases {
			if rel != nil {
				wg.Go(rel)
			}
		}
		wg.Wait()
	}()
	res.Errors = int(errs.Load())
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	time.Sleep(s.TTL / 3) // let the renewal rhythm settle
	cmd0 := sent()
	cpu0, _ := processCPU()
	t0 := time.Now()
	lost.Store(0)
	select {
	case <-time.After(renewalWindow(r.opts.RenewalDuration, s.TTL)):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	el := time.Since(t0)
	cpu1, cpuOK := processCPU()
	cmd1 := sent()
	heap := liveHeap()
	res.HeapMiB = float64(heap-min(heap0, heap)) / (1 << 20)
	res.Seconds = el.Seconds()
	res.CommandsPerSec = float64(cmd1-cmd0) / el.Seconds()
	if cpuOK {
		cpu := (cpu1 - cpu0).Seconds()
		res.CPUPercent = 100 * cpu / el.Seconds()
		res.CPUUsPerLockS = 1e6 * cpu / el.Seconds() / float64(n)
	}
	res.Lost = lost.Load()
	return res, nil
}

// renewalWindow is how long the renewal mode counts commands: d rounded
// up to whole renewal periods (every contender renews about every ttl/3),
// at least one, so that each lock's renewals are counted once per period
// (a 3s window with a 10s TTL saw no renewal of Volley's, and printed
// 0/s as a ratio to redsync).
func renewalWindow(d, ttl time.Duration) time.Duration {
	period := ttl / 3
	n := max(1, (d+period-1)/period)
	return n * period
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
