package redlock

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/internal/scripts"
)

// Turns: how one key passes between the Clients of a fleet.
//
// A release wakes the key's longest waiter in another Client (see
// waiters.go). On one machine or many, waking a process and its attempt
// take a millisecond or more (10-15 ms with 64 processes on two cores),
// and a Client that releases a key in a loop takes it back long before
// that: the woken waiter's attempt then fails, and a fleet spends its
// masters' commands and its CPU on wake-ups that grant nothing (#53).
// So a Client keeps its turn while the others have not waited long:
//
//   - Lock.Unlock of a one-key lock sends a cutoff with the release
//     (scripts.Release): the release wakes the longest waiter only if it
//     joined the waiters at or before the cutoff, that is, has waited
//     Config.HandOffAfter; else it wakes nobody (answer 3). While this
//     Client's run of holds of the key (re-takes that followed its own
//     releases within runGap, and hand-overs between its goroutines) is
//     younger than minRun, the cutoff is 0: nobody is woken, so a run,
//     once its turn came, lasts long enough to pay for the hand-off that
//     began it.
//   - A release that woke nobody is followed by a wake (scripts.Wake:
//     the longest waiter is woken if the key is still free) after
//     relockWithin (runGap for a Client that loops on the key), unless a
//     Lock of this Client began first (turns.begin); a waiter of this
//     Client itself is woken at once.
//   - A release that woke the longest waiter makes this Client's next
//     Lock of the key (within scripts.NamedMs, while the woken one has the
//     key to itself) wait from its first attempt (call.yield): it enrolls
//     behind the waiter it woke instead of taking the key back.
//
// So a waiter of another Client waits about HandOffAfter plus one
// minRun and one hand-off for each Client whose turn came before its own,
// and a fleet's throughput is that of a Client looping alone for most of
// the time. Safety does not depend on any of it: every take is an
// ordinary attempt, every release is token-checked.
//
// A turn's state lives in the Client per key only while it matters: from
// a release that left the waiters asleep until the wake is sent or the
// key taken again, and from a release that woke a waiter until this
// Client's next Lock of the key (or NamedMs). Entries are recycled, so a
// Client looping on a key allocates nothing.
const (
	// relockWithin is how long a release that woke nobody waits for its
	// Client to take the key again before it wakes the longest waiter.
	// A Client in a loop (its Lock of the key began before the wake of
	// its previous release came due) waits runGap instead: a timer armed
	// at each release of a loop and stopped by the next take makes the
	// process's own timers fire up to a millisecond late (Go's poller
	// sleeps whole milliseconds, and wakes for a stopped timer), which
	// made a 1 ms hold last 1.9 ms in a fleet of looping processes.
	relockWithin = time.Millisecond
	// runGap is how soon after this Client's release a take continues
	// its run.
	runGap = 20 * time.Millisecond
	// minRun is how long a run lasts before its releases wake a waiter.
	// A hand-off costs a fleet of 64 processes on one key about 70
	// commands (the woken Client's waiting attempt, the releaser's
	// attempt that enrolls it behind, the wake) and 10-15 ms of its
	// time; 12 ms against 8 ms cut commands per grant by a sixth at a 1
	// ms hold and raised grants/s a tenth, and the wait p99 by 15-30%
	// (lockbench -mode fleet, docs/benchmarks.md, stop 70).
	minRun = 12 * time.Millisecond
)

// Set by tests only, each the broken variant that a test must catch:
// neverHandOff makes every cutoff 0 (no release wakes a waiter of another
// Client while this one loops: TestLongWaiterGetsItsTurn), noYield lets
// the Lock after a release that woke a waiter take the key back at once
// (TestReleaserYieldsToTheWokenWaiter), noLaterWake drops the wake
// after a release that woke nobody (TestReleaseThatWokeNobodyWakesLater),
// and noLoopDelay sends a looping Client's wake after relockWithin too
// (TestLoopingReleaseWakesAfterRunGap).
var neverHandOff, noYield, noLaterWake, noLoopDelay bool

// turn is a Client's state of one key between a release and what follows
// it. Guarded by turns.mu.
type turn struct {
	c   *Client
	key string
	// timer sends the wake (armed) or drops the entry (a yield unused
	// after NamedMs); made once per entry, reused.
	timer *time.Timer
	armed bool  // a wake is due when the timer fires
	tok   token // the released token, whose id the wake publishes
	// run is when the released lock's run began (unix ns); released,
	// when the release was.
	run, released int64
	// yield: the release woke a waiter; the next Lock of the key waits.
	yield bool
	// looped: a Lock of the key began while the wake was due (begin).
	looped bool
}

// turns holds a Client's turn entries by key.
type turns struct {
	// n is len(m), read without mu: a Lock of a key that no release of
	// this Client left a turn for costs one atomic load.
	n    atomic.Int32
	mu   sync.Mutex
	m    map[string]*turn
	free []*turn
}

