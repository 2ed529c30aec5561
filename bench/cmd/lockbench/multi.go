package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Multi mode: one lock over k keys, Lock+Unlock from one goroutine, for
// each k in multiKeyCounts, interleaved round by round. Volley takes the k
// keys at once (LockMulti: one script per master, one burst). The peers have
// no multi-key lock: each is shown doing it its users' way (keyByKey), a
// lock per key taken one after another in sorted order and released in
// reverse, k round trips each way and not atomic (labelled so).

// multiKeyCounts are the key counts of the multi mode.
var multiKeyCounts = []int{1, 4, 16, 64}

// multiContender is a contender that can lock several keys as one.
type multiContender interface {
	Contender
	// LockUnlockMulti acquires every key of keys and releases them.
	LockUnlockMulti(ctx context.Context, keys []string, ttl time.Duration) error
	// MultiNote says how: atomically, or key by key.
	MultiNote() string
}

// MultiResult is one contender's Lock+Unlock latency for one key count.
type MultiResult struct {
	Name   string  `json:"name"`
	Note   string  `json:"note"`
	Keys   int     `json:"keys"`
	Lat    Latency `json:"latency"`
	Errors int     `json:"errors"`
}

func (v *volley) LockUnlockMulti(ctx context.Context, keys []string, ttl time.Duration) error {
	l, err := v.c.LockMulti(ctx, keys, ttl)
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}

func (v *volley) MultiNote() string { return "atomic: one script per master, one burst" }

// keyByKey is how a library without multi-key locks takes several keys:
// one lock per key, in sorted order, one after another, released in
// reverse. It is not atomic (a failure leaves the earlier keys taken until
// they are released) and costs a lock's round trips per key.
type keyByKey struct{ Contender }

func (k keyByKey) LockUnlockMulti(ctx context.Context, keys []string, ttl time.Duration) error {
	sorted := slices.Sorted(slices.Values(keys))
	held := make([]Holder, 0, len(sorted))
	defer func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].Unlock(ctx)
		}
	}()
	for _, key := range sorted {
		h := k.NewHolder()
		if err := h.Lock(ctx, key, ttl); err != nil {
			return err
		}
		held = append(held, h)
	}
	return nil
}

func (keyByKey) MultiNote() string { return "not atomic: a lock per key, one after another" }

func (r *Runner) multi(ctx context.Context) error {
	cs, err := r.connect(r.opts.Setup, r.defsFor(modeMulti))
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	var mcs []multiContender
	for _, c := range cs {
		if m, ok := c.(multiContender); ok {
			mcs = append(mcs, m)
		} else {
			mcs = append(mcs, keyByKey{c})
		}
	}
	r.progress.phase("multi: %d rounds x %d key counts x %d contenders x %v", r.opts.Rounds, len(multiKeyCounts), len(mcs), r.opts.Duration)
	type slot struct {
		name string
		k    int
	}
	rounds := map[slot][]Latency{}
	errs := map[slot]int{}
	for _, k := range multiKeyCounts {
		// A ring of disjoint key sets per contender, so that no lock waits
		// for a previous one's leftovers.
		sets := map[string][][]string{}
		for _, c := range mcs {
			ring := r.keyRing(c, "multi"+strconv.Itoa(k), 0, 64*k)
			for i := 0; i+k <= len(ring); i += k {
				sets[c.Name()] = append(sets[c.Name()], ring[i:i+k])
			}
		}
		err := eachRound(ctx, r, fmt.Sprintf("multi %d keys", k), mcs, func(_ int, c multiContender) error {
			ss := sets[c.Name()]
			var samples []time.Duration
			e := 0
			deadline := time.Now().Add(r.opts.Duration)
			for i := 0; ctx.Err() == nil && time.Now().Before(deadline); i++ {
				t0 := time.Now()
				if err := c.LockUnlockMulti(ctx, ss[i%len(ss)], r.opts.Setup.TTL); err != nil {
					e++
					continue
				}
				samples = append(samples, time.Since(t0))
			}
			s := slot{c.Name(), k}
			rounds[s] = append(rounds[s], summarize(samples))
			errs[s] += e
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, k := range multiKeyCounts {
		for _, c := range mcs {
			s := slot{c.Name(), k}
			r.report.Multi = append(r.report.Multi, MultiResult{
				Name: c.Name(), Note: c.MultiNote(), Keys: k, Lat: medianLatency(rounds[s]), Errors: errs[s],
			})
		}
	}
	return nil
}

// multiRatio is a multi-key result's p50 over the same contender's one-key
// p50 in the same run.
func (r *Report) multiRatio(m MultiResult) float64 {
	for _, one := range r.Multi {
		if one.Name == m.Name && one.Keys == 1 && one.Lat.P50 > 0 {
			return m.Lat.P50 / one.Lat.P50
		}
	}
	return 0
}

// multiOf returns a contender's result over a number of keys, or nil.
func (r *Report) multiOf(name string, keys int) *MultiResult {
	for i := range r.Multi {
		if r.Multi[i].Name == name && r.Multi[i].Keys == keys {
			return &r.Multi[i]
		}
	}
	return nil
}
