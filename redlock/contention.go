package redlock

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"time"
)

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
func (w *waitState) contention(res votes, quorum int, tok *token) (held bool, holder [releaseIDLen]byte, elect bool, freeIn time.Duration) {
	mine, best := 0, 0
	var bestID [releaseIDLen]byte
	for i := range res {
		w.free[i] = w.freeAfter(res, i)
		if out := res[i].Outcome; out == OutcomeOK || out == OutcomeGuarded {
			mine++
		}
		if !w.hasHolder[i] || res[i].Outcome != OutcomeTaken {
			continue
		}
		votes := 0
		for j := range res {
			if w.hasHolder[j] && res[j].Outcome == OutcomeTaken && w.holder[j] == w.holder[i] {
				votes++
			}
		}
		if votes > best || votes == best && bytes.Compare(w.holder[i][:], bestID[:]) < 0 {
			best, bestID = votes, w.holder[i]
		}
	}
	held = best >= quorum
	if held {
		holder = bestID
	} else if mine > 0 {
		id := tok.releaseID()
		elect = mine > best || mine == best && bytes.Compare(id[:], bestID[:]) < 0
	}
	if in, ok := w.quorumFreeIn(quorum); ok {
		return held, holder, elect, in
	}
	return held, holder, elect, -1
}

// freeAfter is how long after the attempt whose votes are res master i
// is free for it: 0 where the attempt took it, the copy's PTTL where
// another holds it (or a name refused it), never where that is not known.
func (w *waitState) freeAfter(res votes, i int) time.Duration {
	switch out := res[i].Outcome; {
	case out == OutcomeOK || out == OutcomeGuarded:
		return 0
	case out == OutcomeTaken && w.hasHolder[i] && w.pttl[i] >= 0:
		return w.pttl[i]
	}
	return never
}

// quorumFreeIn sorts free (per master: how long until it is free, or
// never) and returns how long until a quorum of them is, if ever.
func (w *waitState) quorumFreeIn(quorum int) (time.Duration, bool) {
	slices.Sort(w.free)
	in := w.free[quorum-1]
	return in, in != never
}

// guardEnds reports, after a failed attempt, whether the restart guard
// keeps it from a quorum until end, and nothing else does longer: end is
// when a quorum of masters can count, each master that said yes at once,
// each that the guard held out when its guard ends, and each that said
// taken when its key expires, where its answer told (a waiting attempt's,
// see noteHolder). With exclusive (a kind whose waiting attempts name the
// holder and its PTTL), a master that said taken without telling when its
// key expires (a plain SET's answer) makes it contention, not a guard:
// the caller waits as for any holder, and its next attempt tells. So a
// Lock does not wait out a guard while a quorum of other masters will be
// free sooner (#54). For other kinds a taken master counts as never free.
func (w *waitState) guardEnds(res votes, quorum int, exclusive bool) (end time.Time, ok bool) {
	now := time.Now()
	guarded := false
	for i := range res {
		switch res[i].Outcome {
		case OutcomeOK:
			w.free[i] = 0
		case OutcomeGuarded:
			w.free[i] = max(0, res[i].GuardedUntil.Sub(now))
			guarded = true
		case OutcomeTaken:
			if !exclusive {
				w.free[i] = never
				break
			}
			if !w.hasHolder[i] {
				return time.Time{}, false
			}
			w.free[i] = never
			if w.pttl[i] >= 0 {
				w.free[i] = w.pttl[i] + driftFloor
			}
		default:
			w.free[i] = never
		}
	}
	in, ok := w.quorumFreeIn(quorum)
	if !guarded || !ok {
		return time.Time{}, false
	}
	return now.Add(in), true
}

// never marks, in waitState.free, a master that will not be free by
// expiry alone.
const never = time.Duration(1<<63 - 1)

// waitDelay is how long w waits after failed attempt number attempt (a
// wake-up ends the wait sooner). When one holder has the key, the retry
// delay, or less if the key expires sooner. When nobody has it (votes split
// among contenders who all lost, and release), or its holder is releasing
// it (see released), a short random back-off of a few attempt durations,
// doubling with each such failure in a row (splits), so that contenders do
// not collide again; split reports this case. On faults, the retry delay.
func (c *Client) waitDelay(w *waiter, o *call, tok *token, br *burstResult, attempt, splits int, took time.Duration) (d time.Duration, split bool, holder [releaseIDLen]byte, held bool) {
	d = c.retryDelay(attempt)
	if br.ok >= c.quorum {
		// A quorum said yes but the validity ran out first (a TTL too
		// short for these masters, or a pause): no split, nobody to wait
		// for; trying again at once would fail the same way.
		return d, false, holder, false
	}
	held, holder, elect, freeIn := o.learn.contention(o.res, c.quorum, tok)
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
