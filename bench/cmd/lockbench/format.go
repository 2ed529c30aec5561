package main

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Cell formats of the report's tables.

func f0(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }
func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func itoa(n int) string { return strconv.Itoa(n) }

// ratio formats a/b, or "-" when b is missing or zero.
func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "-"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "x"
}

// field returns get(b), or NaN when there is no baseline result b.
func field[T any](b *T, get func(*T) float64) float64 {
	if b == nil {
		return math.NaN()
	}
	return get(b)
}

// errNote is "N errors" when N > 0.
func errNote(n int) string { return countNote(n, "errors") }

// countNote is "N what" when N > 0, "" otherwise.
func countNote(n int, what string) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n) + " " + what
}

// oneLine is msg on one line, at most 160 characters.
func oneLine(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 160 {
		msg = msg[:160] + "..."
	}
	return msg
}

// costFigure formats one figure of an OpCost: "-" when not measured.
func costFigure(v float64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// measuredFigure is costFigure for a figure that is 0 when a report
// predates it and -1 when not measured: "-" for both.
func measuredFigure(v float64) string {
	if v <= 0 {
		return "-"
	}
	return costFigure(v)
}

// measuredRatio is ratio for two such figures: "-" unless both were
// measured.
func measuredRatio(a, b float64) string {
	if a <= 0 || !(b > 0) {
		return "-"
	}
	return ratio(a, b)
}

// dur formats float milliseconds as a Duration.
func dur(msec float64) time.Duration { return time.Duration(msec * float64(time.Millisecond)) }

// delays formats a skew profile's reply delays, in ms.
func delays(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = strconv.FormatFloat(ms(d), 'g', 3, 64)
	}
	return strings.Join(s, "/") + "ms"
}

// perMaster formats a count per master, "3/0/0/0/0"; "-" when not
// measured.
func perMaster(ns []int64) string {
	if ns == nil {
		return "-"
	}
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, "/")
}
