package pipe

import "github.com/volleylock/volley/resp"

// A ticket is a driven round's command written with no Request: the
// driver copies the slot's command (see Batch.Queue) into its write to
// the slot's Conn, and the socket owes its reply to an entry that names
// the round and the slot (see entry). The answer goes to the round's Hear
// on the goroutine that reads it (see Batch.heardTicket), or to no one
// once the round has ended: the round's generation (Batch.gen) tells.
//
// So no memory but the round's own is touched per command: a Request per
// command, pooled and handed between the caller, the driver and the
// reader, cost more than the commands' bytes (a Lock+Unlock at 256
// goroutines, see docs/driver.md).
//
// Where the socket cannot take the round's commands at once (it is being
// written, the master is behind, down or stalled, or MaxPending would
// pass), they go as Requests, the way of every other command (see
// sendRound). A staged round's End waits until the driver has handed its
// commands to their Conns (see Batch.endDriven), so a ticket is never of
// a round that ended before it was written. What a Request does on its
// own a ticket does too: its
// reply check, the lag's clock (when it was written), NOSCRIPT answered
// with EVAL (see deliverTicket), and the replay of a command that asked
// for it, whose bytes the Conn keeps while it is owed (see
// replayLog).

// staged is a command of a driven round that the driver has copied
// into its write to a Conn (see driver.stage): bytes start to end of
// that write, and its entry.
type staged struct {
	entry
	start, end int
	prepares   bool // a command written right before the next one that it prepares (QueueAfter)
}

// sendTickets puts the commands of tix, staged in buf in that order, in
// flight as tickets and writes buf, when the socket can take them at
// once; otherwise it sends them as Requests (see sendRound), made in
// reqs (the caller's scratch, handed back). buf stays the caller's.
func (c *Conn) sendTickets(buf []byte, tix []staged, at int64, reqs []*Request) []*Request {
	c.mu.Lock()
	s := c.sock
	if !c.up || s.det == nil || s.writing || len(c.queue) > 0 || c.late(at) || c.stalled(at) ||
		c.inflight.len()+len(tix) > c.opts.MaxPending {
		c.mu.Unlock()
		reqs = requestsOf(reqs[:0], buf, tix, at)
		c.sendRound(reqs, at)
		clear(reqs)
		return reqs[:0]
	}
	s.needReader()
	s.writing = true
	for i := range tix {
		t := &tix[i]
		if t.replayBy > 0 {
			t.logAt, t.logLen = c.logForReplay(buf[t.start:t.end]), int32(t.end-t.start)
		}
		c.inflight.pushEntry(t.entry)
	}
	c.mu.Unlock()
	c.writeRound(s, buf, false)
	return reqs
}

