package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/volleylock/volley/redlock"
	"github.com/volleylock/volley/redlockotel"
	"github.com/volleylock/volley/redlockprom"
)

// Adapters mode: what the telemetry adapters cost per Lock+Unlock. Volley
// runs the latency and allocs loops three ways, interleaved: without
// hooks, with redlockotel (the SDK's meter provider with a manual reader,
// and its tracer provider sampling every span, exporting none), and with
// redlockprom (a fresh registry).

// adapterSetups are the three ways, the first without hooks.
var adapterSetups = []struct {
	name  string
	hooks func() (redlock.Hooks, func(), error)
}{
	{"volley", func() (redlock.Hooks, func(), error) { return redlock.Hooks{}, func() {}, nil }},
	{"volley+otel", func() (redlock.Hooks, func(), error) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
		h, err := redlockotel.Hooks(redlockotel.WithMeterProvider(mp), redlockotel.WithTracerProvider(tp))
		return h, func() { mp.Shutdown(context.Background()); tp.Shutdown(context.Background()) }, err
	}},
	{"volley+prom", func() (redlock.Hooks, func(), error) {
		h, err := redlockprom.Hooks(prometheus.NewRegistry())
		return h, func() {}, err
	}},
}

// AdapterResult is one way's figures.
type AdapterResult struct {
	Name        string  `json:"name"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
}

// namedVolley is a Volley contender under another name.
type namedVolley struct {
	Contender
	name string
}

func (n namedVolley) Name() string { return n.name }

func (r *Runner) adapters(ctx context.Context) error {
	var cs []Contender
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for _, a := range adapterSetups {
		hooks, stop, err := a.hooks()
		if err != nil {
			return err
		}
		defer stop()
		c, err := newVolleyWith(r.opts.Setup, hooks)
		if err != nil {
			return err
		}
		cs = append(cs, namedVolley{c, a.name})
	}
	r.progress.phase("adapters: %d rounds x %d ways x 2 x %v", r.opts.Rounds, len(cs), r.opts.Duration)
	lat := map[string][]Latency{}
	allocs := map[string][]float64{}
	bytes := map[string][]float64{}
	keys := map[string][]string{}
	for _, c := range cs {
		keys[c.Name()] = r.keyRing(c, "adapters", 0, 8192)
	}
	err := eachRound(ctx, r, "adapters", cs, func(_ int, c Contender) error {
		warm(ctx, c, keys[c.Name()][:50], r.opts.Setup.TTL)
		s, _ := latencySamples(ctx, c, keys[c.Name()], r.opts.Setup.TTL, r.opts.Duration, nil)
		lat[c.Name()] = append(lat[c.Name()], summarize(s))
		a, b, _ := measureAllocs(ctx, c, keys[c.Name()], r.opts.Setup.TTL, r.opts.Duration)
		allocs[c.Name()] = append(allocs[c.Name()], a)
		bytes[c.Name()] = append(bytes[c.Name()], b)
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cs {
		n := c.Name()
		l := medianLatency(lat[n])
		r.report.Adapters = append(r.report.Adapters, AdapterResult{
			Name: n, P50Ms: l.P50, P99Ms: l.P99, AllocsPerOp: median(allocs[n]), BytesPerOp: median(bytes[n]),
		})
	}
	return nil
}

// adapterCost is what a way adds to the one without hooks.
func (r *Report) adapterCost(a AdapterResult) (dP50Us, dAllocs float64) {
	if len(r.Adapters) == 0 {
		return 0, 0
	}
	base := r.Adapters[0]
	return (a.P50Ms - base.P50Ms) * 1000, a.AllocsPerOp - base.AllocsPerOp
}
