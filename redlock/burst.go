package redlock

import (
	"strconv"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/scripts"
	"github.com/volleylock/volley/resp"
)

// op is the reusable state of one operation on all masters: the requests,
// the channel their completions arrive on, the timer, and each master's
// result. A Client pools ops so that steady-state operations allocate
// nothing. An op is used by one goroutine at a time. What waiting and
// fencing learn from a burst's answers is theirs (waitState in
// contention.go, fenceState in fence.go), embedded so that the burst can
// store it as the answers come.
type op struct {
	waitState
	fenceState

	c      *Client
	reqs   []*conn.Request // per master; nil after a request was abandoned
	notify chan *conn.Request
	timer  *time.Timer
	res    []MasterResult
	// last is res of the latest decided failed attempt of a Lock (when
	// hasLast): what the masters really said, which the error keeps when
	// ctx ends a later burst before they answer (see learned).
	last    []MasterResult
	hasLast bool
	start   time.Time // when the burst left: every master's latency counts from it
	evaled  []bool    // a NOSCRIPT was answered with EVAL for this master
	slow    []bool    // the master's latest reply came after MasterTimeout: not awaited
	script  bool      // the lock burst runs a script (multi-key or waiting, see encode)

	cmd []byte // the encoded command of the burst
	alt []byte // the EVAL form of a script command, for NOSCRIPT
	num []byte // scratch for formatting the TTL
}

func (c *Client) newOp() *op {
	n := len(c.masters)
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &op{
		waitState:  newWaitState(n),
		fenceState: newFenceState(n),

		c:      c,
		reqs:   make([]*conn.Request, n),
		notify: make(chan *conn.Request, n),
		timer:  t,
		res:    make([]MasterResult, n),
		last:   make([]MasterResult, n),
		evaled: make([]bool, n),
		slow:   make([]bool, n),
	}
}

func (c *Client) getOp() *op  { return c.ops.Get().(*op) }
func (c *Client) putOp(o *op) { c.ops.Put(o) }

// encode writes the burst's command (and the EVAL fallback for scripts):
// for key alone when keys is nil, else for the lock on keys (sorted,
// deduplicated, see LockMulti) with the multi-key scripts. A Lock that
// waits (o.waiting) sends scripts.LockWait instead of SET; a fenced Lock
// (Config.Fencing) sends scripts.FenceLock, whatever its keys.
func (o *op) encode(kind Op, key string, keys []string, tok *token, ttl time.Duration) {
	o.num = strconv.AppendInt(o.num[:0], ttl.Milliseconds(), 10)
	o.script = kind == OpLock && (keys != nil || o.waiting || o.c.cfg.Fencing)
	o.round = 0
	switch {
	case kind == OpLock && o.c.cfg.Fencing:
		o.round = fenceLockRound
		o.cmd = appendScript(o.cmd[:0], "EVALSHA", scripts.FenceLock.SHA, key, keys, fenceKey, tok, o.num)
		o.alt = appendScript(o.alt[:0], "EVAL", scripts.FenceLock.Source, key, keys, fenceKey, tok, o.num)
	case kind == OpLock && keys == nil && o.waiting:
		o.cmd = appendScript(o.cmd[:0], "EVALSHA", scripts.LockWait.SHA, key, nil, "", tok, o.num)
		o.alt = appendScript(o.alt[:0], "EVAL", scripts.LockWait.Source, key, nil, "", tok, o.num)
	case kind == OpLock && keys == nil:
		o.cmd = resp.AppendArrayHeader(o.cmd[:0], 6)
		o.cmd = resp.AppendBulkString(o.cmd, "SET")
		o.cmd = resp.AppendBulkString(o.cmd, key)
		o.cmd = resp.AppendBulk(o.cmd, tok[:])
		o.cmd = resp.AppendBulkString(o.cmd, "NX")
		o.cmd = resp.AppendBulkString(o.cmd, "PX")
		o.cmd = resp.AppendBulk(o.cmd, o.num)
	case kind == OpLock:
		o.cmd = appendScript(o.cmd[:0], "EVALSHA", scripts.LockMulti.SHA, key, keys, "", tok, o.num)
		o.alt = appendScript(o.alt[:0], "EVAL", scripts.LockMulti.Source, key, keys, "", tok, o.num)
	case kind == OpExtend && keys == nil:
		o.cmd = appendScript(o.cmd[:0], "EVALSHA", scripts.Extend.SHA, key, nil, "", tok, o.num)
		o.alt = appendScript(o.alt[:0], "EVAL", scripts.Extend.Source, key, nil, "", tok, o.num)
	case kind == OpExtend:
		o.cmd = appendScript(o.cmd[:0], "EVALSHA", scripts.ExtendMulti.SHA, key, keys, "", tok, o.num)
		o.alt = appendScript(o.alt[:0], "EVAL", scripts.ExtendMulti.Source, key, keys, "", tok, o.num)
	case kind == OpUnlock:
		// EVAL, not EVALSHA: a release answered NOSCRIPT after the decision
		// (its master lost its scripts, and answered last) would go unseen,
		// and the key would stay there for its TTL.
		script := scripts.Release.Source
		if keys != nil {
			script = scripts.ReleaseMulti.Source
		}
		o.cmd = appendScript(o.cmd[:0], "EVAL", script, key, keys, "", tok, nil)
	}
}

