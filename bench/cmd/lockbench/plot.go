package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/image/font"
	"gonum.org/v1/plot"
	plotfont "gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The figure: a title, the panels of the modes the report has (latency and
// throughput side by side, hand-off and degraded each a row of its own), and
// one legend below them, drawn by gonum.org/v1/plot into an SVG and a PNG.

// errNothingToPlot is returned for a report with none of the plotted modes.
var errNothingToPlot = errors.New("nothing to plot: the report has no latency, throughput, handoff or degraded results")

// Sizes of the figure; the PNG has pngDPI pixels per inch.
const (
	figureWidth = 12 * vg.Inch
	titleHeight = 0.5 * vg.Inch
	rowHeight   = 4 * vg.Inch
	rowGap      = 0.15 * vg.Inch
	pngDPI      = 110
)

// plotStyle is how one contender is drawn, the same in every panel.
type plotStyle struct {
	color  color.Color
	dashes []vg.Length
}

// knownStyles fixes the style of the known contenders, so that each looks
// the same in every report (Okabe-Ito colours, told apart with colour
// blindness); any other contender takes the next of spareColors in report
// order. The floor contenders, references rather than libraries, are
// black: the floor dashed, floor-c dotted.
var knownStyles = map[string]plotStyle{
	nameVolley:         {color: rgb(0x0072b2)},
	nameVolleyFenced:   {color: rgb(0x56b4e9)},
	nameRedsyncGoredis: {color: rgb(0xd55e00)},
	nameRedsyncRedigo:  {color: rgb(0xe69f00)},
	nameRedislock:      {color: rgb(0x009e73)},
	nameRueidislock:    {color: rgb(0xcc79a7)},
	nameFloor:          {color: color.Black, dashes: []vg.Length{vg.Points(6), vg.Points(3)}},
	nameFloorC:         {color: color.Black, dashes: []vg.Length{vg.Points(1.5), vg.Points(2)}},
}

var spareColors = []color.Color{rgb(0x8c564b), rgb(0x7f7f7f), rgb(0xbcbd22)}

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// styles gives every contender of a report its plotStyle.
type styles map[string]plotStyle

// newStyles assigns styles to names in order.
func newStyles(names []string) styles {
	st := styles{}
	spare := 0
	for _, n := range names {
		if s, ok := knownStyles[n]; ok {
			st[n] = s
			continue
		}
		st[n] = plotStyle{color: spareColors[spare%len(spareColors)]}
		spare++
	}
	return st
}

// line is the line style of name.
func (st styles) line(name string) draw.LineStyle {
	s := st[name]
	return draw.LineStyle{Color: s.color, Width: vg.Points(1.6), Dashes: s.dashes}
}

// contenderNames lists the contenders of r: the report's list, then any
// other name its results carry, in the order they appear.
func contenderNames(r *Report) []string {
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, c := range r.Contenders {
		add(c.Name)
	}
	for _, l := range r.Latency {
		add(l.Name)
	}
	for _, t := range r.Throughput {
		add(t.Name)
	}
	for _, h := range r.Handoff {
		add(h.Name)
	}
	for _, d := range r.Degraded {
		add(d.Name)
	}
	return names
}

// panelBuilders are the figure's panels in order. Each returns nil when
// its part of the report is absent, and the panel is left out.
var panelBuilders = []func(r *Report, names []string, st styles) (*panel, error){
	latencyPanel,
	throughputPanel,
	handoffPanel,
	degradedPanel,
}

// panel is one plot of the figure; a wide one takes a row of its own, the
// others go two to a row.
type panel struct {
	p    *plot.Plot
	wide bool
	// yLabel is drawn by the figure, centred on the data area: gonum
	// places the glyph box of a vertical axis label at the arithmetic
	// middle of the range, near the top on a log scale, and shrinks the
	// data area to fit it there. The plot's own label is a blank that
	// keeps the room for it.
	yLabel string
}

