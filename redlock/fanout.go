package redlock

import (
	"bytes"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// fanout sends a command to the masters at once and returns their answers
// as they come, within a deadline: the one way redlock talks to all its
// masters (a lock burst, a renewal batch, Inspect, the fence repair). On
// top of a pipe.Batch of the masters' Group it keeps the round's deadline
// and claims the masters' connections for a burst that may read its
// replies itself. (A master that lost its script cache, as after a
// restart, answers an EVALSHA with NOSCRIPT: the connection sends the
// EVAL form itself, see conn.Options.Scripts.)
//
// A fanout is for one goroutine at a time; its owner (an op, the renewer,
// or one call) makes it with newFanout and, unless pooled with its owner,
// releases it with release.
type fanout struct {
	c        *Client
	b        *pipe.Batch
	deadline time.Time
	start    time.Time    // when the first command left
	asked    []bool       // per slot: the ASK retry was sent (see askAgain)
	sentTo   []*pipe.Conn // per slot: the connection its request went to
	scratch  []byte       // a master's command, for a cluster Client (see wire)
	scratch2 []byte       // and what follows it (see nativeForms.pub)
	// nat, when not nil, holds the native forms of the round's command
	// (set after begin, see op.run); form is, per slot, 1 + the
	// nativeVerb the slot was sent, or 0 for the command itself.
	nat   *nativeForms
	form  []uint8
	check func([]resp.Value) bool // the round's reply check, for the command itself
}

// What fanout.next returns besides a reply.
const (
	fanReply   = iota // a request completed
	fanTimeout        // the deadline passed
	fanDone           // done closed
)

// newFanout returns a fanout of one slot per master, or slots slots when
// more than one request goes to a master (slot s then goes to the master
// the caller names in sendTo).
func newFanout(c *Client, slots int) fanout {
	return fanout{c: c, b: c.group.NewBatch(slots), asked: make([]bool, slots), sentTo: make([]*pipe.Conn, slots), form: make([]uint8, slots)}
}

// begin starts a round that lasts timeout: with claim, the masters'
// connections are claimed if they are free (see pipe.Batch.Claim); a
// round's sends must then go to the Group's connections only (see
// Client.claimable). check, when not nil, vets each reply's shape before
// it is handed out (see replycheck.go).
func (f *fanout) begin(timeout time.Duration, claim bool, check func([]resp.Value) bool) (claimed bool) {
	f.b.Check = check
	f.check = check
	f.nat = nil
	clear(f.asked)
	clear(f.form)
	if claim {
		claimed = f.b.Claim()
	}
	f.start = time.Now()
	f.deadline = f.start.Add(timeout)
	return claimed
}

// queue fills master i's slot of a driven round with cmd (see
// pipe.Batch.Queue), as sendTo sends it.
func (f *fanout) queue(i int, cmd *wire) { f.put(i, i, cmd, true) }

// sendAll sends cmd to every master, master i in slot i.
func (f *fanout) sendAll(cmd *wire) {
	for i := range f.c.masters {
		f.sendTo(i, i, cmd)
	}
}

// sendTo sends cmd to master i in slot: to the server of master i's copy
// at cmd's place. When cmd is the command of the round's native forms and
// that server has one, it gets that form instead (see native.go).
func (f *fanout) sendTo(slot, i int, cmd *wire) { f.put(slot, i, cmd, false) }

// put is sendTo, or queue when driven.
func (f *fanout) put(slot, i int, cmd *wire, driven bool) {
	cn := f.c.connFor(i, cmd.place)
	f.sentTo[slot] = cn
	form, b, then := f.c.formFor(f.nat, cmd, cn, i, &f.scratch, &f.scratch2)
	f.form[slot] = form
	if form != 0 {
		f.b.Check = f.c.natCheck[form-1]
	}
	if driven {
		f.b.QueueWith(slot, cn, b, then, fitsInteger)
	} else {
		f.b.SendWith(slot, cn, b, then, fitsInteger)
	}
	f.b.Check = f.check
}

// pending returns how many requests are still unanswered.
func (f *fanout) pending() int { return f.b.Pending() }

// next waits for the next answer (fanReply), until the deadline
// (fanTimeout) or done (fanDone).
func (f *fanout) next(done <-chan struct{}) (*pipe.Request, int) {
	return f.nextOf(1, done)
}

// nextOf is next for a caller that can decide nothing with fewer than n
// more answers: it is woken once for them (see pipe.Batch.NextOf).
func (f *fanout) nextOf(n int, done <-chan struct{}) (*pipe.Request, int) {
	for {
		r := f.b.NextOf(n, f.deadline, done)
		switch {
		case r != nil:
		case isClosed(done):
			return nil, fanDone
		default:
			return nil, fanTimeout
		}
		if f.heard(r, false) {
			continue
		}
		return r, fanReply
	}
}

// heard is what every answer of the round goes through before it is
// read as a vote, driven or not: a sign that a cluster copy moved
// touches the locator, and an answer that asks for the command again
// gets it, in the same round (queued again when driven): a refused
// native form (its check has turned that form off) as the script, an
// ASK to the node it names (see askAgain). It reports whether it sent
// the command again, so that the answer is no vote.
func (f *fanout) heard(r *pipe.Request, driven bool) bool {
	f.noteMoved(r)
	i := r.Tag
	if f.form[i] != 0 && r.Err() == nil && refusal(r.Reply()) {
		f.put(i, i, f.nat.base, driven)
		return true
	}
	if f.c.cluster != nil && !f.asked[i] && !noAsking && f.askAgain(r, driven) {
		f.asked[i] = true
		return true
	}
	return false
}

// end ends the round: it gives up on the requests still pending (their
// Conns recycle them), passes those answered meanwhile to late (when not
// nil), and lets go of the claim.
func (f *fanout) end(late func(r *pipe.Request)) {
	if f.c.locate == nil {
		f.b.End(late)
		return
	}
	f.b.End(func(r *pipe.Request) {
		f.noteMoved(r)
		if late != nil {
			late(r)
		}
	})
}

// noteMoved touches the locator when r says that a cluster copy moved
// (see movedOrDown), so that it reads the map again.
func (f *fanout) noteMoved(r *pipe.Request) {
	if f.c.locate != nil && movedOrDown(r) {
		f.c.locate.touch()
	}
}

// release ends the fanout for good; its owner must not use it afterwards.
func (f *fanout) release() { f.b.Release() }

// askAgain answers a cluster node's -ASK (the key's slot is migrating and
// the key is not there: it may be on the importing node) the way Redis
// Cluster clients do: the same command again, to the node the answer
// names, right behind an ASKING on the same connection, within the
// round's deadline. It reports whether it sent it: not for another answer,
// nor for a node the Client's view does not know (the answer then stands,
// a failed vote, and the locator reads the map again).
func (f *fanout) askAgain(r *pipe.Request, driven bool) bool {
	vals := r.Reply()
	if r.Err() != nil || len(vals) == 0 || !vals[0].IsError() || string(vals[0].ErrorPrefix()) != "ASK" {
		return false
	}
	// "ASK <slot> <host:port>"
	msg := vals[0].Bytes
	sp := bytes.LastIndexByte(msg, ' ')
	if sp < 0 {
		return false
	}
	cn := f.c.cluster.nodeConn(string(msg[sp+1:]))
	if cn == nil {
		return false
	}
	f.scratch = append(f.scratch[:0], r.Cmd...)
	f.sentTo[r.Tag] = cn
	if v := f.form[r.Tag]; v != 0 {
		f.b.Check = f.c.natCheck[v-1]
	}
	if driven {
		f.b.QueueAfter(r.Tag, cn, askingCmd, f.scratch)
	} else {
		f.b.SendAfter(r.Tag, cn, askingCmd, f.scratch)
	}
	f.b.Check = f.check
	return true
}

// noAsking, set by tests only, leaves ASK answers as failed votes: the
// broken variant that TestClusterSlotMigrating must catch.
var noAsking bool

// movedOrDown reports whether an answer says that a cluster copy's server
// does not serve it (any more): a connection error, or MOVED, ASK,
// CLUSTERDOWN, TRYAGAIN or READONLY.
func movedOrDown(r *pipe.Request) bool {
	if r.Err() != nil {
		return true
	}
	vals := r.Reply()
	if len(vals) == 0 || !vals[0].IsError() {
		return false
	}
	switch string(vals[0].ErrorPrefix()) {
	case "MOVED", "ASK", "CLUSTERDOWN", "TRYAGAIN", "READONLY":
		return true
	}
	return false
}

// isClosed reports whether done is closed (false for nil).
func isClosed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
