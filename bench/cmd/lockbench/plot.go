package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// palette gives each contender a fixed colour, in Report.Contenders order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"}

// Layout of the plot: two panels side by side and a legend below.
const (
	svgW, svgH      = 1100, 600
	panelW, panelH  = 430, 330
	panelTop        = 70
	leftPanelX      = 90
	rightPanelX     = 620
	legendTop       = panelTop + panelH + 70
	tickLen         = 5
	svgFont         = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""
	titleFontSize   = 15
	labelFontSize   = 13
	tickFontSize    = 11
	legendFontSize  = 12
	defaultGridTint = "#e6e6e6"
)

// logAxis maps [lo, hi] (both > 0) to [0, length] on a log scale.
type logAxis struct{ lo, hi, length float64 }

func (a logAxis) pos(v float64) float64 {
	v = math.Min(math.Max(v, a.lo), a.hi)
	return (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo)) * a.length
}

// decades returns lo and hi widened to powers of ten.
func decades(lo, hi float64) (float64, float64) {
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

// logTicks returns 1, 2, 5 x 10^k ticks within [lo, hi].
func logTicks(lo, hi float64) []float64 {
	var t []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo*0.999 && v <= hi*1.001 {
				t = append(t, v)
			}
		}
	}
	return t
}

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

// writeSVG draws the latency CDF of each contender and its throughput
// against the goroutine count.
func writeSVG(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s>`+"\n", svgW, svgH, svgW, svgH, svgFont)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="17" font-weight="bold" text-anchor="middle">%s</text>`+"\n", svgW/2,
		html.EscapeString(fmt.Sprintf("lockbench: %d %s masters, %s, GOMAXPROCS=%d, median of %d rounds", len(r.Masters.Addrs), r.Masters.Kind, r.GoVersion, r.GOMAXPROCS, r.Config.Rounds)))
	color := map[string]string{}
	for i, c := range r.Contenders {
		color[c.Name] = palette[i%len(palette)]
	}
	cdfPanel(&b, r, color)
	throughputPanel(&b, r, color)
	// Legend.
	x := float64(leftPanelX)
	for _, c := range r.Contenders {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", x, legendTop, x+24, legendTop, color[c.Name])
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="%d" dominant-baseline="middle">%s</text>`+"\n", x+30, legendTop, legendFontSize, html.EscapeString(c.Name))
		x += 30 + float64(len(c.Name))*7.5 + 30
	}
	y := legendTop + 22
	for _, c := range r.Contenders {
		if c.Note == "" {
			continue
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="%d" fill="#444">%s: %s</text>`+"\n", leftPanelX, y, tickFontSize, html.EscapeString(c.Name), html.EscapeString(c.Note))
		y += 15
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func panelFrame(b *strings.Builder, x0 int, title, xlabel, ylabel string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d" font-weight="bold" text-anchor="middle">%s</text>`+"\n", x0+panelW/2, panelTop-14, titleFontSize, html.EscapeString(title))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", x0, panelTop, panelW, panelH)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d" text-anchor="middle">%s</text>`+"\n", x0+panelW/2, panelTop+panelH+40, labelFontSize, html.EscapeString(xlabel))
	fmt.Fprintf(b, `<text transform="translate(%d,%d) rotate(-90)" font-size="%d" text-anchor="middle">%s</text>`+"\n", x0-55, panelTop+panelH/2, labelFontSize, html.EscapeString(ylabel))
}

func xTick(b *strings.Builder, x0 int, px float64, label string) {
	x := float64(x0) + px
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, panelTop, x, panelTop+panelH, defaultGridTint)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333"/>`+"\n", x, panelTop+panelH, x, panelTop+panelH+tickLen)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="%d" text-anchor="middle">%s</text>`+"\n", x, panelTop+panelH+18, tickFontSize, label)
}

func yTick(b *strings.Builder, x0 int, py float64, label string) {
	y := float64(panelTop+panelH) - py
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", x0, y, x0+panelW, y, defaultGridTint)
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", x0-tickLen, y, x0, y)
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="%d" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", x0-8, y, tickFontSize, label)
}

func cdfPanel(b *strings.Builder, r *Report, color map[string]string) {
	panelFrame(b, leftPanelX, "Lock+Unlock latency CDF (1 goroutine)", "latency (ms, log scale)", "fraction of operations")
	lo, hi := math.Inf(1), 0.0
	for _, l := range r.Latency {
		for _, p := range l.CDF {
			if p[0] > 0 {
				lo, hi = math.Min(lo, p[0]), math.Max(hi, p[0])
			}
		}
	}
	if hi == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#888">latency not measured</text>`+"\n", leftPanelX+panelW/2, panelTop+panelH/2)
		return
	}
	lo, hi = decades(lo, hi)
	ax := logAxis{lo, hi, panelW}
	for _, t := range logTicks(lo, hi) {
		xTick(b, leftPanelX, ax.pos(t), num(t))
	}
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 0.9, 1} {
		yTick(b, leftPanelX, q*panelH, strconv.FormatFloat(q, 'g', 3, 64))
	}
	for _, l := range r.Latency {
		var pts []string
		for _, p := range l.CDF {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", float64(leftPanelX)+ax.pos(p[0]), float64(panelTop+panelH)-p[1]*panelH))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s p50 %.3fms p99 %.3fms</title></polyline>`+"\n",
			color[l.Name], strings.Join(pts, " "), html.EscapeString(l.Name), l.P50, l.P99)
	}
}

func throughputPanel(b *strings.Builder, r *Report, color map[string]string) {
	panelFrame(b, rightPanelX, "Lock+Unlock throughput, distinct keys", "goroutines (log scale)", "operations per second (log scale)")
	if len(r.Throughput) == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#888">throughput not measured</text>`+"\n", rightPanelX+panelW/2, panelTop+panelH/2)
		return
	}
	gLo, gHi := math.Inf(1), 0.0
	oLo, oHi := math.Inf(1), 0.0
	for _, t := range r.Throughput {
		g := float64(t.Goroutines)
		gLo, gHi = math.Min(gLo, g), math.Max(gHi, g)
		if t.OpsPerSec > 0 {
			oLo, oHi = math.Min(oLo, t.OpsPerSec), math.Max(oHi, t.OpsPerSec)
		}
	}
	if gHi <= gLo {
		gLo, gHi = gLo/2, gHi*2
	}
	// A margin of a quarter of the span on each side of the goroutine axis.
	span := math.Log10(gHi) - math.Log10(gLo)
	gLo, gHi = gLo/math.Pow(10, span/12), gHi*math.Pow(10, span/12)
	gx := logAxis{gLo, gHi, panelW}
	oLo, oHi = decades(oLo, oHi)
	oy := logAxis{oLo, oHi, panelH}
	for _, g := range r.Config.Goroutines {
		xTick(b, rightPanelX, gx.pos(float64(g)), strconv.Itoa(g))
	}
	for _, t := range logTicks(oLo, oHi) {
		yTick(b, rightPanelX, oy.pos(t), num(t))
	}
	for _, c := range r.Contenders {
		var pts []string
		for _, g := range r.Config.Goroutines {
			t := r.throughput(c.Name, g)
			if t == nil || t.OpsPerSec <= 0 {
				continue
			}
			x, y := float64(rightPanelX)+gx.pos(float64(g)), float64(panelTop+panelH)-oy.pos(t.OpsPerSec)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s G=%d: %.0f ops/s</title></circle>`+"\n", x, y, color[c.Name], html.EscapeString(c.Name), g, t.OpsPerSec)
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color[c.Name], strings.Join(pts, " "))
	}
}
