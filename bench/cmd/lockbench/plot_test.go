package main

import (
	"bytes"
	"image"
	_ "image/png" // image.DecodeConfig of the PNG
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"
)

// requireFigure renders r as SVG and PNG, checks both, and that the figure
// has rows rows of panels.
func requireFigure(t *testing.T, r *Report, rows int) *figure {
	t.Helper()
	f, err := newFigure(r)
	require.NoError(t, err)
	require.Len(t, f.rows, rows)
	var svg, png bytes.Buffer
	require.NoError(t, f.writeSVG(&svg))
	require.NoError(t, f.writePNG(&png))
	requireSVG(t, svg.Bytes())
	requirePNG(t, png.Bytes())
	return f
}

// requireSVG checks that b is a well-formed SVG document.
func requireSVG(t *testing.T, b []byte) {
	t.Helper()
	require.True(t, bytes.HasPrefix(b, []byte("<?xml")) || bytes.HasPrefix(b, []byte("<svg")), "SVG starts with %.40q", b)
	require.Contains(t, string(b[:min(len(b), 500)]), "<svg")
	requireWellFormedXML(t, b)
}

// requirePNG checks that b is a PNG of the figure's width, and not a
// sliver.
func requirePNG(t *testing.T, b []byte) {
	t.Helper()
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, "png", format)
	assert.Equal(t, int(math.Round(float64(figureWidth/vg.Inch)*pngDPI)), cfg.Width)
	assert.Greater(t, cfg.Height, 400)
}

// syntheticReport has every plotted part for three contenders of the
// table (one the floor) and one it does not know; redsync has no
// hand-offs in the defaults setting.
func syntheticReport() *Report {
	names := []string{nameRedsyncGoredis, nameVolley, "floor", "unknown"}
	r := &Report{
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), GoVersion: "go1.26", GOMAXPROCS: 2,
		Masters: Masters{Kind: kindFake, Addrs: []string{"a:1", "b:2", "c:3"}},
		Config: ReportConfig{Rounds: 2, DurationMs: 100, Goroutines: []int{1, 16, 64},
			HandoffProcs: 2, HandoffG: 3, HoldMs: 1},
		DegradedSchedule: degradedSchedule(3, 500*time.Millisecond, time.Second, 1),
	}
	for i, n := range names {
		k := float64(i + 1)
		r.Contenders = append(r.Contenders, ContenderInfo{Name: n, Note: "how " + n + " was set up"})
		r.Latency = append(r.Latency, LatencyResult{Name: n,
			CDF: [][2]float64{{0.1 * k, 0}, {0.15 * k, 0.5}, {0.3 * k, 0.99}, {2 * k, 1}}})
		for _, g := range r.Config.Goroutines {
			r.Throughput = append(r.Throughput, ThroughputResult{Name: n, Goroutines: g, OpsPerSec: 3000 * float64(g) / k})
		}
		for _, s := range handoffSettings {
			r.Handoff = append(r.Handoff, HandoffResult{Name: n, Setting: s,
				Handoff: Latency{N: 10, P50: 0.5 * k, P99: 4 * k}, LongestWaitMs: 90 * k})
		}
		r.Degraded = append(r.Degraded, DegradedResult{Name: n, AcqPerSecWarm: 500 / k, AcqPerSecFault: 90, AcqPerSecAfter: 450 / k,
			Rounds: []degradedFigure{{PerWindow: []float64{5 * k, 200, 30}}, {PerWindow: []float64{15 * k, 100, 40}}}})
	}
	r.Handoff[0].Handoff = Latency{}
	// An old report: no per-window rates, the faults' average instead.
	r.Degraded[3].Rounds = nil
	return r
}

func TestFigureSynthetic(t *testing.T) {
	r := syntheticReport()
	// Latency and throughput share a row, hand-off and degraded one each.
	f := requireFigure(t, r, 3)
	assert.Len(t, f.rows[0], 2)

	st := newStyles(contenderNames(r))
	require.Len(t, st, 4)
	assert.Equal(t, knownStyles[nameVolley], st[nameVolley], "the table fixes a known contender's colour")
	assert.NotEmpty(t, st["floor"].dashes, "the floor is dashed")
	assert.Equal(t, spareColors[0], st["unknown"].color)
	seen := map[any]string{}
	for n, s := range st {
		assert.NotContains(t, seen, s.color, "%s and %s share a colour", n, seen[s.color])
		seen[s.color] = n
	}
}

// TestFigureOmitsAbsentPanels: a panel without data is left out, not
// drawn empty; a report with none is errNothingToPlot.
func TestFigureOmitsAbsentPanels(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep func(r *Report)
		rows int
	}{
		{"latency", func(r *Report) { r.Throughput, r.Handoff, r.Degraded = nil, nil, nil }, 1},
		{"throughput", func(r *Report) { r.Latency, r.Handoff, r.Degraded = nil, nil, nil }, 1},
		{"handoff", func(r *Report) { r.Latency, r.Throughput, r.Degraded = nil, nil, nil }, 1},
		{"degraded", func(r *Report) { r.Latency, r.Throughput, r.Handoff = nil, nil, nil }, 1},
		{"no schedule", func(r *Report) { r.DegradedSchedule = nil }, 2},
		{"latency and degraded", func(r *Report) { r.Throughput, r.Handoff = nil, nil }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := syntheticReport()
			tc.keep(r)
			requireFigure(t, r, tc.rows)
		})
	}
	r := syntheticReport()
	r.Latency, r.Throughput, r.Handoff, r.Degraded = nil, nil, nil, nil
	_, err := newFigure(r)
	require.ErrorIs(t, err, errNothingToPlot)
}

func TestPlotBase(t *testing.T) {
	for in, want := range map[string]string{
		"results/lockbench-quick.svg": "results/lockbench-quick",
		"results/lockbench-quick.PNG": "results/lockbench-quick",
		"results/lockbench-quick":     "results/lockbench-quick",
		"results/lockbench.v2":        "results/lockbench.v2",
	} {
		assert.Equal(t, want, plotBase(in), in)
	}
}

// TestReplot redraws the report make bench saved, when there is one (the
// results folder is not committed), through the -replot flag.
func TestReplot(t *testing.T) {
	in := filepath.Join("..", "..", "results", "lockbench-quick.json")
	if _, err := os.Stat(in); err != nil {
		t.Skipf("no saved report (%v): run make bench", err)
	}
	out := filepath.Join(t.TempDir(), "figure.svg")
	require.Equal(t, 0, run([]string{"-replot", in, "-plot", out}))
	svg, err := os.ReadFile(filepath.Join(filepath.Dir(out), "figure.svg"))
	require.NoError(t, err)
	requireSVG(t, svg)
	png, err := os.ReadFile(filepath.Join(filepath.Dir(out), "figure.png"))
	require.NoError(t, err)
	requirePNG(t, png)
}
