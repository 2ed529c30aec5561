package redlock

import (
	"strconv"
	"time"

	"github.com/volleylock/volley/internal/pipe"
)

// A held value keeps its copies while its quorum holds. An extension
// (Lock.Extend, Do's renewer) that a quorum granted within the validity
// may have found masters where the value is not (anymore): its key
// expired there while the master was cut off, or the master restarted
// empty. (Lock.Extend returns at its decision and knows the masters that
// answered by then; Do's renewer hears every master out.) Each of those
// masters is then sent the value again, without
// waiting: "SET key token NX PX left", where left is what remains of the
// extension's TTL, so the copy ends when the extended ones do. NX leaves
// a key that holds anything else as it is. So rotating minority faults do
// not wear a held value away: each master that comes back gets its copy
// at the next extension, where before two rotations could leave fewer
// than a quorum and lose a lock whose quorum never went away.
//
// Why it is safe (docs/design.md, "Restored copies", argues it at length):
// a copy is restored only after a quorum extended the value within its
// validity, when no other holder can have a quorum, and only where the key
// is absent; a restored copy is never counted as a vote (the extension's
// answer from that master was a no), so it extends no validity; it ends
// when the extension it follows ends (plus the time the SET takes to
// arrive); and the value's release, sent later on the same connections,
// removes it like any other copy.
//
// Only values that are the token under their key are restored: locks
// (Lock, LockMulti, RWMutex.Lock) and an election's key (not its leader's
// record). Semaphore permits and read locks, records inside sorted sets,
// are not.

// restoreKeys says which of a held value's keys an extension restores
// (command.restore).
type restoreKeys uint8

const (
	restoreNone  restoreKeys = iota
	restoreFirst             // the value's key (heldOp.key): an election's
	restoreAll               // every key (heldOp.keys, else heldOp.key): a lock
)

// restoreMask marks the masters to restore, a bit per master index: an
// extension's answers from masters past the 64th are not restored.
type restoreMask uint64

// add marks master i.
func (m *restoreMask) add(i int) {
	if i < 64 {
		*m |= 1 << i
	}
}

// has reports whether master i is marked.
func (m restoreMask) has(i int) bool { return i < 64 && m&(1<<i) != 0 }

// restoreCopies sends the copies of the value h describes, whose token is
// tok, to the masters in m, with left to live (see the comment above). It
// does not wait for the answers. A value whose command restores nothing,
// or with less than a millisecond left, is not restored.
func (c *Client) restoreCopies(h *heldOp, tok *token, left time.Duration, m restoreMask) {
	if m == 0 || h.cmd.restore == restoreNone || left < time.Millisecond {
		return
	}
	if h.cmd.restore == restoreAll && h.keys != nil {
		for _, k := range h.keys {
			c.restoreCopy(h.placed(), k, tok, left, m)
		}
		return
	}
	c.restoreCopy(h.placed(), h.key, tok, left, m)
}

// restoreCopy sends "SET key tok NX PX left" to the masters in m, key
// placed as name's keys are (see Client.placement).
func (c *Client) restoreCopy(name, key string, tok *token, left time.Duration, m restoreMask) {
	var w wire
	w.place = c.placement(name)
	w.setNX(c, key, tok, strconv.AppendInt(nil, left.Milliseconds(), 10))
	var scratch []byte
	for i := range c.masters {
		if !m.has(i) {
			continue
		}
		r := pipe.NewRequest()
		r.Cmd = append(r.Cmd[:0], c.forMaster(&w, i, &scratch)...)
		pipe.SetCheck(r, fitsSet)
		c.connFor(i, w.place).SendForget(r)
	}
}
