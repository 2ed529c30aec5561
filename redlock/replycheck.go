package redlock

import "github.com/volleylock/volley/resp"

// Reply checks. A master's replies are matched to requests by order only,
// so a corrupted length (an array of two read as three, swallowing the next
// reply, or as one, leaving part of itself for the next request) puts every
// later reply on that connection out of step: an extend would read another
// request's 1 as its yes. Each burst therefore names the only shapes its
// command's answer can have (pipe.SetCheck); a reply of any other
// shape makes the Conn drop the socket before it hands out a later reply,
// and every request pending on it fails as on a broken connection.
//
// The checks decide from the reply alone (they run on the socket's reader,
// also for replies the burst gave up on), so they know shapes, not the
// attempt's token: classify still compares a grant's token. An answer
// whose length is itself a list (a permit's free permits, a renewal
// batch's votes) is held to its elements' type and order, which a
// swallowed reply breaks unless it is a small integer of the right order:
// that much a one-byte corruption can still hide. Replies the checks pass
// are not proved intact (Redlock assumes masters answer truly): the checks
// keep a torn stream from lasting. Each shape's check is its entry's fits
// in answers (answer.go).

// isErrorReply reports whether vals is a server error: well formed
// whatever the command.
func isErrorReply(vals []resp.Value) bool { return len(vals) == 1 && vals[0].IsError() }

// fitsInteger: 1 / 0 (a vote), or a fenced writer's 1, 0 or 2.
func fitsInteger(vals []resp.Value) bool {
	return isErrorReply(vals) || len(vals) == 1 && vals[0].Type == resp.TypeInteger
}

// fitsSet: SET NX's +OK, or nil when taken.
func fitsSet(vals []resp.Value) bool {
	return isErrorReply(vals) || len(vals) == 1 && (vals[0].Null || vals[0].Type == resp.TypeSimpleString)
}

// isHolder reports whether vals is the {holder id, pttl} a lock script
// answers when its key is taken.
func isHolder(vals []resp.Value) bool {
	return len(vals) == 3 && vals[0].Type == resp.TypeArray && vals[0].Int == 2 &&
		vals[1].Type == resp.TypeBulk && vals[2].Type == resp.TypeInteger
}

// fitsLock: 1, or {holder id, pttl}.
func fitsLock(vals []resp.Value) bool { return fitsInteger(vals) || isHolder(vals) }

// fitsFenceLock: {1, counter}, {1} (no counter), or {holder id, pttl}.
func fitsFenceLock(vals []resp.Value) bool {
	switch {
	case isErrorReply(vals), isHolder(vals):
		return true
	case len(vals) == 2:
		return vals[0].Type == resp.TypeArray && vals[0].Int == 1 && vals[1].Type == resp.TypeInteger
	case len(vals) == 3:
		return vals[0].Type == resp.TypeArray && vals[0].Int == 2 &&
			vals[1].Type == resp.TypeInteger && vals[2].Type == resp.TypeBulk
	}
	return false
}

// flatArray returns the elements of vals when it is an array of scalars
// (a list whose length is the answer's own), else false.
func flatArray(vals []resp.Value) ([]resp.Value, bool) {
	if len(vals) == 0 || vals[0].Type != resp.TypeArray || int(vals[0].Int) != len(vals)-1 {
		return nil, false
	}
	return vals[1:], true
}

// isFreeList reports whether vals is a semaphore's taken answer: the
// indexes of the master's free permits, ascending.
func isFreeList(vals []resp.Value) bool {
	elems, ok := flatArray(vals)
	if !ok {
		return false
	}
	last := int64(-1)
	for _, v := range elems {
		if v.Type != resp.TypeInteger || v.Int <= last {
			return false
		}
		last = v.Int
	}
	return true
}

// fitsPermit: the attempt's token, or the free permits.
func fitsPermit(vals []resp.Value) bool {
	return isErrorReply(vals) || len(vals) == 1 && vals[0].Type == resp.TypeBulk && !vals[0].Null || isFreeList(vals)
}

// fitsFencePermit: {token, counter or ""}, or the free permits.
func fitsFencePermit(vals []resp.Value) bool {
	return isErrorReply(vals) || isFreeList(vals) ||
		len(vals) == 3 && vals[0].Type == resp.TypeArray && vals[0].Int == 2 &&
			vals[1].Type == resp.TypeBulk && vals[2].Type == resp.TypeBulk
}

// fitsVotes: a renewal batch's votes, one 1 or 0 per renewal.
func fitsVotes(vals []resp.Value) bool {
	if isErrorReply(vals) {
		return true
	}
	elems, ok := flatArray(vals)
	if !ok {
		return false
	}
	for _, v := range elems {
		if v.Type != resp.TypeInteger || v.Int != 0 && v.Int != 1 {
			return false
		}
	}
	return true
}

// parseCounter reads a counter: decimal digits, at most maxFence.
func parseCounter(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, n <= maxFence
}

// Fencing (Config.Fencing): each master keeps one counter (fenceKey), and
// a fenced Lock takes one round, or two:
//
//  1. scripts.FenceLock sets the keys, as any Lock does, reads the counter
//     of every master that set them and, in the same step, raises it to
//     the token the Client proposes (fencer.propose) if that is larger;
//     if a quorum of masters that vouch for their counter set the keys and
//     each read a counter below the proposal, the proposal is the token;
//  2. else, once a quorum of such masters set the keys, the token is the
//     largest counter read plus one, and scripts.FenceWrite raises the
//     counter to it on every master that still holds the keys; the lock
//     is acquired when a quorum did, within the validity.
//
// The argument that tokens only grow, and what restarts do, is in the
// package documentation ("Fencing").
// maxFence is the largest counter Volley reads: the masters' Lua numbers
// are doubles, exact up to 2^53.
const maxFence = 1<<53 - 1
