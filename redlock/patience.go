package redlock

import "time"

// maxPatience bounds how long a burst waits for a slow quorum (see
// patience): conn takes a socket that owes replies and delivers none
// for a second (at least) for dead and resets it, so a later answer
// would not come anyway.
const maxPatience = time.Second

// releasePatience is how long a release (Unlock, and the releases of the
// other kinds) waits, at least, for the answers it needs to tell whether
// the hold is gone. A release plays no part in exclusion, so a master
// that answers late is better waited for than reported as
// ErrUnlockFailed: on a busy machine (64 processes on two cores) a lock
// won on exactly a quorum, its other masters held by others' partial
// votes, failed its Unlock when one of its quorum answered 56-69 ms after
// the burst, with MasterTimeout at 50 ms. Half of maxPatience, so that a
// master that stays silent reads as a timeout before conn resets its
// socket. A release decided sooner (a quorum released it, or so many
// said it was not theirs that no quorum can) returns at once, so only an
// Unlock short of answers waits this long. A variable for the broken
// variant of TestUnlockWaitsForLateMasters.
var releasePatience = maxPatience / 2

// noPatience, set by tests only, makes every burst wait MasterTimeout
// whatever the masters' latencies: the broken variant that
// TestSlowQuorumIsAwaited must catch.
var noPatience bool

// patience is how long a burst on the masters of place p waits for
// answers: MasterTimeout, unless a quorum of the masters lately answered
// later than that (a busy machine, or busy masters: ReplyLatency measures
// replies that came, so a silent master does not stretch it); then twice
// the quorum's slowest latest latency, at most maxPatience. A minority of
// slow masters changes nothing (the burst does not wait for them, see
// op.run); a busy majority's answers are waited for instead of read as
// timeouts, which failed Unlocks and Extends (cancelling Do's work) and
// turned a Lock's votes into partial ones that its release then added to
// the load.
func (c *Client) patience(p int) time.Duration {
	wait := c.cfg.MasterTimeout
	if noPatience {
		return wait
	}
	fast := 0
	for i := range c.masters {
		if c.connFor(i, p).ReplyLatency() <= wait {
			fast++
		}
	}
	if fast >= c.quorum {
		return wait
	}
	quorumLatency := c.quorumLatency(p)
	if quorumLatency <= wait {
		return wait
	}
	return min(2*quorumLatency, max(wait, maxPatience))
}

// quorumLatency is the latest reply latency (conn's ReplyLatency) that a
// quorum of the masters of place p are within: the quorum's slowest.
func (c *Client) quorumLatency(p int) time.Duration {
	quorumLatency := time.Duration(-1)
	for i := range c.masters {
		li := c.connFor(i, p).ReplyLatency()
		if quorumLatency >= 0 && li >= quorumLatency {
			continue
		}
		within := 0
		for j := range c.masters {
			if c.connFor(j, p).ReplyLatency() <= li {
				within++
			}
		}
		if within >= c.quorum {
			quorumLatency = li
		}
	}
	return quorumLatency
}
