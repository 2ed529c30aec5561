package redlock

import (
	"math/rand/v2"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// A waiting Lock of one key whose wait ran out without a wake-up looks
// before it attempts: one MGET of the key and its name (see
// scripts.NamedSuffix), instead of the waiting script (scripts.LockWait:
// five commands a master, the enrolment renewed). The look goes to one
// master, drawn at random among those that answered the last attempt
// "taken" (so one that was up, answered in time and held the holder's
// key; when copies expire within RetryDelay, one of those that expire
// first); only when none did does it go to every master (see lookAt).
// It attempts when the look shows the key free for it (not held, and
// named for nobody else), or cannot tell; otherwise it waits again. A
// waiter behind the key's longest is not the one a release wakes, so
// most of its waits end without a wake-up: in a fleet on one key these
// looks, not attempts, are what its waiters send, and one master's view
// is enough to tell a key that is still held (a release runs on every
// master). Looking at one
// master instead of all five cut a fleet's commands per grant by about
// 5% (64 processes on one key, hold 1 ms: docs/benchmarks.md, stop 70).
// A lost wake-up still costs at most RetryDelay: the look after it sees
// the key free. A look that sees a key held on a minority only (a failed
// attempt's vote on its way out) costs one more wait.
//
// A look that finds the key free is confirmed by another at the same
// master, confirmLookAfter later, before the waiter attempts. A Client
// that takes the key again right after its release (a fleet's turn, see
// turns.go) leaves it free for well under a millisecond, and a look that fell in that gap led to
// an attempt that lost to the taker, or split the votes with it: in a
// fleet of 64 processes on one key with a hold of 1 ms, 83% of the
// attempts that followed a free look failed (lockbench -mode fleet, a
// counting build). The second look finds the key taken again, and costs
// one command a master where the attempt cost five.

// confirmLookAfter is how long after a look that found the key free the
// waiter looks again (see above): longer than a turn's gap, and than the
// millisecond after which a release that woke nobody wakes the longest
// waiter (relockWithin), whose name the second look then sees.
const confirmLookAfter = 2 * time.Millisecond

// fitsPeek: MGET's two values, each a bulk string or nil.
func fitsPeek(vals []resp.Value) bool {
	return isErrorReply(vals) || len(vals) == 3 && vals[0].Type == resp.TypeArray && vals[0].Int == 2 &&
		(vals[1].Null || vals[1].Type == resp.TypeBulk) && (vals[2].Null || vals[2].Type == resp.TypeBulk)
}

// heldElsewhere reports whether a look at key shows it taken for this
// Client: held, or named for another Client. The look asks master at
// (see lookAt), or every master when at is -1, and then the key counts
// as taken when so many show it taken that a quorum cannot be free. A master that fails to answer in
// MasterTimeout counts as free (the attempt will tell), as does every
// master when done closes. It uses the op's fan-out and command, which
// the next attempt encodes again.
func (c *Client) heldElsewhere(o *call, key string, at int, done <-chan struct{}) bool {
	lk := &o.look
	*lk = look{c: c, n: len(c.masters), q: c.quorum}
	o.cmd.reset()
	o.cmd.look(c, key)
	o.fan.begin(c.patience(o.cmd.place), c.claimable(o.cmd.place), fitsPeek)
	o.fan.b.ReplayUntil = time.Time{} // a look is not sent again after a reset
	if at >= 0 {
		lk.n, lk.q = 1, 1
		o.fan.sendTo(at, at, &o.cmd)
	} else {
		o.fan.sendAll(&o.cmd)
	}
	o.fan.gather(lk, done)
	return lk.held > lk.n-lk.q
}

// look counts the answers of one look (see heldElsewhere) among n
// masters, q of them a quorum.
type look struct {
	c          *Client
	n, q       int
	held, free int
}

// gathered counts one master's answer; the look is decided when so many
// show the key taken that a quorum cannot be free, or a quorum free.
func (lk *look) gathered(r *pipe.Request) bool {
	vals := r.Reply()
	switch {
	case r.Err() != nil || len(vals) != 3:
		if r.Err() == nil && isErrorReply(vals) && string(vals[0].ErrorPrefix()) == "NOPERM" {
			lk.c.looksRefused.Store(true) // an ACL without MGET: attempt as before
		}
		lk.free++ // unknown: let the attempt see
	case !vals[1].Null || !vals[2].Null && string(vals[2].Bytes) != string(lk.c.waiterID[:]):
		lk.held++
	default:
		lk.free++
	}
	return lk.held > lk.n-lk.q || lk.free >= lk.q
}

// lookAt draws the master a look asks: one of those that answered the
// op's last attempt "taken", at random (so that a fleet's looks spread
// over the masters, and none asks a master that was down or slow); -1,
// every master, when none did.
//
// When one of them said its copy (of the key, or of the name that refused
// the attempt) expires within RetryDelay, the wait before the look ends
// when a quorum of copies has (see waitDelay), and the copies expire at
// different moments (each master got its SET at its own): a look at a
// master whose copy outlives that would find the key held and wait
// RetryDelay more. The draw is then among the masters whose copies are
// among the first quorum to expire. (Looking at every master instead made
// each look after a hand-off five MGETs: the releaser's attempt is
// refused by the name, which lives 200 ms.)
func (w *waitState) lookAt(res votes, quorum int, soonWithin time.Duration) int {
	soon := false
	for i := range res {
		if res[i].Outcome == OutcomeTaken && w.hasHolder[i] && w.pttl[i] >= 0 && w.pttl[i] < soonWithin {
			soon = true
		}
	}
	n := 0
	for i := range res {
		if w.lookable(res, quorum, i, soon) {
			n++
		}
	}
	if n == 0 || lookEveryMaster {
		return -1
	}
	k := rand.N(n)
	for i := range res {
		if w.lookable(res, quorum, i, soon) {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1
}

// lookable reports whether master i may take a look (see lookAt): it
// answered "taken", and, when copies expire soon, its copy is among the
// first quorum to expire.
func (w *waitState) lookable(res votes, quorum, i int, soon bool) bool {
	if res[i].Outcome != OutcomeTaken {
		return false
	}
	if !soon {
		return true
	}
	f, earlier := w.freeAfter(res, i), 0
	for j := range res {
		if w.freeAfter(res, j) < f {
			earlier++
		}
	}
	return f != never && earlier < quorum
}

// noPeek, set by tests and benchmarks only, makes every wait that runs out
// attempt at once, as before looks; noConfirmLook, set by tests only, makes
// a wait attempt after one free look, the broken variant that
// TestFreeLookIsConfirmed must catch.
var noPeek, noConfirmLook bool

// lookEveryMaster, set by benchmarks only, sends every look to every
// master, as before looks asked one: the A/B of the one-master look.
var lookEveryMaster bool