// figure is a report's panels laid out, ready to draw.
type figure struct {
	title        string
	rows         [][]*panel
	legend       plot.Legend
	legendHeight vg.Length
	w, h         vg.Length
}

// newFigure lays out the panels of r, or returns errNothingToPlot.
func newFigure(r *Report) (*figure, error) {
	names := contenderNames(r)
	st := newStyles(names)
	f := &figure{
		title: fmt.Sprintf("lockbench %s: %d %s masters, %s, GOMAXPROCS=%d, medians of %d rounds x %v",
			r.Started.Format("2006-01-02"), len(r.Masters.Addrs), r.Masters.Kind, r.GoVersion, r.GOMAXPROCS, r.Config.Rounds, dur(r.Config.DurationMs)),
		w: figureWidth,
	}
	if lr := r.Config.LatencyRounds; lr > 0 && len(r.Latency) > 0 && (lr != r.Config.Rounds || r.Config.LatencyDurationMs != r.Config.DurationMs) {
		f.title += fmt.Sprintf(" (latency: %d x %v)", lr, dur(r.Config.LatencyDurationMs))
	}
	var half []*panel
	flush := func() {
		if len(half) > 0 {
			f.rows = append(f.rows, half)
			half = nil
		}
	}
	for _, build := range panelBuilders {
		p, err := build(r, names, st)
		if err != nil {
			return nil, err
		}
		if p != nil {
			p.yLabel, p.p.Y.Label.Text = p.p.Y.Label.Text, " "
		}
		switch {
		case p == nil:
		case p.wide:
			flush()
			f.rows = append(f.rows, []*panel{p})
		default:
			half = append(half, p)
			if len(half) == 2 {
				flush()
			}
		}
	}
	flush()
	if len(f.rows) == 0 {
		return nil, errNothingToPlot
	}

	f.legend = plot.NewLegend()
	f.legend.Top, f.legend.Left = true, true
	f.legend.TextStyle.Font = sans(10, font.WeightNormal)
	f.legend.ThumbnailWidth = vg.Points(28)
	notes := map[string]string{}
	for _, c := range r.Contenders {
		notes[c.Name] = c.Note
	}
	for _, n := range names {
		label := n
		if notes[n] != "" {
			label += ": " + notes[n]
		}
		f.legend.Add(label, &plotter.Line{LineStyle: st.line(n)})
	}
	f.legend.Padding = vg.Points(3)
	f.legendHeight = vg.Length(len(names))*(f.legend.TextStyle.Height("M")+f.legend.Padding) + 0.25*vg.Inch
	f.h = titleHeight + vg.Length(len(f.rows))*(rowHeight+rowGap) + f.legendHeight
	return f, nil
}

// draw draws the figure on c, which is f.w x f.h.
func (f *figure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	title := draw.TextStyle{
		Color: color.Black, Font: sans(14, font.WeightBold),
		XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler,
	}
	c.FillText(title, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Max.Y - titleHeight/2}, f.title)
	top := c.Max.Y - titleHeight
	for _, row := range f.rows {
		rc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: c.Min.X, Y: top - rowHeight},
			Max: vg.Point{X: c.Max.X, Y: top},
		}}
		// Aligned: the panels of a row have data areas of one size.
		tiles := draw.Tiles{Rows: 1, Cols: len(row), PadLeft: 0.1 * vg.Inch, PadRight: 0.25 * vg.Inch, PadX: 0.4 * vg.Inch}
		ps := make([]*plot.Plot, len(row))
		for i, p := range row {
			ps[i] = p.p
		}
		cs := plot.Align([][]*plot.Plot{ps}, tiles, rc)
		for i, p := range row {
			pc := cs[0][i]
			p.p.Draw(pc)
			label := p.p.Y.Label.TextStyle
			label.Rotation, label.XAlign, label.YAlign = math.Pi/2, draw.XCenter, draw.YTop
			data := p.p.DataCanvas(pc)
			c.FillText(label, vg.Point{X: pc.Min.X, Y: data.Center().Y}, p.yLabel)
		}
		top -= rowHeight + rowGap
	}
	f.legend.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: c.Min.X + 0.6*vg.Inch, Y: c.Min.Y},
		Max: vg.Point{X: c.Max.X, Y: top - 0.1*vg.Inch},
	}})
}

