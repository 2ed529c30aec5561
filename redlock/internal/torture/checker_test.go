package torture

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func iv(key, holder string, start, end int) Interval {
	return Interval{Key: key, Holder: holder, Start: ms(start), End: ms(end), Until: ms(end), Unlock: -1}
}

// TestCountingCheckerSynthetic: with two permits, a violation is three
// holders at one moment, not three that overlap in pairs.
func TestCountingCheckerSynthetic(t *testing.T) {
	tests := []struct {
		name       string
		intervals  []Interval
		violations int
		holders    int
	}{
		{"two at once", []Interval{iv("k", "a", 0, 10), iv("k", "b", 5, 20)}, 0, 0},
		{"three in a chain", []Interval{iv("k", "a", 0, 10), iv("k", "b", 5, 15), iv("k", "c", 12, 20)}, 0, 0},
		{"three at once", []Interval{iv("k", "a", 0, 10), iv("k", "b", 5, 15), iv("k", "c", 8, 20)}, 1, 3},
		{"three at once, out of order", []Interval{iv("k", "c", 8, 20), iv("k", "a", 0, 10), iv("k", "b", 5, 15)}, 1, 3},
		{"back to back", []Interval{iv("k", "a", 0, 10), iv("k", "b", 0, 10), iv("k", "c", 10, 20)}, 0, 0},
		{"four at once", []Interval{iv("k", "a", 0, 10), iv("k", "b", 1, 10), iv("k", "c", 2, 10), iv("k", "d", 3, 10)}, 2, 4},
		{"other keys", []Interval{iv("k1", "a", 0, 10), iv("k1", "b", 1, 10), iv("k2", "c", 2, 10)}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCountingChecker(time.Minute, 2)
			for _, v := range tt.intervals {
				c.Add(v)
			}
			st := c.Stats()
			require.Equal(t, tt.violations, st.Violations)
			if tt.violations > 0 {
				assert.Equal(t, tt.holders, st.Details[len(st.Details)-1].Holders)
			}
		})
	}
}

// shared makes v a read lock's interval.
func shared(v Interval) Interval {
	v.Shared = true
	return v
}

func TestCheckerSynthetic(t *testing.T) {
	tests := []struct {
		name       string
		intervals  []Interval
		violations int
	}{
		{"disjoint", []Interval{iv("k", "a", 0, 10), iv("k", "b", 20, 30)}, 0},
		{"back to back", []Interval{iv("k", "a", 0, 10), iv("k", "b", 10, 20)}, 0},
		{"acquired inside", []Interval{iv("k", "a", 0, 10), iv("k", "b", 5, 20)}, 1},
		{"recorded out of order", []Interval{iv("k", "b", 5, 20), iv("k", "a", 0, 10)}, 1},
		{"nested", []Interval{iv("k", "a", 0, 100), iv("k", "b", 10, 20)}, 1},
		{"same start", []Interval{iv("k", "a", 0, 10), iv("k", "b", 0, 10)}, 1},
		{"other keys", []Interval{iv("k1", "a", 0, 10), iv("k2", "b", 5, 20)}, 0},
		{"empty interval holds nothing", []Interval{iv("k", "a", 0, 10), iv("k", "b", 5, 5), iv("k", "c", 8, 6)}, 0},
		{"three at once", []Interval{iv("k", "a", 0, 10), iv("k", "b", 1, 10), iv("k", "c", 2, 10)}, 3},
		{"two readers", []Interval{shared(iv("k", "a", 0, 10)), shared(iv("k", "b", 5, 20))}, 0},
		{"a reader and a writer", []Interval{shared(iv("k", "a", 0, 10)), iv("k", "b", 5, 20)}, 1},
		{"a writer and a reader", []Interval{iv("k", "a", 0, 10), shared(iv("k", "b", 5, 20))}, 1},
		{"after expiry", []Interval{iv("k", "a", 0, 500), iv("k", "b", 500, 900), iv("k", "c", 901, 1000)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChecker(time.Minute)
			for _, i := range tt.intervals {
				c.Add(i)
			}
			st := c.Stats()
			require.Equal(t, tt.violations, st.Violations)
			require.Len(t, st.Details, tt.violations)
			for _, v := range st.Details {
				assert.LessOrEqual(t, v.First.Start, v.Second.Start)
				assert.Positive(t, v.Overlap)
			}
		})
	}
}

// TestCheckerHolderEndsAtDeadline: a holder that works past its validity
// is not in conflict with the next holder, who came after the deadline:
// its interval ends at Until, not when it called Unlock.
func TestCheckerHolderEndsAtDeadline(t *testing.T) {
	c := NewChecker(time.Minute)
	long := Interval{Key: "k", Holder: "slow", Start: 0, Until: ms(500), Unlock: ms(900)}
	long.End = min(long.Until, long.Unlock)
	c.Add(long)
	c.Add(iv("k", "next", 501, 800))
	require.Zero(t, c.Stats().Violations)
	c.Add(iv("k", "early", 499, 501))
	require.Equal(t, 1, c.Stats().Violations)
}