// requestsOf appends to reqs the Requests of tix, staged in buf, armed
// as sent at at, in order: each command the Request of its round's slot,
// each that goes with one (forget) a Request the Conn recycles once
// answered.
func requestsOf(reqs []*Request, buf []byte, tix []staged, at int64) []*Request {
	for i := range tix {
		t := &tix[i]
		r := NewRequest()
		r.Cmd = append(r.Cmd[:0], buf[t.start:t.end]...)
		r.Tag = int(t.slot)
		r.check = t.check
		if t.replayBy > 0 {
			r.ReplayUntil = monoTime(t.replayBy)
		}
		r.arm(nil, at)
		if t.forget {
			r.forget = true
			r.state.Store(stateAbandoned) // the Conn's: it recycles it once answered or failed
		} else {
			r.batch, r.driven, r.gen = t.b, true, t.gen
		}
		if i > 0 && tix[i-1].prepares {
			reqs[len(reqs)-1].prepares = r
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// replayLog holds the commands of the tickets in flight that asked for
// replay (Request.ReplayUntil), oldest first, so that a reset can keep
// them for the next connect (see keepTicketForReplay) after their rounds
// have ended and their Batches went on: log[i] is at logBase+i, and the
// oldest still owed starts at logHead. Guarded by the Conn's mu.
type replayLog struct {
	log              []byte
	logBase, logHead int64
}

// logForReplay appends cmd to the replay log and returns where it is
// (c.mu held). The log drops what is no longer owed once that is at
// least half of it.
func (c *Conn) logForReplay(cmd []byte) int64 {
	l := &c.replayLog
	if done := l.logHead - l.logBase; done > 0 && done >= int64(len(l.log))/2 {
		n := copy(l.log, l.log[done:])
		l.log, l.logBase = l.log[:n], l.logHead
	}
	at := l.logBase + int64(len(l.log))
	l.log = append(l.log, cmd...)
	return at
}

// logged returns ticket e's command in the replay log (c.mu held), and
// marks it no longer owed when popped: e is the oldest owed.
func (c *Conn) logged(e *entry, popped bool) []byte {
	l := &c.replayLog
	from := e.logAt - l.logBase
	cmd := l.log[from : from+int64(e.logLen)]
	if popped {
		l.logHead = e.logAt + int64(e.logLen)
	}
	return cmd
}

// keepTicketForReplay is keepForReplay for ticket e (c.mu held).
func (c *Conn) keepTicketForReplay(e *entry, now int64) {
	if e.logLen > 0 {
		c.keepReplay(c.logged(e, false), e.replayBy, now)
	}
}

// clearReplayLog empties the replay log once nothing is owed (c.mu
// held).
func (c *Conn) clearReplayLog() {
	l := &c.replayLog
	l.logBase += int64(len(l.log))
	l.logHead = l.logBase
	l.log = l.log[:0]
}

// ticketPopped is what deliver does for ticket e, just taken off
// inflight for the reply vals (c.mu held): it marks e's logged command
// as no longer owed, and returns a Request of it when the reply is a
// NOSCRIPT that deliverTicket may answer with EVAL (nil otherwise).
func (c *Conn) ticketPopped(e *entry, vals []resp.Value) *Request {
	if e.logLen == 0 {
		return nil
	}
	cmd := c.logged(e, true)
	if c.scripts == nil || !isNoScript(vals) {
		return nil
	}
	r := NewRequest()
	r.Cmd = append(r.Cmd[:0], cmd...)
	return r
}

// deliverTicket is deliver for ticket e, with logged from ticketPopped;
// false when the socket failed.
func (s *socket) deliverTicket(e *entry, logged *Request, vals []resp.Value, now int64) bool {
	c := s.c
	if e.check != nil && !e.check(vals) {
		if logged != nil {
			logged.recycle()
		}
		err := &Error{Addr: c.opts.Addr, Op: OpRead, Err: ErrReplyMismatch}
		c.fail(s, err)
		if !e.forget {
			e.b.heardTicket(e, nil, err, 0)
		}
		return false
	}
	c.latency.Store(now - e.sent)
	if e.forget {
		return true
	}
	if c.scripts != nil && isNoScript(vals) {
		if r := e.b.ticketRequest(e, logged); r != nil {
			if c.evalInstead(s, r, now) {
				return true // r goes in e's place: its answer is heard
			}
			r.recycle()
		}
	}
	e.b.heardTicket(e, vals, nil, now)
	return true
}

// ticketRequest makes ticket e's command a Request of e's slot, armed as
// e was written, for evalInstead: logged (the replay log's copy) when e
// asked for replay, else a copy of the slot's command while e's round
// goes on; nil when neither.
func (b *Batch) ticketRequest(e *entry, logged *Request) *Request {
	r := logged
	if r == nil {
		b.mu.Lock()
		if e.gen == b.gen.Load() && b.sent[e.slot] {
			r = NewRequest()
			r.Cmd = append(r.Cmd[:0], b.queue[e.slot].cmd...)
		}
		b.mu.Unlock()
		if r == nil {
			return nil
		}
	}
	r.Tag = int(e.slot)
	r.check = e.check
	if e.replayBy > 0 {
		r.ReplayUntil = monoTime(e.replayBy)
	}
	r.batch, r.driven, r.gen = b, true, e.gen
	r.arm(nil, e.sent)
	return r
}
