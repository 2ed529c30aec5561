package redlock

import (
	"time"

	"github.com/volleylock/volley/internal/pipe"
)

// op is one burst on all masters: the command's bytes (cmd, and its
// native forms in nat), the fan-out, and each master's vote in res. Its
// methods encode (command.go, native.go), run and read the answers
// (burst.go, answer.go), and send without waiting (burst.go). The answer
// readers note what the answers teach in learn, the lessons of the call
// that holds the op (see call). An op is used by one goroutine at a time.
type op struct {
	c    *Client
	fan  fanout
	res  votes
	slow []bool // the master's latest reply came after MasterTimeout: not awaited

	command *command // the burst's, chosen by encode
	tok     token    // the token the burst sends, for the commands that take one
	// waiting: the burst hears every awaited master out, and a Lock's
	// attempt is its waiting command (scripts.LockWait, see lockCommand),
	// whose "taken" answers name the holder and the key's PTTL.
	waiting bool

	cmd      wire               // the encoded command of the burst
	nat      nativeForms        // the command's native forms, for the masters that have them (see native.go)
	num      []byte             // scratch for formatting the TTL
	relID    [releaseIDLen]byte // scratch for a release's id (command.wake)
	fenceNum []byte             // scratch for formatting a fence token

	learn *lessons // where the answer readers note what they learn: its call's

	// A driven burst's tally (see runDriven), kept by hear on the
	// goroutine that reads the answers, read by the caller after the
	// round's End.
	br        burstResult
	awaited   int  // awaited masters yet to answer
	hung      bool // the burst was woken undecided (known once hungKnown)
	hungKnown bool
}

// burstResult sums up a burst.
type burstResult struct {
	start     time.Time     // when the first command left: validity counts from here
	ok        int           // masters that said yes and count toward the quorum
	taken     int           // masters that said no (held by another / not ours)
	failed    int           // timeouts, connection and server errors, guarded
	cancelled bool          // done closed before the decision
	took      time.Duration // from start to the decision
}

// run sends o.cmd to every master in one burst, then collects answers until
// the outcome is decided: a quorum said yes, or so many said no or failed
// that a quorum is out of reach, or MasterTimeout passed, or done closed, or
// only slow masters (see OutcomeSlow) are left to answer. Masters still
// pending then are abandoned (their replies are consumed and
// recycled by their Conn). It fills o.res.
func (o *op) run(done <-chan struct{}) burstResult {
	c := o.c
	n, q := len(c.masters), c.quorum
	wait := c.patience(o.cmd.place)
	if o.command.release {
		wait = max(wait, releasePatience)
	}
	for i := range c.masters {
		cn := c.connFor(i, o.cmd.place)
		o.res[i] = MasterResult{Addr: cn.Addr()}
		o.learn.hasHolder[i] = false
		o.learn.hasCounter[i] = false
		o.slow[i] = cn.ReplyLatency() > wait
	}
	// A master whose latest reply came later than the burst's patience
	// (MasterTimeout, unless a quorum is slow) is slow: its
	// answer to this burst will most likely come too late as well, so the
	// decision does not wait for it (it still counts if it answers in time).
	// Unless that leaves fewer than a quorum to wait for: then nothing is
	// known to be wrong with the slow ones but with this client, and every
	// master gets its MasterTimeout.
	awaited := n
	for _, slow := range o.slow {
		if slow {
			awaited--
		}
	}
	if awaited < q {
		awaited = n
		clear(o.slow)
	}
	// Alone on the masters' connections, the burst reads its replies
	// itself (see pipe.Batch.Claim): no reader goroutine, no hand-over.
	// Otherwise the Group's driver serves it with the other callers'
	// bursts (see runDriven).
	o.fan.begin(wait, c.claimable(o.cmd.place), answers[o.command.answer].fits)
	o.fan.b.ReplayUntil = o.replayUntil(o.fan.start)
	o.fan.nat = o.natives()
	if o.fan.driven {
		return o.runDriven(awaited, done)
	}
	o.fan.sendAll(&o.cmd)
	br := burstResult{start: o.fan.start}
	timedOut := false
	// A waiting Lock's failed attempt hears every awaited master out: it
	// then knows who holds the key where (see contention).
	for awaited > 0 && !decided(&br, n, q) || o.waiting && awaited > 0 && br.ok < q {
		r, ev := o.fan.nextOf(o.undecidable(&br, awaited), done)
		switch ev {
		case fanReply:
			i := r.Tag
			if !o.slow[i] {
				awaited--
			}
			br.count(o.answer(r))
		case fanTimeout:
			timedOut = true
			awaited = 0 // the rest are settled below
		case fanDone:
			br.cancelled = true
			awaited = 0
		}
	}
	o.settle(timedOut, &br)
	br.took = time.Since(br.start)
	return br
}