// encodeQuietRelease writes the release of a failed attempt: scripts.Release
// without the wake-up (see scripts.ReleaseQuiet).
func (o *op) encodeQuietRelease(key string, keys []string, tok *token) {
	script := scripts.ReleaseQuiet.Source
	if keys != nil {
		script = scripts.ReleaseMultiQuiet.Source
	}
	o.cmd = appendScript(o.cmd[:0], "EVAL", script, key, keys, "", tok, nil)
}

// encodeHandover writes the burst that passes key from the holder of old
// to that of next, for ttl (scripts.Handover).
func (o *op) encodeHandover(key string, old, next *token, ttl time.Duration) {
	o.num = strconv.AppendInt(o.num[:0], ttl.Milliseconds(), 10)
	o.script, o.round = false, 0
	o.cmd = appendHandover(o.cmd[:0], "EVALSHA", scripts.Handover.SHA, key, old, next, o.num)
	o.alt = appendHandover(o.alt[:0], "EVAL", scripts.Handover.Source, key, old, next, o.num)
}

// appendHandover encodes "EVAL[SHA] script 1 key old next ttl".
func appendHandover(dst []byte, verb, script, key string, old, next *token, ttl []byte) []byte {
	dst = resp.AppendArrayHeader(dst, 7)
	dst = resp.AppendBulkString(dst, verb)
	dst = resp.AppendBulkString(dst, script)
	dst = resp.AppendBulkString(dst, "1")
	dst = resp.AppendBulkString(dst, key)
	dst = resp.AppendBulk(dst, old[:])
	dst = resp.AppendBulk(dst, next[:])
	return resp.AppendBulk(dst, ttl)
}

// appendScript encodes "EVAL[SHA] script numkeys key... token [arg]": the
// keys are keys, or key alone when keys is nil, then last when not "".
func appendScript(dst []byte, verb, script, key string, keys []string, last string, tok *token, ttl []byte) []byte {
	nkeys := max(1, len(keys))
	if last != "" {
		nkeys++
	}
	n := 4 + nkeys
	if ttl != nil {
		n++
	}
	dst = resp.AppendArrayHeader(dst, n)
	dst = resp.AppendBulkString(dst, verb)
	dst = resp.AppendBulkString(dst, script)
	dst = resp.AppendBulkInt(dst, int64(nkeys))
	if keys == nil {
		dst = resp.AppendBulkString(dst, key)
	}
	for _, k := range keys {
		dst = resp.AppendBulkString(dst, k)
	}
	if last != "" {
		dst = resp.AppendBulkString(dst, last)
	}
	dst = resp.AppendBulk(dst, tok[:])
	if ttl != nil {
		dst = resp.AppendBulk(dst, ttl)
	}
	return dst
}

// burstResult sums up a burst.
type burstResult struct {
	start     time.Time // when the first command left: validity counts from here
	ok        int       // masters that said yes and count toward the quorum
	taken     int       // masters that said no (held by another / not ours)
	failed    int       // timeouts, connection and server errors, guarded
	cancelled bool      // done closed before the decision
}