// writeSVG writes the figure as SVG. It names Liberation Sans without
// embedding it (that would add the font file); a viewer without it
// substitutes a font, Arial where it has it, with the same metrics.
func (f *figure) writeSVG(w io.Writer) error {
	c := vgsvg.New(f.w, f.h)
	f.draw(draw.New(c))
	_, err := c.WriteTo(w)
	return err
}

// writePNG writes the figure as PNG at pngDPI.
func (f *figure) writePNG(w io.Writer) error {
	c := vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	f.draw(draw.New(c))
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// plotBase is the -plot path without an .svg or .png extension: the
// figure goes to base.svg and base.png.
func plotBase(path string) string {
	switch ext := filepath.Ext(path); strings.ToLower(ext) {
	case ".svg", ".png":
		return strings.TrimSuffix(path, ext)
	}
	return path
}

// writePlots writes the figure of r to plotBase(path) + ".svg" and ".png"
// and returns the paths written.
func writePlots(path string, r *Report) ([]string, error) {
	f, err := newFigure(r)
	if err != nil {
		return nil, err
	}
	base := plotBase(path)
	var done []string
	for _, out := range []struct {
		ext   string
		write func(io.Writer) error
	}{{".svg", f.writeSVG}, {".png", f.writePNG}} {
		p := base + out.ext
		if err := writeFile(p, func(file *os.File) error { return out.write(file) }); err != nil {
			return done, err
		}
		done = append(done, p)
	}
	return done, nil
}

// sans is Liberation Sans (metric-compatible with Arial), bundled with
// gonum's plot.
func sans(size vg.Length, w font.Weight) plotfont.Font {
	return plotfont.Font{Typeface: "Liberation", Variant: "Sans", Weight: w, Size: size}
}

// newPlot returns a panel's plot in the figure's fonts, with a grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(11, font.WeightBold)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(10, font.WeightNormal)
		a.Tick.Label.Font = sans(9, font.WeightNormal)
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = rgb(0xe4e4e4), rgb(0xe4e4e4)
	p.Add(grid)
	return p
}