// runDriven is run through the Group's driver (see pipe.Batch.Drive):
// the burst's commands go out with the other callers' in one write per
// master, and hear tallies the answers where they are read, waking the
// caller once, at the decision (or the deadline, or done).
func (o *op) runDriven(awaited int, done <-chan struct{}) burstResult {
	f := &o.fan
	f.sendAll(&o.cmd) // queued
	o.br = burstResult{start: f.start}
	o.awaited = awaited
	o.hungKnown = false
	f.b.Drive(f.deadline)
	why := f.b.Await(done)
	f.b.End(nil) // hear runs no more: o is the caller's again
	br := o.br
	br.cancelled = why == pipe.WokeDone
	hung := !decided(&br, len(o.res), o.c.quorum)
	if o.hungKnown {
		hung = o.hung
	}
	o.unanswered(why == pipe.WokeDeadline, hung, &br)
	br.took = time.Since(br.start)
	return br
}

// hear is a driven burst's answer function (pipe.Batch.Hear): it reads
// and tallies master r.Tag's answer as run's loop does, and reports
// whether the outcome is decided. An answer after the caller was woken
// (late) counts only when the burst hung, as in settle.
func (o *op) hear(r *pipe.Request, late bool) bool {
	if late {
		o.fan.noteMoved(r)
	} else if o.fan.heard(r) {
		return false
	}
	out := o.answer(r)
	n, q := len(o.res), o.c.quorum
	if late {
		if !o.hungKnown {
			o.hungKnown = true
			o.hung = !decided(&o.br, n, q)
		}
		if o.hung {
			o.br.count(out)
		}
		return false
	}
	if !o.slow[r.Tag] {
		o.awaited--
	}
	o.br.count(out)
	return !(o.awaited > 0 && !decided(&o.br, n, q) || o.waiting && o.awaited > 0 && o.br.ok < q)
}

// alwaysDriven, set by tests only: every round the driver may serve goes
// to it, none takes a lone caller's claim (see TestAllocsDriven, and
// VOLLEY_DRIVEN in TestMain for whole runs).
var alwaysDriven bool

// undecidable returns how many more answers the burst needs before its
// outcome may be decided: a quorum's yes, or one too many no's, whichever
// is nearer; at most awaited, and 1 while a waiting Lock hears every
// master out. The burst is woken once for them, not once per answer.
func (o *op) undecidable(br *burstResult, awaited int) int {
	if o.waiting {
		return 1
	}
	n, q := len(o.res), o.c.quorum
	return max(1, min(q-br.ok, n-q+1-br.taken-br.failed, awaited))
}

// answer reads and records master r.Tag's answer and returns its outcome.
func (o *op) answer(r *pipe.Request) Outcome {
	out, err := o.classify(r)
	return o.record(r.Tag, out, err, pipe.ArrivedAt(r))
}

// count adds one master's outcome to the burst's tally.
func (br *burstResult) count(out Outcome) {
	switch out {
	case OutcomeOK:
		br.ok++
	case OutcomeTaken:
		br.taken++
	default:
		br.failed++ // OutcomeUnfenced too: not counted for a fenced lock
	}
}

