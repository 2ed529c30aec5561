package fakeredis

import (
	"strings"
	"time"
)

// Fault describes how the server misbehaves for a command. Set one with
// Server.SetFault. When several knobs are set: Hang wins over everything.
// Otherwise CloseBefore, else Raw, else NoScript (on EVALSHA) replaces the
// command; if none of them does, the command runs. Latency then delays what
// follows (the close, or the write), and CloseMidReply cuts the reply of a
// command that ran.
type Fault struct {
	// Latency delays the reply: the command runs when it is read, its reply
	// is written Latency later. Replies to earlier commands on the connection
	// are written first; later pipelined commands wait, so replies stay in
	// order. Other connections are unaffected.
	Latency time.Duration
	// Hang reads the command and never answers it nor anything after it on
	// that connection. The command does not run. The connection stays hung
	// until the client closes it, or Close or Restart closes it (or, if it
	// has subscribed, KillSubscribers, or the messages piling up for it; see
	// the package doc); ClearFaults does not wake it.
	Hang bool
	// CloseBefore closes the connection instead of answering; the command
	// does not run. Replies to earlier commands are written first.
	CloseBefore bool
	// CloseMidReply runs the command, writes the first half of its reply
	// (len/2 bytes, at least one) and closes the connection.
	CloseMidReply bool
	// Raw, if not nil, is written instead of the reply, byte for byte; the
	// command does not run. Use it for malformed frames. The server keeps
	// the slice: do not modify it while the fault is set.
	Raw []byte
	// NoScript answers EVALSHA with Redis' NOSCRIPT error without running
	// it, as a server that lost its script cache would. It does nothing to
	// other commands, and a fault with only NoScript set does not match them.
	NoScript bool
	// Times limits the fault to the next Times commands it matches, after
	// which it is removed. Zero means until ClearFaults or a later SetFault
	// for the same name.
	Times int
}

// faultEntry is a Fault in effect and the uses it has left (0: unlimited).
type faultEntry struct {
	f    Fault
	left int
}

// SetFault makes the server misbehave for the command cmd, a command name
// such as "SET" or "EVALSHA" (case-insensitive; the first word only:
// "SCRIPT", not "SCRIPT LOAD"), or "*" for every command. A fault set for a name
// replaces the earlier one for that name; a name's own fault takes
// precedence over "*". The zero Fault removes the fault for cmd.
// Faults apply to commands read after SetFault returns, and survive Restart.
func (s *Server) SetFault(cmd string, f Fault) {
	key := strings.ToLower(cmd)
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	if f.isZero() {
		delete(s.faults, key)
	} else {
		s.faults[key] = &faultEntry{f: f, left: f.Times}
	}
	s.faultCount.Store(int32(len(s.faults)))
}

// ClearFaults removes every fault. Connections already hung stay hung.
func (s *Server) ClearFaults() {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	clear(s.faults)
	s.faultCount.Store(0)
}

func (f *Fault) isZero() bool {
	return f.Latency == 0 && !f.Hang && !f.CloseBefore && !f.CloseMidReply &&
		f.Raw == nil && !f.NoScript
}

// appliesTo reports whether the fault changes anything for the command
// whose lower-case name is name.
func (f *Fault) appliesTo(name []byte) bool {
	if f.Latency > 0 || f.Hang || f.CloseBefore || f.CloseMidReply || f.Raw != nil {
		return true
	}
	return f.NoScript && string(name) == "evalsha"
}

// takeFault returns the fault for the command whose lower-case name is name,
// using up one of its Times.
func (s *Server) takeFault(name []byte) (Fault, bool) {
	if s.faultCount.Load() == 0 {
		return Fault{}, false
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	key := string(name)
	e := s.faults[key]
	if e == nil {
		key = "*"
		e = s.faults[key]
	}
	if e == nil || !e.f.appliesTo(name) {
		return Fault{}, false
	}
	if e.left > 0 {
		e.left--
		if e.left == 0 {
			delete(s.faults, key)
			s.faultCount.Store(int32(len(s.faults)))
		}
	}
	return e.f, true
}