// logTicks labels 1, 2 and 5 times each power of ten in [lo, hi], with
// unlabelled minor ticks at the other multiples.
func logTicks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < lo*0.999 || v > hi*1.001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = num(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// num formats a tick value: 3 significant digits, k and M for thousands
// and millions.
func num(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// logAxis makes axis a a log scale over [lo, hi] with logTicks.
func logAxis(a *plot.Axis, lo, hi float64) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = plot.TickerFunc(logTicks)
	a.Min, a.Max = lo, hi
}

// latencyPanel: the CDF of Lock+Unlock latency, one line per contender.
func latencyPanel(r *Report, names []string, st styles) (*panel, error) {
	if len(r.Latency) == 0 {
		return nil, nil
	}
	p := newPlot("Lock+Unlock latency CDF, 1 goroutine", "latency (ms, log scale)", "fraction of operations")
	lo, hi := math.Inf(1), 0.0
	for _, n := range names {
		l := r.latency(n)
		if l == nil {
			continue
		}
		var xys plotter.XYs
		for _, pt := range l.CDF {
			if pt[0] > 0 {
				xys = append(xys, plotter.XY{X: pt[0], Y: pt[1]})
				lo, hi = math.Min(lo, pt[0]), math.Max(hi, pt[0])
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("latency of %s: %w", n, err)
		}
		line.LineStyle = st.line(n)
		p.Add(line)
	}
	if hi == 0 {
		return nil, nil
	}
	logAxis(&p.X, lo, hi)
	p.Y.Min, p.Y.Max = 0, 1
	var ticks plot.ConstantTicks
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 0.9, 1} {
		ticks = append(ticks, plot.Tick{Value: q, Label: strconv.FormatFloat(q, 'g', -1, 64)})
	}
	p.Y.Tick.Marker = ticks
	return &panel{p: p}, nil
}

// throughputPanel: Lock+Unlock ops/s against the goroutine count.
func throughputPanel(r *Report, names []string, st styles) (*panel, error) {
	var gs []int
	lo, hi := math.Inf(1), 0.0
	for _, t := range r.Throughput {
		if t.OpsPerSec > 0 {
			gs = append(gs, t.Goroutines)
			lo, hi = math.Min(lo, t.OpsPerSec), math.Max(hi, t.OpsPerSec)
		}
	}
	if len(gs) == 0 {
		return nil, nil
	}
	slices.Sort(gs)
	gs = slices.Compact(gs)
	p := newPlot("Lock+Unlock throughput, goroutines on distinct keys", "goroutines (log scale)", "ops/s (log scale)")
	for _, n := range names {
		var xys plotter.XYs
		for _, g := range gs {
			if t := r.throughput(n, g); t != nil && t.OpsPerSec > 0 {
				xys = append(xys, plotter.XY{X: float64(g), Y: t.OpsPerSec})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("throughput of %s: %w", n, err)
		}
		line.LineStyle = st.line(n)
		points.GlyphStyle = draw.GlyphStyle{Color: st[n].color, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		p.Add(line, points)
	}
	// A margin around the goroutine counts, ticks at each of them.
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = float64(gs[0])/1.5, float64(gs[len(gs)-1])*1.5
	var ticks plot.ConstantTicks
	for _, g := range gs {
		ticks = append(ticks, plot.Tick{Value: float64(g), Label: strconv.Itoa(g)})
	}
	p.X.Tick.Marker = ticks
	logAxis(&p.Y, lo/1.2, hi*1.2)
	return &panel{p: p}, nil
}

// handoffMetrics are the hand-off panel's bars, per setting.
var handoffMetrics = []struct {
	label string
	get   func(*HandoffResult) (float64, bool)
}{
	{"hand-off p50", func(h *HandoffResult) (float64, bool) { return h.Handoff.P50, h.Handoff.N > 0 }},
	{"hand-off p99", func(h *HandoffResult) (float64, bool) { return h.Handoff.P99, h.Handoff.N > 0 }},
	{"longest wait", func(h *HandoffResult) (float64, bool) { return h.LongestWaitMs, true }},
}

// handoffPanel: one key contended across processes, in each setting:
// waiter hand-off p50 and p99 and the longest wait, a bar per contender.
func handoffPanel(r *Report, names []string, st styles) (*panel, error) {
	var settings []string
	for _, s := range handoffSettings {
		if slices.ContainsFunc(r.Handoff, func(h HandoffResult) bool { return h.Setting == s }) {
			settings = append(settings, s)
		}
	}
	if len(settings) == 0 {
		return nil, nil
	}
	var present []string
	for _, n := range names {
		if slices.ContainsFunc(r.Handoff, func(h HandoffResult) bool { return h.Name == n }) {
			present = append(present, n)
		}
	}
	p := newPlot(fmt.Sprintf("Contended hand-off across processes: %d processes x %d goroutines on one key, hold %v",
		r.Config.HandoffProcs, r.Config.HandoffG, dur(r.Config.HoldMs)), "", "ms (log scale)")
	// Categories: each metric in each setting; a bar per contender in each.
	width := 0.8 / float64(len(present))
	var labels []string
	var bs bands
	lo, hi := math.Inf(1), 0.0
	bars := map[string]*logBars{}
	for si, s := range settings {
		bs = append(bs, band{
			x0: float64(si*len(handoffMetrics)) - 0.5, x1: float64((si+1)*len(handoffMetrics)) - 0.5,
			label: settingLabel(s), fill: []color.Color{rgb(0xf7f7f7), rgb(0xeeeeee)}[si%2],
		})
		for mi, m := range handoffMetrics {
			x := float64(si*len(handoffMetrics) + mi)
			labels = append(labels, m.label)
			for ni, n := range present {
				h := r.handoff(n, s)
				if h == nil {
					continue
				}
				if bars[n] == nil {
					bars[n] = &logBars{width: width, color: st[n].color}
				}
				at := x + (float64(ni)-float64(len(present)-1)/2)*width
				v, ok := m.get(h)
				if !ok || v <= 0 {
					bars[n].none = append(bars[n].none, at)
					continue
				}
				bars[n].xys = append(bars[n].xys, plotter.XY{X: at, Y: v})
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if hi == 0 {
		return nil, nil
	}
	p.Add(&bs)
	for _, n := range present {
		if bars[n] != nil {
			p.Add(bars[n])
		}
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.5, float64(len(labels))-0.5
	// Room above the tallest bar for the settings' labels.
	logAxis(&p.Y, lo/2, hi*4)
	return &panel{p: p, wide: true}, nil
}

// settingLabel names a handoff setting in the plot.
func settingLabel(s string) string {
	switch s {
	case settingDefaults:
		return "each library's default retry settings"
	case settingEqual:
		return "equal retry settings"
	}
	return s
}

// degradedPanel: acquisitions/s over the degraded run, the slow windows
// shaded. The report has a rate per window (median over rounds), not a
// finer time series: the lines are steps, one level per window.
func degradedPanel(r *Report, names []string, st styles) (*panel, error) {
	sched := r.DegradedSchedule
	if len(r.Degraded) == 0 || len(sched) == 0 {
		return nil, nil
	}
	window := dur(sched[0].EndMs - sched[0].StartMs)
	_, tail := degradedTiming(window)
	first, last := sched[0].StartMs/1000, sched[len(sched)-1].EndMs/1000
	end := last + tail.Seconds()
	rounds := "median of " + strconv.Itoa(len(r.Degraded[0].Rounds)) + " rounds"
	if len(r.Degraded[0].Rounds) == 1 {
		rounds = "1 round"
	}
	p := newPlot(fmt.Sprintf("Degraded: one master at a time slow (shaded), %d clients x %d goroutines on one key; acquisitions/s in each window, %s",
		degradedClients, degradedPerClient, rounds), "seconds from the start of the run (a window with none: on the axis)", "acquisitions/s (log scale)")
	var bs bands
	for i, w := range sched {
		bs = append(bs, band{x0: w.StartMs / 1000, x1: w.EndMs / 1000, label: w.String(),
			fill: []color.Color{rgb(0xe8e8e8), rgb(0xd8d8d8)}[i%2]})
	}
	p.Add(&bs)
	// Ticks where the windows start and end.
	ticks := plot.ConstantTicks{{Value: 0, Label: "0"}}
	for _, w := range sched {
		ticks = append(ticks, plot.Tick{Value: w.EndMs / 1000, Label: strconv.FormatFloat(w.EndMs/1000, 'g', 4, 64)})
	}
	ticks = append(ticks, plot.Tick{Value: first, Label: strconv.FormatFloat(first, 'g', 4, 64)}, plot.Tick{Value: end, Label: strconv.FormatFloat(end, 'g', 4, 64)})
	var lines []*plotter.Line
	lo, hi := math.Inf(1), 0.0
	for _, n := range names {
		d := r.degraded(n)
		if d == nil {
			continue
		}
		// Levels: healthy, each window (or the faults' average when the
		// rounds have no per-window rates), after.
		xys := plotter.XYs{{X: 0, Y: d.AcqPerSecWarm}, {X: first, Y: d.AcqPerSecWarm}}
		if per := perWindow(d, len(sched)); per != nil {
			for i, w := range sched {
				xys = append(xys, plotter.XY{X: w.StartMs / 1000, Y: per[i]}, plotter.XY{X: w.EndMs / 1000, Y: per[i]})
			}
		} else {
			xys = append(xys, plotter.XY{X: first, Y: d.AcqPerSecFault}, plotter.XY{X: last, Y: d.AcqPerSecFault})
		}
		xys = append(xys, plotter.XY{X: last, Y: d.AcqPerSecAfter}, plotter.XY{X: end, Y: d.AcqPerSecAfter})
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("degraded of %s: %w", n, err)
		}
		line.LineStyle = st.line(n)
		lines = append(lines, line)
		for _, xy := range xys {
			if xy.Y > 0 {
				lo, hi = math.Min(lo, xy.Y), math.Max(hi, xy.Y)
			}
		}
	}
	if hi == 0 {
		lo, hi = 1, 1
	}
	// A level of 0 sits on the axis, below the lowest one measured.
	lo /= 1.5
	for _, l := range lines {
		for i := range l.XYs {
			l.XYs[i].Y = math.Max(l.XYs[i].Y, lo)
		}
		p.Add(l)
	}
	p.X.Min, p.X.Max = 0, end
	p.X.Tick.Marker = ticks
	// Room above the highest level for the windows' labels.
	logAxis(&p.Y, lo, hi*3)
	return &panel{p: p, wide: true}, nil
}

// perWindow is d's median acquisitions/s in each of n windows over its
// rounds, or nil when no round has them.
func perWindow(d *DegradedResult, n int) []float64 {
	var per [][]float64
	for _, f := range d.Rounds {
		if len(f.PerWindow) == n {
			per = append(per, f.PerWindow)
		}
	}
	if len(per) == 0 {
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		xs := make([]float64, len(per))
		for j, p := range per {
			xs[j] = p[i]
		}
		out[i] = median(xs)
	}
	return out
}

// band is a shaded span of x, the full height of the panel, labelled at
// its top.
type band struct {
	x0, x1 float64
	label  string
	fill   color.Color
}

// bands draw under the data of a panel.
type bands []band

func (bs *bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := draw.TextStyle{Color: rgb(0x333333), Font: sans(9, font.WeightNormal),
		XAlign: draw.XCenter, YAlign: draw.YTop, Handler: p.TextHandler}
	for _, b := range *bs {
		x0, x1 := trX(b.x0), trX(b.x1)
		c.FillPolygon(b.fill, c.ClipPolygonX([]vg.Point{
			{X: x0, Y: c.Min.Y}, {X: x0, Y: c.Max.Y}, {X: x1, Y: c.Max.Y}, {X: x1, Y: c.Min.Y},
		}))
		c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: c.Max.Y - vg.Points(4)}, b.label)
	}
}

// logBars are bars on a log-scale value axis: each rises from the bottom
// of the panel, as a log scale has no zero. The panel sets the axes'
// ranges.
type logBars struct {
	xys   plotter.XYs // centre of the bar (x units) and its value
	none  []float64   // centres of bars with no value: marked "none"
	width float64     // in x units
	color color.Color
}

func (b *logBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, v := range b.xys {
		x0, x1, y := trX(v.X-b.width/2), trX(v.X+b.width/2), trY(v.Y)
		c.FillPolygon(b.color, c.ClipPolygonXY([]vg.Point{
			{X: x0, Y: c.Min.Y}, {X: x0, Y: y}, {X: x1, Y: y}, {X: x1, Y: c.Min.Y},
		}))
	}
	sty := draw.TextStyle{Color: b.color, Font: sans(8, font.WeightNormal), Rotation: math.Pi / 2,
		XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: p.TextHandler}
	for _, x := range b.none {
		c.FillText(sty, vg.Point{X: trX(x), Y: c.Min.Y + vg.Points(3)}, "none")
	}
}
