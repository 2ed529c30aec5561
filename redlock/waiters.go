package redlock

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"

	"github.com/volleylock/volley/internal/pipe"
)

// The waiters of a key across Clients. A Lock that waits makes its
// attempts with scripts.LockWait, which, when the key is taken, enrolls
// its Client's id (Client.waiterID) in the key's waiters: a sorted set on
// each master, named the key followed by scripts.WaitersSuffix (in the
// key's slot on a cluster), scored by when the waiting call joined the
// room (waiter.since), the same on every master. A release
// (scripts.Release) takes the Client that has waited longest off the set
// and publishes on that Client's own channel of the key (see
// waitRoom.wakeChannel), to which each waiting Client subscribes beside
// the key's channel; it publishes on the key's channel, which every
// waiting Client hears, only when nobody is enrolled (a native release,
// an ACL without the sorted-set commands, other kinds' waiters). When a
// release wakes anyone at all is decided by turns (see turns.go): the
// release of a one-key Lock leaves the waiters asleep until the longest
// has waited Config.HandOffAfter. A Client
// wakes its longest waiting Lock when a quorum of a release's messages
// reached it. So one release reaches one Client, not every process of a
// fleet; where the masters disagree on whom to tell (a master that
// missed an enrolment), no Client may reach a quorum, and the waits end
// at the next release or at RetryDelay.
//
// For scripts.NamedMs the release also names the Client on the key (see
// scripts.NamedSuffix): the other Clients' waiting attempts, those a
// RetryDelay ended among them, leave the free key to it instead of
// splitting the votes with it.
//
// The set lives as long as the key plus a TTL, renewed by each enrolling
// attempt; a Client leaves it when its attempt takes the key (the
// script), when a release names it, or when its last waiter of the key
// leaves without the lock (leaveWaiters). Every wait stays bounded by
// RetryDelay, so a wake-up lost to a Client that no longer waits (it
// crashed, say) costs the others at most that, and its name NamedMs.
//
// The masters' sets stay in step: each names the same Client at a
// release only if each holds the same Clients. A waiting attempt reaches
// some masters and not the others, and takes its Client off the sets
// where it sets the key while it enrolls it where it loses; both halves
// are undone:
//
//   - an attempt that fails puts its Client back where it set the key:
//     its quiet release carries the enrolment (see
//     lockKind.releaseFailed);
//   - one that wins takes its Client off where it lost (leaveWaiters with
//     the attempt's op), without waiting.
//
// Before, with 64 processes on one key (lockbench -mode fleet), the five
// masters' sets held different heads at almost every release, so the
// Client woken on some masters was not the one woken on the rest: half
// the wake-ups were heard from fewer than a quorum, and the woken Clients
// split the votes (see docs/benchmarks.md, stop 70). A release still
// moves the waiters only where it deletes the key: moving them wherever
// the key is free as well measured within noise.

// noEnrolment, set by tests only, leaves waiting attempts unenrolled:
// every release then publishes on the key's channel and wakes a waiter
// in every Client, the broken variant that TestReleaseWakesOneClientOfAFleet
// must catch.
var noEnrolment bool

// noRejoin and noLeaveWhereLost, set by tests only, drop the first and
// the second of the undoings above: the broken variants that
// TestFailedAttemptRejoins and TestWinnerLeavesWhereItLost must catch.
var noRejoin, noLeaveWhereLost bool

// waiterIDLen is the length of a Client's id among a key's waiters: hex
// digits of 64 random bits.
const waiterIDLen = 16

// newWaiterID returns a random Client id for the waiters' sets.
func newWaiterID() (id [waiterIDLen]byte) {
	var b [waiterIDLen / 2]byte
	rand.Read(b[:])
	hex.Encode(id[:], b[:])
	return id
}

// enrolment returns a waiting attempt's enrolment argument (see
// scripts.LockWait), "<since>:<Client id>" where since is when the call
// joined the key's waiters (unix ms), in the call's scratch: the arg2 of
// cmd when it enrolls (command.enroll); nil when it does not, or with
// noEnrolment.
func (o *call) enrolment(cmd *command) []byte {
	if !cmd.enroll || noEnrolment {
		return nil
	}
	o.who = strconv.AppendInt(o.who[:0], o.since, 10)
	o.who = append(o.who, ':')
	o.who = append(o.who, o.c.waiterID[:]...)
	return o.who
}

// wakeSuffix returns what ends the channels on which releases tell this
// Client that they took it off a key's waiters, after the key's channel
// (see waitRoom.wakeChannel): a colon and the Client's id.
func wakeSuffix(id [waiterIDLen]byte) string { return ":" + string(id[:]) }

// leaveWaiters takes this Client off key's waiters, without waiting
// (scripts.Leave): on every master when won is nil (its last waiter of
// key left without the lock); else after won's waiting attempt took the
// key, on the masters where it did not (see above), but for those whose
// replies come late (op.slow: a master behind on its replies gets no
// more to send back). A master where the key still holds the holder
// whose release this Client heard last keeps it: that release has yet
// to run there (the release reached the other masters first, or the
// attempt did), and when it runs it takes this Client off and names it,
// as it did on the others; leaving first would have it name the next
// Client on that master alone, whose one message wakes it for an
// attempt that fails.
func (c *Client) leaveWaiters(key string, won *op) {
	skip := func(i int) bool { return won != nil && (won.res[i].Outcome == OutcomeOK || won.slow[i]) }
	sends := 0
	for i := range c.masters {
		if !skip(i) {
			sends++
		}
	}
	if sends == 0 {
		return // it won everywhere (the script took it off every set), or the rest are slow
	}
	var heard [releaseIDLen]byte
	var release []byte
	if won != nil && c.room.lastRelease(key, &heard) {
		release = heard[:]
	}
	var w wire
	w.place = c.placement(key)
	w.leave(c, key, c.waiterID[:], release)
	var scratch []byte
	for i := range c.masters {
		if skip(i) {
			continue
		}
		r := pipe.NewRequest()
		r.Cmd = append(r.Cmd[:0], c.forMaster(&w, i, &scratch)...)
		c.connFor(i, w.place).SendForget(r)
	}
}
