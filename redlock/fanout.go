package redlock

import (
	"bytes"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// fanout sends a command to the masters at once and returns their answers
// as they come, within a deadline: the one way redlock talks to all its
// masters (a lock burst, a renewal batch, a waiter's look, Inspect, the
// fence repair). On top of a pipe.Batch of the masters' Group it keeps
// the round's deadline and claims the masters' connections for a round
// that may read its replies itself, or queues the round for the Group's
// driver when another has them (see begin). (A master that lost its
// script cache, as after a restart, answers an EVALSHA with NOSCRIPT: the
// connection sends the EVAL form itself, see conn.Options.Scripts.)
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
	nat    *nativeForms
	form   []uint8
	check  func([]resp.Value) bool // the round's reply check, for the command itself
	driven bool                    // the round is the Group driver's (see begin)
	// g reads a driven round's answers while gather waits; hearGathered
	// is the Batch's Hear then (hearDriven, bound once).
	g            gatherer
	hearGathered func(r *pipe.Request, late bool) bool
}

// A gatherer reads the answers of a round that gather waits for.
type gatherer interface {
	// gathered reads slot r.Tag's answer (a vote: the fanout has
	// already sent again what asks for it, see heard) and reports whether
	// the round is decided, so that gather need not wait for the rest.
	// r and its reply are valid during the call only. On a driven round it
	// runs on the Group's driver, with the Batch's lock held, while the
	// round's owner waits in gather: it must not block, and it may touch
	// what the owner touches only after gather.
	gathered(r *pipe.Request) (decided bool)
}

// gather waits for the round's answers, each read by g, until g says
// the round is decided or every request answered (fanReply), the
// deadline passed (fanTimeout) or done closed (fanDone), and then ends
// the round (see end: later answers go to no one). It is the loop of
// every round but the lock burst's, which counts votes its own way (see
// op.run).
func (f *fanout) gather(g gatherer, done <-chan struct{}) int {
	if !f.driven {
		ev := fanReply
		for f.pending() > 0 {
			var r *pipe.Request
			if r, ev = f.nextOf(1, done); ev != fanReply || g.gathered(r) {
				break
			}
		}
		f.end(nil)
		return ev
	}
	if f.pending() == 0 {
		return fanReply
	}
	if f.hearGathered == nil {
		f.hearGathered = f.hearDriven
	}
	hear := f.b.Hear
	f.g, f.b.Hear = g, f.hearGathered
	f.b.Drive(f.deadline)
	why := f.b.Await(done)
	f.b.End(nil) // hearDriven runs no more (and no answer is late: see op.runDriven)
	f.g, f.b.Hear = nil, hear
	switch why {
	case pipe.WokeDeadline:
		return fanTimeout
	case pipe.WokeDone:
		return fanDone
	}
	return fanReply
}

// hearDriven is a driven gathered round's pipe.Batch.Hear: what gather's
// loop does for a round that is not driven, on the driver.
func (f *fanout) hearDriven(r *pipe.Request, late bool) bool {
	if late {
		f.noteMoved(r)
		return false
	}
	if f.heard(r) {
		return false
	}
	return f.g.gathered(r) || f.b.Pending() == 0
}

// What fanout.nextOf and gather return besides a reply.
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

// begin starts a round that lasts timeout. When claimable (see
// Client.claimable: the round's sends go to the Group's connections
// only), the round claims the masters' connections if they are free (see
// pipe.Batch.Claim) and reads its replies itself, or else is driven: its
// commands are queued for the Group's driver (see pipe.Batch.Queue),
// which reads their answers (see gather, op.runDriven). Otherwise the
// Conns' goroutines send and read them. check, when not nil, vets each
// reply's shape before it is handed out (see replycheck.go).
func (f *fanout) begin(timeout time.Duration, claimable bool, check func([]resp.Value) bool) {
	f.b.Check = check
	f.check = check
	f.nat = nil
	clear(f.asked)
	clear(f.form)
	f.driven = claimable && (alwaysDriven || !f.b.Claim())
	f.start = time.Now()
	f.deadline = f.start.Add(timeout)
}

// sendAll sends cmd to every master, master i in slot i.
func (f *fanout) sendAll(cmd *wire) {
	for i := range f.c.masters {
		f.sendTo(i, i, cmd)
	}
}

// sendTo sends cmd to master i in slot (queues it, when the round is
// driven): to the server of master i's copy at cmd's place. When cmd is
// the command of the round's native forms and that server has one, it
// gets that form instead (see native.go).
func (f *fanout) sendTo(slot, i int, cmd *wire) {
	cn := f.c.connFor(i, cmd.place)
	f.sentTo[slot] = cn
	form, b, then := f.c.formFor(f.nat, cmd, cn, i, &f.scratch, &f.scratch2)
	f.form[slot] = form
	if form != 0 {
		f.b.Check = f.c.natCheck[form-1]
	}
	if f.driven {
		f.b.QueueWith(slot, cn, b, then, fitsInteger)
	} else {
		f.b.SendWith(slot, cn, b, then, fitsInteger)
	}
	f.b.Check = f.check
}

// pending returns how many requests are still unanswered.
func (f *fanout) pending() int { return f.b.Pending() }

// nextOf waits for the next answer (fanReply), until the deadline
// (fanTimeout) or done (fanDone), for a caller that can decide nothing
// with fewer than n more answers: it is woken once for them (see
// pipe.Batch.NextOf).
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
		if f.heard(r) {
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
func (f *fanout) heard(r *pipe.Request) bool {
	f.noteMoved(r)
	i := r.Tag
	if f.form[i] != 0 && r.Err() == nil && refusal(r.Reply()) {
		f.sendTo(i, i, f.nat.base)
		return true
	}
	if f.c.cluster != nil && !f.asked[i] && !noAsking && f.askAgain(r) {
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
func (f *fanout) askAgain(r *pipe.Request) bool {
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
	if f.driven {
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