// settle deals with the masters that had not answered at the decision:
// each is abandoned, or, if its answer raced in, received and recorded.
func (o *op) settle(timedOut bool, br *burstResult) {
	hung := !decided(br, len(o.res), o.c.quorum)
	// Answers that raced with the decision are recorded for the caller's
	// picture (and release decisions). When the outcome was decided
	// without them they do not count. When it hung (MasterTimeout passed,
	// done closed, or only slow masters were left) they do: such a master
	// is neither silent nor failed, and leaving it out of the tally made
	// a burst whose every answer came just after the deadline read as all
	// masters answered and none said yes (an Unlock that released on
	// every master returned ErrNotHeld, a Lock attempt looked like
	// contention alone).
	o.fan.end(func(r *pipe.Request) {
		out := o.answer(r)
		if hung {
			br.count(out)
		}
	})
	o.unanswered(timedOut, hung, br)
}

// unanswered gives the masters that had not answered at the decision
// their outcome: a timeout, a cancelled wait, or slow.
func (o *op) unanswered(timedOut, hung bool, br *burstResult) {
	for i := range o.res {
		if o.res[i].Outcome != OutcomeNone {
			continue
		}
		switch {
		case timedOut:
			o.res[i].Outcome = OutcomeTimeout
			br.failed++
		case br.cancelled:
			o.res[i].Outcome = OutcomeCancelled
		case o.slow[i] && hung:
			// Not awaited, and the outcome hung on it.
			o.res[i].Outcome = OutcomeSlow
			br.failed++
		}
	}
}

// decided reports whether a burst's outcome is known: a quorum said yes,
// or so many said no or failed that a quorum is out of reach.
func decided(br *burstResult, n, q int) bool {
	return br.ok >= q || br.taken+br.failed > n-q
}

// record stores master i's answer, which arrived at at (zero for a
// failure: now), in o.res and returns its final outcome: an OK to a
// command that takes or keeps a lock, from a master the restart guard
// holds out, becomes OutcomeGuarded.
func (o *op) record(i int, out Outcome, err error, at time.Time) Outcome {
	now := at
	if now.IsZero() {
		now = time.Now()
	}
	res := &o.res[i]
	res.Latency, res.Err = now.Sub(o.fan.start), err
	if out == OutcomeOK && o.command.guarded {
		if since, until, g := o.c.guarded(o.c.masters[i], o.fan.sentTo[i], now); g {
			out = OutcomeGuarded
			res.GuardedSince, res.GuardedUntil = since, until
		}
	}
	res.Outcome = out
	return out
}

// releaseAfterFailure sends the release script to every master that said
// yes or did not answer for certain (a reply may be lost after the SET ran),
// without waiting: each Conn keeps commands in order, so the release runs
// after our SET on that master. A master that answered "taken" holds
// nothing of ours and is skipped. A release that wakes waiters must have
// been noted as the Client's own (waitRoom.noteOwn).
func (o *op) releaseAfterFailure(key string, keys []string, tok *token, wake bool) {
	o.encode(releaseCommand(keys != nil, wake), args{key: key, keys: keys, tok: tok})
	o.sendForget(true)
}

// replayUntil is until when a connection reset that drops o's command,
// sent at sent, sends it again after the reconnect (conn's
// Request.ReplayUntil): for a release, as long as the value it releases
// could still be on a master (taken at the latest by sent with a TTL of
// at most MaxTTL, which the masters' clocks may stretch by the drift
// allowance, plus a MasterTimeout for the command's way there); for any
// other command, never (the zero time).
func (o *op) replayUntil(sent time.Time) time.Time {
	if o.command == nil || !o.command.release {
		return time.Time{}
	}
	c := o.c
	return sent.Add(c.cfg.MaxTTL + c.drift(c.cfg.MaxTTL) + c.cfg.MasterTimeout)
}

// sendForget sends o.cmd (a release: its connection answers a NOSCRIPT
// that no one reads, see command.release) to
// every master, without waiting; with skipTaken, not to those whose
// outcome in o.res is OutcomeTaken (they hold nothing of ours).
func (o *op) sendForget(skipTaken bool) {
	for i := range o.c.masters {
		if skipTaken && o.res[i].Outcome == OutcomeTaken {
			continue
		}
		o.forget(i)
	}
}
