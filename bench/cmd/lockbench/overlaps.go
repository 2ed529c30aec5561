package main

import "fmt"

// peers are the other libraries' contenders. lockbench measures them; it
// does not vouch for them. A peer's overlap is counted in its row and
// listed in the report (Report.PeerOverlaps, under the contenders); it
// does not fail the run, so that a peer's own bug cannot fail a run that
// measures Volley. rueidislock v1.0.79 deletes its keys before it cancels
// the lock's context, so a holder that watches the context can still
// overlap the next one: seen under make test-stress's CPU hogs. Any other
// contender's overlap (Volley's, a floor's, a test's deliberately broken
// lock) fails its mode with ErrOverlap.
var peers = map[string]bool{
	nameRedsyncGoredis:     true,
	nameRedsyncRedigo:      true,
	nameRedislock:          true,
	nameRueidislock:        true,
	nameRueidislockCluster: true,
	nameRedsyncCluster:     true,
}

// overlaps gathers one mode's overlaps. A Runner's mode makes one, adds
// every contender's count and returns err(). It is not safe for
// concurrent use.
type overlaps struct {
	report *Report
	bad    []string // the overlaps that fail the mode
}

// add notes n overlaps of the contender name, described as what (the
// contender and its setting). A count of 0 notes nothing.
func (o *overlaps) add(name string, n int, what string) {
	if n <= 0 {
		return
	}
	line := fmt.Sprintf("%s: %d overlaps", what, n)
	if peers[name] {
		o.report.PeerOverlaps = append(o.report.PeerOverlaps, line+" (a peer's: reported, not failing the run)")
		return
	}
	o.bad = append(o.bad, line)
}

// err returns ErrOverlap, wrapped with the overlaps that fail the mode,
// or nil when there are none.
func (o *overlaps) err() error {
	if len(o.bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%v)", ErrOverlap, o.bad)
}