// run sends o.cmd to every master in one burst, then collects answers until
// the outcome is decided: a quorum said yes, or so many said no or failed
// that a quorum is out of reach, or MasterTimeout passed, or done closed, or
// only slow masters (see OutcomeSlow) are left to answer. Masters still
// pending then are abandoned (their replies are consumed and
// recycled by their Conn). It fills o.res.
func (o *op) run(kind Op, done <-chan struct{}) burstResult {
	c := o.c
	n, q := len(c.masters), c.quorum
	var br burstResult
	// Alone on the masters' connections, the burst reads its replies
	// itself (see conn.Poller): no reader goroutine, no hand-over.
	direct := c.poller.Claim()
	br.start = time.Now()
	o.start = br.start
	for i, m := range c.masters {
		r := o.reqs[i]
		if r == nil {
			r = conn.NewRequest()
			o.reqs[i] = r
		}
		r.Cmd = append(r.Cmd[:0], o.cmd...)
		r.Tag = i
		o.res[i] = MasterResult{Addr: m.addr}
		o.evaled[i] = false
		o.hasHolder[i] = false
		o.hasCounter[i] = false
		o.slow[i] = m.conn.ReplyLatency() > c.cfg.MasterTimeout
		m.conn.Send(r, o.notify)
	}
	// A master whose latest reply came later than MasterTimeout is slow: its
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
	if !direct {
		o.timer.Reset(c.cfg.MasterTimeout)
	}
	deadline := br.start.Add(c.cfg.MasterTimeout)
	timedOut := false
	// A waiting Lock's failed attempt hears every awaited master out: it
	// then knows who holds the key where (see contention).
	for awaited > 0 && !decided(&br, n, q) || o.waiting && awaited > 0 && br.ok < q {
		r, ev := o.next(&direct, deadline, done)
		switch ev {
		case burstReply:
			i := r.Tag
			out, err, noScript := o.classify(kind, r)
			if noScript && !o.evaled[i] {
				// The master lost its script cache (a restart): load and
				// run the script in one EVAL, within the same deadline.
				o.evaled[i] = true
				r.Cmd = append(r.Cmd[:0], o.alt...)
				c.masters[i].conn.Send(r, o.notify)
				continue
			}
			if !o.slow[i] {
				awaited--
			}
			if out == OutcomeTaken && o.script {
				o.noteHolder(i, r)
			}
			switch o.record(kind, i, out, err) {
			case OutcomeOK:
				br.ok++
			case OutcomeTaken:
				br.taken++
			default:
				br.failed++ // OutcomeUnfenced too: not counted for a fenced lock
			}
		case burstTimeout:
			timedOut = true
			awaited = 0 // the rest are settled below
		case burstDone:
			br.cancelled = true
			awaited = 0
		}
	}
	if direct {
		o.settle(kind, timedOut, &br)
		c.poller.Release()
		return br
	}
	o.timer.Stop()
	o.settle(kind, timedOut, &br)
	return br
}

// What next waited for.
const (
	burstReply   = iota // a request completed
	burstTimeout        // MasterTimeout passed
	burstDone           // done closed
)

// next waits for the burst's next completed request, until deadline (the
// op's timer, without the claim) or done. With the claim (direct), it
// reads the masters' replies itself until the claim has waited its share
// (conn.MaxClaimWait, short enough that done is noticed in time: an epoll
// wait cannot select on a channel); it then releases the claim (direct
// becomes false) and waits for the rest as without one.
func (o *op) next(direct *bool, deadline time.Time, done <-chan struct{}) (*conn.Request, int) {
	for *direct {
		select {
		case r := <-o.notify:
			return r, burstReply
		case <-done:
			return nil, burstDone
		default:
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, burstTimeout
		}
		if !o.c.poller.Poll(wait) {
			// Slow masters, or a wait for every one: their replies are
			// the reader goroutines' from here on.
			o.c.poller.Release()
			*direct = false
			o.timer.Reset(wait)
		}
	}
	select {
	case r := <-o.notify:
		return r, burstReply
	case <-o.timer.C:
		return nil, burstTimeout
	case <-done:
		return nil, burstDone
	}
}