// turnCutoff returns the cutoff for the release of a one-key lock whose
// run began at run, appended to dst; nil when turns are off.
func (c *Client) turnCutoff(dst []byte, run int64) []byte {
	if c.cfg.HandOffAfter < 0 {
		return nil
	}
	now := time.Now()
	cut := int64(0) // a young run wakes nobody
	if now.UnixNano()-run >= int64(minRun) && !neverHandOff {
		cut = now.Add(-c.cfg.HandOffAfter).UnixMilli()
	}
	return strconv.AppendInt(dst, cut, 10)
}

// released records what the release of key (token tok, of a run that
// began at run; looped: see taken) did: woke > 0 masters woke the longest
// waiter, so the next Lock of key yields; else asleep > 0 left the
// waiters asleep (Unlock woke a waiter of this Client), so the wake is
// sent after relockWithin (runGap when looped) unless the key is taken
// again first.
func (ts *turns) released(c *Client, key string, tok *token, run int64, looped bool, woke, asleep int) {
	if woke == 0 && asleep == 0 {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if c.closed.Load() {
		return
	}
	t := ts.m[key]
	if t == nil {
		t = ts.newLocked(c, key)
	}
	if woke > 0 {
		t.yield, t.armed = true, false
		t.timer.Reset(scripts.NamedMs * time.Millisecond)
		return
	}
	t.armed, t.yield = !noLaterWake, false
	t.tok, t.run, t.released = *tok, run, time.Now().UnixNano()
	if looped && !noLoopDelay {
		t.timer.Reset(runGap)
	} else {
		t.timer.Reset(relockWithin)
	}
}

// newLocked returns a recycled or new entry for key, in the map (mu held).
func (ts *turns) newLocked(c *Client, key string) *turn {
	var t *turn
	if n := len(ts.free); n > 0 {
		t, ts.free = ts.free[n-1], ts.free[:n-1]
	} else {
		t = &turn{c: c}
		t.timer = time.AfterFunc(time.Hour, t.fire)
		t.timer.Stop()
	}
	if ts.m == nil {
		ts.m = make(map[string]*turn)
	}
	t.key = key
	ts.m[key] = t
	ts.n.Store(int32(len(ts.m)))
	return t
}

// dropLocked takes t out of the map and keeps it for reuse (mu held).
func (ts *turns) dropLocked(t *turn) {
	t.timer.Stop()
	delete(ts.m, t.key)
	ts.n.Store(int32(len(ts.m)))
	// Field by field: c and timer are written once, when t is made (fire
	// reads c before it takes mu).
	t.key, t.armed, t.tok, t.run, t.released, t.yield, t.looped = "", false, token{}, 0, 0, false, false
	ts.free = append(ts.free, t)
}

// begin is called as a Lock of key begins. It reports whether the Lock
// waits from its first attempt: this Client's last release of key woke
// another's waiter. Else a wake due is not sent: this Lock attempts now
// (or a waiter of this Client that the release woke does), and the entry
// stays for runGap, for taken.
func (ts *turns) begin(key string) (yield bool) {
	if ts.n.Load() == 0 {
		return false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.m[key]
	switch {
	case t == nil:
		return false
	case t.yield:
		ts.dropLocked(t)
		return !noYield
	case t.armed:
		t.armed, t.looped = false, true
		t.timer.Reset(runGap)
	}
	return false
}

// taken is called when a Lock of key was granted by the masters: it
// returns when the lock's run began, the released lock's run if this take
// follows that release within runGap, else now; and whether the Lock
// began while that release's wake was due (looped), which its own release
// passes on to released.
func (ts *turns) taken(key string) (run int64, looped bool) {
	now := time.Now().UnixNano()
	if ts.n.Load() == 0 {
		return now, false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.m[key]
	if t == nil || t.yield {
		return now, false
	}
	run, looped = now, t.looped
	if now-t.released < int64(runGap) {
		run = t.run
	}
	ts.dropLocked(t)
	return run, looped
}

// fire is t's timer: it sends the wake that is due, or drops an unused
// yield.
func (t *turn) fire() {
	ts := &t.c.turns
	ts.mu.Lock()
	if ts.m[t.key] != t {
		ts.mu.Unlock()
		return // dropped, or reused for another key, meanwhile
	}
	wake, key, tok := t.armed, t.key, t.tok
	ts.dropLocked(t)
	ts.mu.Unlock()
	if !wake || t.c.closed.Load() {
		return
	}
	o := t.c.getOp()
	o.encode(&cmdWake, args{key: key, tok: &tok})
	o.sendForget(false)
	t.c.putOp(o)
}

// close stops every entry's timer (Client.Close).
func (ts *turns) close() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.m {
		t.timer.Stop()
	}
	clear(ts.m)
	ts.n.Store(0)
}

// wakeOne wakes this Client's longest waiter of key, if it has one: a
// release that woke nobody on the masters.
func (room *waitRoom) wakeOne(key string) {
	if room.waiting.Load() == 0 {
		return
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	if kw := room.keys[key]; kw.waited() {
		room.wakeLocked(kw)
	}
}
