package pipe

import "time"

// maxReplays bounds the requests a Conn keeps to send again after a reset
// (see Request.ReplayUntil); past it the oldest kept one is dropped.
const maxReplays = 4096

// replay is a copy of a request that a reset dropped before its reply
// came, kept to be sent again after the next connect (see
// Request.ReplayUntil).
type replay struct {
	cmd   []byte
	until int64 // a monoNow reading: not sent again from then on
}

// replayDeadline converts a Request's ReplayUntil to a monoNow reading,
// 0 for none. A time without a monotonic reading is converted by the wall
// clock.
func replayDeadline(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(int64(t.Sub(epoch)), 1)
}

// keepForReplay keeps a copy of r's command when r asked for replay and
// its deadline is after now (see Request.ReplayUntil). c.mu must be held;
// r must still be the Conn's (not completed).
func (c *Conn) keepForReplay(r *Request, now int64) {
	c.keepReplay(r.Cmd, r.replayBy, now)
}

// keepReplay keeps a copy of cmd to send again after the next connect,
// until until (a monoNow reading), when that is after now. c.mu must be
// held.
func (c *Conn) keepReplay(cmd []byte, until, now int64) {
	if until <= now {
		return
	}
	if len(c.replays) == maxReplays {
		copy(c.replays, c.replays[1:])
		c.replays = c.replays[:maxReplays-1]
	}
	c.replays = append(c.replays, replay{cmd: append([]byte(nil), cmd...), until: until})
}

// sendReplays sends again, after a connect, the requests that earlier
// resets dropped and whose deadline has not passed, as SendForget does;
// each keeps its deadline, so a reset that drops it again keeps it again.
func (c *Conn) sendReplays() {
	c.mu.Lock()
	kept := c.replays
	c.replays = nil
	c.mu.Unlock()
	now := monoNow()
	for _, k := range kept {
		if k.until <= now {
			continue
		}
		r := NewRequest()
		r.Cmd = append(r.Cmd[:0], k.cmd...)
		r.ReplayUntil = monoTime(k.until)
		c.SendForget(r)
	}
}

// kept reports how many requests the Conn keeps to send again after its
// next connect (see Request.ReplayUntil).
func (c *Conn) kept() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.replays)
}
