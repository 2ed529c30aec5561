package redlock

import (
	"context"

	"github.com/volleylock/volley/internal/ctxerr"
)

// votes are the masters' outcomes of one burst, master i's at i (an op's
// res): what the acquire loop, the verdicts and the fencing rounds ask of
// a burst's answers, beside the sums in burstResult.
type votes []MasterResult

// noQuorum reports whether the votes show an outage rather than
// contention: the masters that gave no vote (timed out, failed to
// connect, answered with an error, or were slow and not awaited) are more
// than N - quorum, so that the others could not have made a quorum
// whatever they answered. A master not awaited because the outcome was
// decided without it, or cancelled, may have voted: it does not count
// (see ErrNoQuorum).
func (v votes) noQuorum(quorum int) bool {
	silent := 0
	for i := range v {
		switch v[i].Outcome {
		case OutcomeTimeout, OutcomeConnError, OutcomeServerError, OutcomeSlow:
			silent++
		}
	}
	return silent > len(v)-quorum
}

// mayHoldQuorum reports whether a failed attempt's token may be on a
// quorum of masters: those that said yes, plus those whose answer is not
// known (the SET may have run). Only then can anyone have seen it as the
// holder.
func (v votes) mayHoldQuorum(quorum int) bool {
	n := 0
	for i := range v {
		if out := v[i].Outcome; out != OutcomeTaken && out != OutcomeServerError {
			n++
		}
	}
	return n >= quorum
}

// mismatched reports whether a master answered that it keeps the name
// for something else (see ErrSemaphoreMismatch and ErrWrongKind).
func (v votes) mismatched() bool {
	for i := range v {
		if v[i].Outcome == OutcomeServerError && isMismatch(v[i].Err) {
			return true
		}
	}
	return false
}

// denied reports whether the masters whose ACL denied the attempt a
// command or a key (a NOPERM answer) leave fewer than a quorum: no retry
// can then succeed (see ErrNoPermission).
func (v votes) denied(quorum int) bool {
	n := 0
	for i := range v {
		if v[i].Outcome == OutcomeServerError && isNoPermission(v[i].Err) {
			n++
		}
	}
	return n > 0 && len(v)-n < quorum
}

// notOurs returns the masters whose answer to an extension was that
// the value is not there (OutcomeTaken).
func (v votes) notOurs() restoreMask {
	var m restoreMask
	for i := range v {
		if v[i].Outcome == OutcomeTaken {
			m.add(i)
		}
	}
	return m
}

// unfenced reports whether a master answered the last round without a
// counter it vouches for: a repair (see repairFence) may help.
func (v votes) unfenced() bool {
	for i := range v {
		if v[i].Outcome == OutcomeUnfenced {
			return true
		}
	}
	return false
}

// learned puts back, into the results of a burst that ctx's end cut
// short, what each master said in the Lock's latest decided attempt
// where this burst learned nothing (cancelled, or not awaited): the error
// then says what kept the lock away (the guard, another holder, a dead
// master) rather than "cancelled" everywhere.
func (v votes) learned(last votes) {
	for i := range v {
		if out := v[i].Outcome; out == OutcomeCancelled || out == OutcomeNone {
			v[i] = last[i]
		}
	}
}

// error builds an *Error from the votes (allocating: error path).
func (v votes) error(op Op, key string, kind error, attempts int) error {
	return &Error{Op: op, Key: key, Err: kind, Attempts: attempts, Masters: append([]MasterResult(nil), v...)}
}

// ended is the error of an acquisition of name that ctx ended after
// attempt attempts: ctx's error, which also matches ErrNoQuorum when the
// votes, the latest answers, show too few masters that could vote.
func (v votes) ended(ctx context.Context, quorum int, name string, attempt int) error {
	kind := ctxerr.Of(ctx)
	if v.noQuorum(quorum) {
		kind = &endedNoQuorum{kind}
	}
	return v.error(OpLock, name, kind, attempt)
}

// report calls the Master hook for each master's outcome in v.
func (c *Client) report(v votes, kind Op) {
	h := c.cfg.Hooks.Master
	if h == nil {
		return
	}
	for i := range v {
		h(kind, v[i].Addr, v[i].Outcome, v[i].Latency)
	}
}
