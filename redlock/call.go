package redlock

import "time"

// A call is the pooled working set of one call on the masters (the
// Client's ops pool, so that steady-state calls allocate nothing): its
// burst, the embedded op, and what is the call's own. An acquire call
// keeps there what its answers taught it (lessons, which the op's readers
// write through op.learn), the votes of its latest decided attempt, the
// timer of its waits, and its kind's choices: the Lock's kind, the
// permit it asks for, its place among the key's waiters. Releases and
// extensions use the op alone. A call is used by one goroutine at a time.
type call struct {
	op
	lessons lessons
	timer   *time.Timer // for the waits between a Lock's attempts (see retry)
	// last is res of the latest decided failed attempt of a Lock (when
	// hasLast): what the masters really said, which the error keeps when
	// ctx ends a later burst before they answer (see votes.learned).
	last    votes
	hasLast bool

	lk     lockKind // a Lock call's kind: here so that passing it as a kind allocates nothing
	permit int      // the permit a semaphore's attempt asks for (see Semaphore.attempt)
	who    []byte   // scratch for the enrolment of a waiting attempt (see waiters.go)
	since  int64    // when the waiting call joined the room, unix ms: its place among the key's waiters
	look   look     // a waiting call's look at the key (see heldElsewhere)
	// yield: the Lock waits from its first attempt, behind the waiter its
	// Client's last release of the key woke (see turns.go).
	yield bool
}

func (c *Client) newCall() *call {
	n := len(c.masters)
	t := time.NewTimer(time.Hour)
	t.Stop()
	o := &call{
		op: op{
			c:    c,
			fan:  newFanout(c, n),
			res:  make([]MasterResult, n),
			slow: make([]bool, n),
		},
		lessons: lessons{waitState: newWaitState(n), fenceState: newFenceState(n)},
		timer:   t,
		last:    make([]MasterResult, n),
	}
	o.learn = &o.lessons
	o.fan.b.Hear = o.hear
	return o
}

func (c *Client) getOp() *call  { return c.ops.Get().(*call) }
func (c *Client) putOp(o *call) { c.ops.Put(o) }