func TestCheckerPrunesAndCountsLate(t *testing.T) {
	c := NewChecker(ms(100))
	for i := range 1000 {
		c.Add(iv("k", "a", i*10, i*10+5))
	}
	c.mu.Lock()
	kept := len(c.keys["k"])
	c.mu.Unlock()
	assert.Less(t, kept, 20, "old intervals are not pruned")
	c.Add(iv("k", "late", 0, 5))
	st := c.Stats()
	assert.Equal(t, 1, st.Late)
	assert.Zero(t, st.Violations)
}

func fenced(key, holder string, start, end int, fence uint64) Interval {
	i := iv(key, holder, start, end)
	i.Fence = fence
	return i
}

func TestCheckerFencing(t *testing.T) {
	tests := []struct {
		name        string
		intervals   []Interval
		regressions int
	}{
		{"growing", []Interval{fenced("k", "a", 0, 10, 1), fenced("k", "b", 20, 30, 2), fenced("k", "c", 40, 50, 7)}, 0},
		{"smaller", []Interval{fenced("k", "a", 0, 10, 5), fenced("k", "b", 20, 30, 4)}, 1},
		{"equal", []Interval{fenced("k", "a", 0, 10, 5), fenced("k", "b", 20, 30, 5)}, 1},
		{"recorded out of order", []Interval{fenced("k", "b", 20, 30, 4), fenced("k", "a", 0, 10, 5)}, 1},
		{"other keys", []Interval{fenced("k1", "a", 0, 10, 5), fenced("k2", "b", 20, 30, 4)}, 0},
		{"not fenced", []Interval{fenced("k", "a", 0, 10, 5), iv("k", "b", 20, 30)}, 0},
		{"empty interval holds nothing", []Interval{fenced("k", "a", 0, 10, 5), fenced("k", "b", 20, 20, 1)}, 0},
		{"smaller than all earlier", []Interval{fenced("k", "a", 0, 10, 5), fenced("k", "b", 20, 30, 6), fenced("k", "c", 40, 50, 3)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChecker(time.Minute)
			for _, i := range tt.intervals {
				c.Add(i)
			}
			st := c.Stats()
			require.Equal(t, tt.regressions, st.FenceRegressions)
			for _, r := range st.FenceDetails {
				assert.Less(t, r.Earlier.Start, r.Later.Start)
				assert.GreaterOrEqual(t, r.Earlier.Fence, r.Later.Fence)
			}
		})
	}
}

// TestCountingCheckerFencesPerSlot: with permits, a holder's token is
// compared with those of earlier holders of the same permit (slot) only,
// also beyond the horizon; holders of other permits may have any token.
func TestCountingCheckerFencesPerSlot(t *testing.T) {
	slotted := func(holder string, start, end, slot int, fence uint64) Interval {
		i := fenced("k", holder, start, end, fence)
		i.Slot = slot
		return i
	}
	c := NewCountingChecker(ms(100), 2)
	c.Add(slotted("a", 0, 10, 0, 50))
	c.Add(slotted("b", 0, 10, 1, 10))  // another permit, lower: fine
	c.Add(slotted("c", 20, 30, 1, 20)) // above b
	c.Add(slotted("d", 20, 30, 0, 40)) // below a, same permit
	require.Equal(t, 1, c.Stats().FenceRegressions)
	r := c.Stats().FenceDetails[0]
	assert.Equal(t, "a", r.Earlier.Holder)
	assert.Equal(t, "d", r.Later.Holder)
	c.Add(slotted("x", 3000, 3005, 1, 100)) // the rest leave the horizon
	c.Add(slotted("e", 4000, 4005, 1, 30))  // below x: a regression
	c.Add(slotted("f", 4010, 4015, 0, 45))  // below a, let go: a regression
	c.Add(slotted("g", 4020, 4025, 0, 60))  // above every holder of permit 0
	st := c.Stats()
	assert.Equal(t, 3, st.FenceRegressions)
	assert.Zero(t, st.Violations, "never more than 2 at once")
}

// TestCheckerFencingBeyondHorizon: a holder is compared with every earlier
// one, also those the checker let go.
func TestCheckerFencingBeyondHorizon(t *testing.T) {
	c := NewChecker(ms(100))
	for i := range 100 {
		c.Add(fenced("k", "a", i*10, i*10+5, uint64(1000+i)))
	}
	c.Add(fenced("k", "x", 3000, 3005, 5000)) // the first 100 leave the horizon
	c.mu.Lock()
	kept := len(c.keys["k"])
	c.mu.Unlock()
	require.Equal(t, 1, kept)
	c.Add(fenced("k", "b", 4000, 4005, 1050))
	st := c.Stats()
	require.Equal(t, 2, st.FenceRegressions, "below x, and below the largest of those let go")
	assert.Equal(t, "(left the horizon)", st.FenceDetails[0].Earlier.Holder)
	assert.Equal(t, uint64(1099), st.FenceDetails[0].Earlier.Fence)
	assert.Equal(t, 102, st.Fenced)
}
