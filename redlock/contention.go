package redlock

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/volleylock/volley/resp"
)

// waitState is what a waiting Lock's attempt learns from a burst: waiting
// makes the attempt's command the waiting one (scripts.LockWait, see
// lockCommand), whose "taken" answers carry the holder's id and the key's
// PTTL, which noteHolder stores in holder and pttl (hasHolder says which
// masters told); contention reads them. It lives in the op, embedded.
type waitState struct {
	waiting   bool
	hasHolder []bool
	holder    [][releaseIDLen]byte
	pttl      []time.Duration
	free      []time.Duration // scratch of contention and guardEnds
}

func newWaitState(n int) waitState {
	return waitState{
		hasHolder: make([]bool, n),
		holder:    make([][releaseIDLen]byte, n),
		pttl:      make([]time.Duration, n),
		free:      make([]time.Duration, n),
	}
}

// contention sums up a failed waiting attempt, whose "taken" answers carry
// each holder's id and the key's PTTL (see noteHolder), and which heard
// every awaited master out. held reports that one holder, whose id is
// holder, has a quorum of masters: a release will come, or an expiry.
// Otherwise the votes split among contenders who all lost; every loser
// sees the same votes (each master answers each of them with whoever came
// first there), so they agree on one to try again first: the most votes,
// ties to the smallest id. elect reports that it is this attempt, whose
// token is tok. freeIn is how long until a quorum of masters is free by
// expiry alone, counting our own votes as free (the failed attempt
// releases them); -1 when no such bound is known.
func (o *op) contention(tok *token) (held bool, holder [releaseIDLen]byte, elect bool, freeIn time.Duration) {
	q := o.c.quorum
	mine, best := 0, 0
	var bestID [releaseIDLen]byte
	for i := range o.res {
		o.free[i] = o.freeAfter(i)
		if out := o.res[i].Outcome; out == OutcomeOK || out == OutcomeGuarded {
			mine++
		}
		if !o.hasHolder[i] || o.res[i].Outcome != OutcomeTaken {
			continue
		}
		votes := 0
		for j := range o.res {
			if o.hasHolder[j] && o.res[j].Outcome == OutcomeTaken && o.holder[j] == o.holder[i] {
				votes++
			}
		}
		if votes > best || votes == best && bytes.Compare(o.holder[i][:], bestID[:]) < 0 {
			best, bestID = votes, o.holder[i]
		}
	}
	held = best >= q
	if held {
		holder = bestID
	} else if mine > 0 {
		id := tok.releaseID()
		elect = mine > best || mine == best && bytes.Compare(id[:], bestID[:]) < 0
	}
	if in, ok := o.quorumFreeIn(); ok {
		return held, holder, elect, in
	}
	return held, holder, elect, -1
}

// never marks, in waitState.free, a master that will not be free by
// expiry alone.
const never = time.Duration(1<<63 - 1)

// freeAfter is how long after the op's last attempt master i is free for
// it: 0 where the attempt took it, the copy's PTTL where another holds it
// (or a name refused it), never where that is not known.
func (o *op) freeAfter(i int) time.Duration {
	switch out := o.res[i].Outcome; {
	case out == OutcomeOK || out == OutcomeGuarded:
		return 0
	case out == OutcomeTaken && o.hasHolder[i] && o.pttl[i] >= 0:
		return o.pttl[i]
	}
	return never
}

// quorumFreeIn sorts free (per master: how long until it is free, or
// never) and returns how long until a quorum of them is, if ever.
func (o *op) quorumFreeIn() (time.Duration, bool) {
	slices.Sort(o.free)
	in := o.free[o.c.quorum-1]
	return in, in != never
}

// waitDelay is how long w waits after failed attempt number attempt (a
// wake-up ends the wait sooner). When one holder has the key, the retry
// delay, or less if the key expires sooner. When nobody has it (votes split
// among contenders who all lost, and release), or its holder is releasing
// it (see released), a short random back-off of a few attempt durations,
// doubling with each such failure in a row (splits), so that contenders do
// not collide again; split reports this case. On faults, the retry delay.
func (c *Client) waitDelay(w *waiter, o *op, tok *token, br *burstResult, attempt, splits int, took time.Duration) (d time.Duration, split bool, holder [releaseIDLen]byte, held bool) {
	d = c.retryDelay(attempt)
	if br.ok >= c.quorum {
		// A quorum said yes but the validity ran out first (a TTL too
		// short for these masters, or a pause): no split, nobody to wait
		// for; trying again at once would fail the same way.
		return d, false, holder, false
	}
	held, holder, elect, freeIn := o.contention(tok)
	switch {
	case held && !c.room.released(w, holder):
		if freeIn >= 0 {
			d = min(d, freeIn+driftFloor)
		}
		return d, false, holder, true
	case elect && br.failed == 0:
		// First among the losers: again at once (the others' releases
		// may still be on their way: a back-off of about a round trip).
		return rand.N(took/2 + 1), true, holder, false
	case held || br.failed == 0: // its holder is releasing it, or a split
		window := max(2*took, 200*time.Microsecond) << min(splits, 6)
		return took + rand.N(min(window, d)+1), true, holder, false
	}
	return d, false, holder, false
}

// noteHolder stores what a lock script's "taken" answer from master i
// says: the holder's id and the key's PTTL (see scripts.LockWait). Other
// answers have another shape and store nothing.
func (o *op) noteHolder(i int, vals []resp.Value) {
	if len(vals) != 3 || vals[1].Type != resp.TypeBulk || vals[2].Type != resp.TypeInteger {
		return
	}
	o.holder[i] = [releaseIDLen]byte{}
	copy(o.holder[i][:], vals[1].Bytes)
	o.pttl[i] = time.Duration(vals[2].Int) * time.Millisecond
	o.hasHolder[i] = true
}
