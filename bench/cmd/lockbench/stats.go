package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the q-quantile (0..1) of sorted, nearest-rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Latency is the summary of one set of operation latencies, in ms.
type Latency struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

func summarize(samples []time.Duration) Latency {
	s := slices.Clone(samples)
	slices.Sort(s)
	return Latency{
		N:    len(s),
		P50:  ms(percentile(s, 0.50)),
		P90:  ms(percentile(s, 0.90)),
		P99:  ms(percentile(s, 0.99)),
		P999: ms(percentile(s, 0.999)),
		Max:  ms(percentile(s, 1)),
	}
}

// medianLatency is the field-wise median over rounds.
func medianLatency(rounds []Latency) Latency {
	f := func(get func(Latency) float64) float64 {
		xs := make([]float64, len(rounds))
		for i, r := range rounds {
			xs[i] = get(r)
		}
		return median(xs)
	}
	n := 0
	for _, r := range rounds {
		n += r.N
	}
	return Latency{
		N:    n,
		P50:  f(func(l Latency) float64 { return l.P50 }),
		P90:  f(func(l Latency) float64 { return l.P90 }),
		P99:  f(func(l Latency) float64 { return l.P99 }),
		P999: f(func(l Latency) float64 { return l.P999 }),
		Max:  f(func(l Latency) float64 { return l.Max }),
	}
}

// cdfPoints reduces samples to at most n (latency ms, fraction) points of
// their empirical CDF, for the plot.
func cdfPoints(samples []time.Duration, n int) [][2]float64 {
	s := slices.Clone(samples)
	slices.Sort(s)
	if len(s) == 0 {
		return nil
	}
	pts := make([][2]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		q := float64(i) / float64(n)
		pts = append(pts, [2]float64{ms(percentile(s, q)), q})
	}
	return pts
}
