package torture

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Interval is one holder's time with a lock, as offsets on the run's
// monotonic clock.
type Interval struct {
	Key    string        `json:"key"`
	Holder string        `json:"holder"` // client/goroutine#sequence
	Start  time.Duration `json:"start"`  // Lock returned
	End    time.Duration `json:"end"`    // min(Unlock called, Until)
	Until  time.Duration `json:"until"`  // the validity's end (after extensions)
	// Unlock is when Unlock was called, or -1 if the holder let the lock
	// expire; UnlockResult is what Unlock returned.
	Unlock       time.Duration `json:"unlock"`
	UnlockResult string        `json:"unlock_result,omitempty"`
	// Votes is each master's answer to the acquisition (and the latest
	// extension), when the Locker can tell (see Held.Votes).
	Votes string `json:"votes,omitempty"`
	// Fence is the holder's fencing token (Held.Fence), 0 without fencing.
	Fence uint64 `json:"fence,omitempty"`
	// Shared marks a read lock (Config.ReadShare): two shared intervals of
	// a key may overlap; a shared one and another may not.
	Shared bool `json:"shared,omitempty"`
	// Slot is which of a semaphore's permits the holder held (Config.Permits;
	// see Slotted): tokens are compared between holders of one slot.
	Slot int `json:"slot,omitempty"`
}

// Slotted is a Held that holds one of several slots of its key (a
// semaphore's permit): its fencing token need only exceed those of earlier
// holders of the same slot.
type Slotted interface {
	Slot() int
}

// FenceRegression is a holder of a key whose fencing token is not greater
// than that of an earlier holder of the key: Later acquired (Later.Start)
// after Earlier did, with Later.Fence <= Earlier.Fence. An Earlier that
// has left the checker's horizon is given with only its key and token.
type FenceRegression struct {
	Key     string   `json:"key"`
	Earlier Interval `json:"earlier"`
	Later   Interval `json:"later"`
}

// Violation is two overlapping intervals of one key: Second was acquired
// (Second.Start) while First was still held. For a key of several
// permits (see NewCountingChecker), Second is an interval during which
// Holders intervals of the key overlapped, more than its permits, and
// First one of the others.
type Violation struct {
	Key     string        `json:"key"`
	First   Interval      `json:"first"`
	Second  Interval      `json:"second"`
	Overlap time.Duration `json:"overlap"`
	Holders int           `json:"holders,omitempty"`
	Faults  []string      `json:"faults,omitempty"` // filled by the Report
}

// maxKeptViolations bounds the violations a Checker keeps in detail; it
// counts all of them.
const maxKeptViolations = 100

// Checker finds overlapping intervals of the same key (but for two read
// locks: see Interval.Shared), and fencing tokens
// that do not grow from one holder of a key to the next (in the order of
// Start, which for non-empty intervals of one key that do not overlap is
// the order of acquisition). It keeps, per key,
// the intervals that ended within its horizon of the latest one added: an
// interval lasts at most MaxTTL and is added right after it ends, so a
// horizon of MaxTTL plus a generous margin for slow recording sees every
// overlap. Safe for concurrent use.
type Checker struct {
	horizon time.Duration
	permits int // how many intervals of a key may overlap: 1 but for semaphores

	mu         sync.Mutex
	keys       map[string][]Interval
	latest     time.Duration // the largest End added
	violations []Violation
	count      int
	added      int
	empty      int
	late       int

	pruned      map[string]uint64 // per key, the largest token of the intervals let go
	fenced      int               // intervals with a token
	regressions []FenceRegression
	regressed   int
}

// NewChecker returns a Checker with the given horizon (see Checker).
func NewChecker(horizon time.Duration) *Checker { return NewCountingChecker(horizon, 1) }

// NewCountingChecker returns a Checker of keys that admit permits holders
// at once (semaphores): a violation is an interval during which more than
// permits intervals of its key overlap. Fencing tokens are checked as
// NewChecker's are, between intervals of the same key and slot
// (Interval.Slot).
func NewCountingChecker(horizon time.Duration, permits int) *Checker {
	return &Checker{horizon: horizon, permits: max(1, permits), keys: make(map[string][]Interval), pruned: make(map[string]uint64)}
}

