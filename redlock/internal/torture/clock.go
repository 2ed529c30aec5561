package torture

import (
	"context"
	"time"
)

// ClockStep is a jump of the wall clock against the monotonic clock, seen
// by the torture process. Redis expires keys by the wall clock (gettimeofday),
// so a forward step of the masters' host expires every key early by the
// step: a lock whose validity Volley measured on the monotonic clock can
// then be taken by another client before it ends. Redlock assumes clocks
// that drift boundedly, never one that jumps; a step is the environment
// breaking that assumption, which the report names next to any violation
// it may explain (all masters and the clients share one host here).
type ClockStep struct {
	At   time.Duration `json:"at_ns"`   // run offset when it was seen
	Step time.Duration `json:"step_ns"` // wall advance minus monotonic advance
}

// minClockStep is the smallest wall-clock jump worth reporting: well above
// the sampling noise, well below the drift allowance of any TTL the torture
// uses.
const minClockStep = 2 * time.Millisecond

// watchClock samples the wall and monotonic clocks every few milliseconds
// until ctx ends and records every divergence beyond minClockStep.
func (r *run) watchClock(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	prev := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		step := now.Round(0).Sub(prev.Round(0)) - now.Sub(prev)
		if step >= minClockStep || step <= -minClockStep {
			at := now.Sub(r.epoch)
			r.mu.Lock()
			r.clockSteps = append(r.clockSteps, ClockStep{At: at, Step: step})
			r.mu.Unlock()
			r.logf("wall clock stepped by %v (Redis expires keys by the wall clock)", step)
		}
		prev = now
	}
}
