package main

import "fmt"

// goal is one of Volley's performance goals as data: its wording, how it
// is measured, and the verdict's bound. Most goals are a ratio of two
// figures (figures, bound, want and figure); the others have a check.
type goal struct {
	text string // the goal, as the report states it

	// figures returns the two figures the goal compares, v (Volley's)
	// and ref, and any more the Figure shows after their ratio; ok is false
	// when either was not measured.
	figures func(r *Report) (f goalFigures, ok bool)
	bound   bound
	want    float64
	// figure formats the Figure from v, ref, their ratio (as bound takes
	// it) and the more figures, in that order.
	figure string

	// check, for a goal that is not a ratio, returns the verdict and the
	// Figure; ok is false when not measured.
	check func(r *Report) (met bool, figure string, ok bool)

	// onFake, when set, is the Figure on the in-process fake masters,
	// where the goal cannot be measured, and says why.
	onFake string
}

// goalFigures are the figures a ratio goal compares.
type goalFigures struct {
	v, ref float64
	more   []any
}

// bound is how a ratio must compare with a goal's want.
type bound int

const (
	atMost  bound = iota // v/ref <= want
	atLeast              // v/ref >= want
	below                // v/ref < want
	fewer                // ref/v >= want: v want times fewer
)

// ratio is the ratio the bound compares; ok is false when its divisor is
// not positive or the dividend negative (a figure not measured).
func (b bound) ratio(f goalFigures) (x float64, ok bool) {
	num, den := f.v, f.ref
	if b == fewer {
		num, den = den, num
	}
	return num / den, den > 0 && num >= 0
}

// holds reports whether x keeps the bound with want.
func (b bound) holds(x, want float64) bool {
	switch b {
	case atMost:
		return x <= want
	case below:
		return x < want
	}
	return x >= want
}

// measure returns the goal's verdict and Figure; ok is false when it was
// not measured.
func (g goal) measure(r *Report) (met bool, figure string, ok bool) {
	if g.check != nil {
		return g.check(r)
	}
	f, ok := g.figures(r)
	if !ok {
		return false, "", false
	}
	x, ok := g.bound.ratio(f)
	if !ok {
		return false, "", false
	}
	return g.bound.holds(x, g.want), fmt.Sprintf(g.figure, append([]any{f.v, f.ref, x}, f.more...)...), true
}

// evaluate checks the goal against r.
func (g goal) evaluate(r *Report) Target {
	met, figure, ok := g.measure(r)
	switch {
	case !ok:
		return Target{Goal: g.text, Figure: "not measured"}
	case g.onFake != "" && r.Masters.Kind == kindFake:
		return Target{Goal: g.text, Figure: "not measured: " + g.onFake}
	}
	return Target{Goal: g.text, Figure: figure, Met: met, Measured: true}
}

// evaluateTargets checks Volley's goals against the figures of the run.
func evaluateTargets(r *Report) []Target {
	gs := volleyGoals(r)
	ts := make([]Target, len(gs))
	for i, g := range gs {
		ts[i] = g.evaluate(r)
	}
	return ts
}