// Add records a finished interval and returns how many earlier intervals
// of its key it overlaps (each is a violation). An empty interval (the
// validity had run out by the time Lock returned) holds nothing.
func (c *Checker) Add(iv Interval) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.added++
	if iv.End <= iv.Start {
		c.empty++
		return 0
	}
	if iv.End < c.latest-c.horizon/2 {
		c.late++ // recorded so late that an overlap could have been pruned
	}
	c.latest = max(c.latest, iv.End)
	slot := slotKey(iv)
	if iv.Fence != 0 {
		c.fenced++
		if top := c.pruned[slot]; top >= iv.Fence {
			c.regression(Interval{Key: iv.Key, Slot: iv.Slot, Holder: "(left the horizon)", Fence: top}, iv)
		}
	}
	found := 0
	var crowd []Interval // the intervals of the key that overlap iv (several permits)
	kept := c.keys[iv.Key][:0]
	for _, e := range c.keys[iv.Key] {
		if iv.Fence != 0 && e.Fence != 0 && e.Slot == iv.Slot {
			switch {
			case e.Start < iv.Start && e.Fence >= iv.Fence:
				c.regression(e, iv)
			case iv.Start < e.Start && iv.Fence >= e.Fence:
				c.regression(iv, e)
			}
		}
		if e.Start < iv.End && iv.Start < e.End && !(e.Shared && iv.Shared) {
			if c.permits > 1 {
				crowd = append(crowd, e)
			} else {
				found++
				first, second := e, iv
				if second.Start < first.Start {
					first, second = second, first
				}
				c.violation(Violation{
					Key: iv.Key, First: first, Second: second,
					Overlap: min(first.End, second.End) - second.Start,
				})
			}
		}
		if e.End >= c.latest-c.horizon {
			kept = append(kept, e)
		} else {
			c.pruned[slotKey(e)] = max(c.pruned[slotKey(e)], e.Fence)
		}
	}
	if most, at := mostAtOnce(iv, crowd); most > c.permits {
		found++
		c.violation(Violation{Key: iv.Key, First: at, Second: iv, Overlap: min(at.End, iv.End) - max(at.Start, iv.Start), Holders: most})
	}
	c.keys[iv.Key] = append(kept, iv)
	return found
}

// slotKey names iv's key and slot, whose tokens the checker compares.
func slotKey(iv Interval) string {
	if iv.Slot == 0 {
		return iv.Key
	}
	return iv.Key + "\x00" + strconv.Itoa(iv.Slot)
}

// violation counts v and keeps it if there is room.
func (c *Checker) violation(v Violation) {
	c.count++
	if len(c.violations) < maxKeptViolations {
		c.violations = append(c.violations, v)
	}
}

// mostAtOnce returns the most intervals that overlap at one moment of iv,
// iv included, among iv and crowd (each overlapping iv), and one of crowd
// present at that moment (the zero Interval when crowd is empty).
// Intervals are half-open: one that ends when another starts does not
// overlap it.
func mostAtOnce(iv Interval, crowd []Interval) (most int, at Interval) {
	type edge struct {
		t    time.Duration
		step int // +1 start, -1 end
		i    int
	}
	edges := make([]edge, 0, 2*len(crowd))
	for i, e := range crowd {
		edges = append(edges, edge{max(e.Start, iv.Start), 1, i}, edge{min(e.End, iv.End), -1, i})
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.step, b.step)) })
	most = 1
	n := 1
	for _, e := range edges {
		n += e.step
		if n > most {
			most, at = n, crowd[e.i]
		}
	}
	return most, at
}

// regression records that later's token does not exceed earlier's.
func (c *Checker) regression(earlier, later Interval) {
	c.regressed++
	if len(c.regressions) < maxKeptViolations {
		c.regressions = append(c.regressions, FenceRegression{Key: later.Key, Earlier: earlier, Later: later})
	}
}

// CheckerStats sums up what a Checker saw.
type CheckerStats struct {
	Intervals  int         `json:"intervals"`  // added
	Empty      int         `json:"empty"`      // validity gone before Lock returned
	Late       int         `json:"late"`       // recorded later than horizon/2
	Violations int         `json:"violations"` // all of them
	Details    []Violation `json:"details"`    // the first 100
	// Fenced counts the intervals that carried a fencing token;
	// FenceRegressions the tokens not greater than an earlier holder's,
	// FenceDetails the first 100 of them.
	Fenced           int               `json:"fenced"`
	FenceRegressions int               `json:"fence_regressions"`
	FenceDetails     []FenceRegression `json:"fence_details,omitempty"`
}

// Stats returns the counts and the first violations.
func (c *Checker) Stats() CheckerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CheckerStats{
		Intervals: c.added, Empty: c.empty, Late: c.late,
		Violations: c.count, Details: append([]Violation(nil), c.violations...),
		Fenced: c.fenced, FenceRegressions: c.regressed, FenceDetails: append([]FenceRegression(nil), c.regressions...),
	}
}