// settle deals with the masters that had not answered at the decision:
// each is abandoned, or, if its answer raced in, received and recorded.
func (o *op) settle(kind Op, timedOut bool, br *burstResult) {
	hung := !decided(br, len(o.reqs), o.c.quorum)
	late := 0
	for i, r := range o.reqs {
		if o.res[i].Outcome != OutcomeNone {
			continue
		}
		if r.Abandon() {
			o.reqs[i] = nil // its Conn owns it now
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
			continue
		}
		late++ // completed while we decided: it is on its way to notify
	}
	for ; late > 0; late-- {
		r := <-o.notify
		out, err, _ := o.classify(kind, r)
		// Recorded for the caller's picture (and release decisions) but not
		// counted: the outcome was decided without it.
		if out == OutcomeTaken && o.script {
			o.noteHolder(r.Tag, r)
		}
		o.record(kind, r.Tag, out, err)
	}
}

// decided reports whether a burst's outcome is known: a quorum said yes,
// or so many said no or failed that a quorum is out of reach.
func decided(br *burstResult, n, q int) bool {
	return br.ok >= q || br.taken+br.failed > n-q
}

// record stores master i's answer in o.res and returns its final outcome:
// an OK to acquire or extend from a master the restart guard holds out
// becomes OutcomeGuarded.
func (o *op) record(kind Op, i int, out Outcome, err error) Outcome {
	now := time.Now()
	res := &o.res[i]
	res.Latency, res.Err = now.Sub(o.start), err
	if out == OutcomeOK && kind != OpUnlock {
		if since, until, g := o.c.guarded(o.c.masters[i], now); g {
			out = OutcomeGuarded
			res.GuardedSince, res.GuardedUntil = since, until
		}
	}
	res.Outcome = out
	return out
}

// classify reads a completed request's answer: SET's for a single-key lock
// (no script); a lock script's 1, or {holder id, pttl} when taken; a
// script's 1 or 0 otherwise; the fence rounds' answers (see fence.go).
// noScript reports a -NOSCRIPT (a server error, worth one EVAL).
func (o *op) classify(kind Op, r *conn.Request) (out Outcome, err error, noScript bool) {
	if err := r.Err(); err != nil {
		return OutcomeConnError, err, false
	}
	vals := r.Reply()
	if len(vals) == 0 {
		return OutcomeServerError, errEmptyReply, false
	}
	v := &vals[0]
	if v.IsError() {
		return OutcomeServerError, v.Err(), string(v.ErrorPrefix()) == "NOSCRIPT"
	}
	switch {
	case o.round != 0:
		return o.classifyFence(r.Tag, vals)
	case kind == OpLock && !o.script:
		if v.Null {
			return OutcomeTaken, nil, false
		}
		if v.Type == resp.TypeSimpleString && string(v.Bytes) == "OK" {
			return OutcomeOK, nil, false
		}
	case kind == OpLock:
		if v.Type == resp.TypeInteger && v.Int == 1 {
			return OutcomeOK, nil, false
		}
		if v.Type == resp.TypeArray && v.Int == 2 && len(vals) == 3 {
			return OutcomeTaken, nil, false
		}
	default:
		if v.Type == resp.TypeInteger {
			if v.Int == 1 {
				return OutcomeOK, nil, false
			}
			if v.Int == 0 {
				return OutcomeTaken, nil, false
			}
		}
	}
	return OutcomeServerError, errUnexpectedReply, false
}

// noteHolder stores what a lock script's "taken" answer from master i
// says: the holder's id and the key's PTTL (see scripts.LockWait).
func (o *op) noteHolder(i int, r *conn.Request) {
	vals := r.Reply()
	if len(vals) != 3 || vals[1].Type != resp.TypeBulk || vals[2].Type != resp.TypeInteger {
		return
	}
	o.holder[i] = [releaseIDLen]byte{}
	copy(o.holder[i][:], vals[1].Bytes)
	o.pttl[i] = time.Duration(vals[2].Int) * time.Millisecond
	o.hasHolder[i] = true
}
