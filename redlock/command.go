package redlock

import (
	"slices"
	"strconv"
	"time"

	"github.com/volleylock/volley/internal/scripts"
	"github.com/volleylock/volley/resp"
)

// A command is what one kind of burst sends to every master and how its
// answers read. Each operation chooses its command once (lockCommand,
// extendCommand, releaseCommand); encoding and reading the answers then
// follow the command, not the operation's features.
type command struct {
	// script is the command's Lua script; nil for a plain
	// "SET key token NX PX ttl".
	script *scripts.Script
	// enroll: the attempt enrolls this Client among the key's waiters
	// (see waiters.go): its enrolment (call.enrolment) follows the TTL.
	enroll bool
	// release: the command gives a held value up, checked against its
	// token, so running it twice is running it once. A connection reset
	// that drops it sends it again after the reconnect (see
	// op.replayUntil), and a NOSCRIPT answer to its EVALSHA is answered
	// by the connection with the EVAL form also when it comes after the
	// decision, when nobody reads it (see conn.Request.ReplayUntil).
	release bool
	// fenceKey: the fencing counter's key follows the lock's keys. Over a
	// Redis Cluster the command's script is then vouched, the cluster
	// form of script (see scripts.FenceLockVouched), and the counter's
	// key, the run key and the unsure hash follow (fenceTail).
	fenceKey bool
	vouched  *scripts.Script
	// arg: an argument follows the token, or the id (a TTL, a fence
	// token, a release's turn cutoff, or the hand-over's next token,
	// scripts.Handover).
	arg bool
	// arg2: a second argument follows arg: a flag ("1" or "0": a writer
	// that waits, scripts.RWLock; a release that wakes,
	// scripts.SemRelease), a permit's index (scripts.SemAcquire), the
	// number of permits (scripts.SemExtend) or the hand-over's TTL.
	arg2 bool
	// propose: a proposed fence token follows (scripts.FenceLock, and the
	// fenced forms of scripts.RWLock and scripts.SemAcquire).
	propose bool
	// guarded: a yes from a master the restart guard holds out does not
	// count (see Client.guarded): the command takes or keeps a lock.
	guarded bool
	// answer is the shape of a master's answer.
	answer answerShape
	// batch is, for an extension, the script that extends many held
	// values of this command in one call (Do's renewer, see renew.go);
	// each value's keys from batchFrom on (batchKeys of them, or all
	// when 0) are its entry's keys.
	batch     *scripts.Script
	batchFrom int
	batchKeys int
	// restore: which keys of a held value a granted extension copies
	// again to masters that no longer have them (see restore.go).
	restore restoreKeys
	// natives are the command's forms without Lua, in order of
	// preference, for a lock on one key: a master whose server has one
	// gets the first it has instead of the script (see native.go), and
	// its answer has that form's shape.
	natives []nativeVerb
	// wake: the command publishes the release to the key's waiters by
	// the release's id (token.releaseID): the script takes the id after
	// the token and publishes it without hashing the token
	// (scripts.Release), and a native form is followed, in the same
	// write, by the SPUBLISH of that id. The script publishes only when
	// it deleted the key; the SPUBLISH goes whatever the delete found,
	// and a release that found the key not its own wakes a waiter for
	// nothing (an attempt, against a lost wake-up's RetryDelay).
	wake bool
}

// The commands.
var (
	cmdSet           = command{arg: true, guarded: true, answer: answerSet}
	cmdLockWait      = command{script: &scripts.LockWait, enroll: true, arg: true, guarded: true, answer: answerLock}
	cmdLockMulti     = command{script: &scripts.LockMulti, arg: true, guarded: true, answer: answerLock}
	cmdFenceLock     = command{script: &scripts.FenceLock, fenceKey: true, vouched: &scripts.FenceLockVouched, arg: true, propose: true, guarded: true, answer: answerFenceLock}
	cmdFenceWrite    = command{script: &scripts.FenceWrite, fenceKey: true, vouched: &scripts.FenceWriteVouched, arg: true, guarded: true, answer: answerFenceWrite}
	cmdExtend        = command{script: &scripts.Extend, arg: true, guarded: true, answer: answerVote, batch: &scripts.ExtendBatch, natives: extendNatives, restore: restoreAll}
	cmdExtendMulti   = command{script: &scripts.ExtendMulti, arg: true, guarded: true, answer: answerVote, batch: &scripts.ExtendBatch, restore: restoreAll}
	cmdHandover      = command{script: &scripts.Handover, arg: true, arg2: true, guarded: true, answer: answerVote}
	cmdRelease       = command{script: &scripts.Release, release: true, arg: true, answer: answerRelease, natives: releaseNatives, wake: true} // arg: a turn's cutoff, or none
	cmdWake          = command{script: &scripts.Wake, answer: answerVote}
	cmdReleaseMulti  = command{script: &scripts.ReleaseMulti, release: true, answer: answerVote}
	cmdReleaseQuiet  = command{script: &scripts.ReleaseQuiet, release: true, answer: answerVote, natives: releaseNatives}
	cmdReleaseRejoin = command{script: &scripts.ReleaseQuiet, release: true, arg: true, enroll: true, answer: answerVote} // a failed waiting attempt's: arg is its TTL (see lockKind.releaseFailed)
	cmdReleaseMultiQ = command{script: &scripts.ReleaseMultiQuiet, release: true, answer: answerVote}
	// A semaphore's: SemAcquire's and SemExtend's arg2 is the permit's
	// index and the number of permits; SemRelease's arg is the index.
	cmdSemAcquire       = command{script: &scripts.SemAcquire, arg: true, arg2: true, guarded: true, answer: answerPermit}
	cmdSemAcquireFenced = command{script: &scripts.SemAcquire, fenceKey: true, vouched: &scripts.SemAcquireVouched, arg: true, arg2: true, propose: true, guarded: true, answer: answerFencePermit}
	cmdSemExtend        = command{script: &scripts.SemExtend, arg: true, arg2: true, guarded: true, answer: answerVote, batch: &scripts.SemExtendBatch}
	cmdSemRelease       = command{script: &scripts.SemRelease, release: true, arg: true, arg2: true, answer: answerVote}
	// A read-write lock's: its writer's and readers' attempts answer as
	// LockWait does, a fenced writer's as FenceLock does; a writer's lock
	// is then extended and released as a Lock.
	cmdRWLock       = command{script: &scripts.RWLock, arg: true, arg2: true, guarded: true, answer: answerLock}
	cmdRWLockFenced = command{script: &scripts.RWLock, fenceKey: true, vouched: &scripts.RWLockVouched, arg: true, arg2: true, propose: true, guarded: true, answer: answerFenceLock}
	cmdRWRLock      = command{script: &scripts.RWRLock, arg: true, arg2: true, guarded: true, answer: answerLock}
	cmdRWRExtend    = command{script: &scripts.RWRExtend, arg: true, guarded: true, answer: answerVote, batch: &scripts.RWRExtendBatch, batchFrom: 1, batchKeys: 1}
	cmdRWRUnlock    = command{script: &scripts.RWRUnlock, release: true, answer: answerVote}
	// An election's (see election.go): a candidate attempts as a fenced
	// Lock does, then the winner announces itself (arg: its record); the
	// renewer extends a leadership with the batch script alone (there is
	// no Extend of one); a release's arg is its wake flag.
	cmdElectAnnounce = command{script: &scripts.ElectAnnounce, arg: true, guarded: true, answer: answerVote}
	cmdElectExtend   = command{guarded: true, answer: answerVote, batch: &scripts.ElectExtendBatch, restore: restoreFirst}
	cmdElectRelease  = command{script: &scripts.ElectRelease, release: true, arg: true, answer: answerVote}
)

// commands is the table: every command above. The scripts each
// connection loads in its handshake derive from it (see sentBySHA).
var commands = [...]*command{
	&cmdSet, &cmdLockWait, &cmdLockMulti, &cmdFenceLock, &cmdFenceWrite,
	&cmdExtend, &cmdExtendMulti, &cmdHandover,
	&cmdRelease, &cmdReleaseMulti, &cmdReleaseQuiet, &cmdReleaseRejoin, &cmdReleaseMultiQ, &cmdWake,
	&cmdSemAcquire, &cmdSemAcquireFenced, &cmdSemExtend, &cmdSemRelease,
	&cmdRWLock, &cmdRWLockFenced, &cmdRWRLock, &cmdRWRExtend, &cmdRWRUnlock,
	&cmdElectAnnounce, &cmdElectExtend, &cmdElectRelease,
}

// lockCommand is a Lock attempt's command: fenced (Config.Fencing), on
// several keys (multi), by a Lock that waits (its answer names the holder,
// see contention), or a plain SET. The scripts that take several keys take
// one as well.
func (c *Client) lockCommand(multi, waiting bool) *command {
	switch {
	case c.cfg.Fencing:
		return &cmdFenceLock
	case multi:
		return &cmdLockMulti
	case waiting:
		return &cmdLockWait
	default:
		return &cmdSet
	}
}

// extendCommand is Extend's.
func extendCommand(multi bool) *command {
	if multi {
		return &cmdExtendMulti
	}
	return &cmdExtend
}

// releaseCommand is a release's: with wake, its waiters are woken (see
// scripts.Release); without, the release of a failed attempt.
func releaseCommand(multi, wake bool) *command {
	switch {
	case multi && wake:
		return &cmdReleaseMulti
	case multi:
		return &cmdReleaseMultiQ
	case wake:
		return &cmdRelease
	default:
		return &cmdReleaseQuiet
	}
}

// args are a command's arguments, which each of its forms encodes (the
// script's, see wire.script; the native ones, see nativeVerb.encode; the
// plain SET's, see wire.setNX). The caller's values are borrowed for the
// encoding only.
type args struct {
	// key is the lock's key, or its name: a semaphore's or read-write
	// lock's record, a multi-key lock's first key.
	key string
	// keys are the value's keys when not nil (sorted, deduplicated, see
	// LockMulti); the script then takes them instead of key alone.
	keys []string
	// tok is the value's token.
	tok *token
	// id is tok's release id, which encode sets for a command that wakes
	// (command.wake).
	id []byte
	// arg, arg2 and proposal follow the token (and id) where the command
	// takes them (command.arg, command.arg2, command.propose). An enrolling
	// command's arg2 is the caller's enrolment among the key's waiters
	// (see call.enrolment).
	arg, arg2, proposal []byte
}

// encode makes cmd the op's command and writes it with a (and its native
// forms when a master's server runs one, see encodeNatives; a master that
// lost the script, NOSCRIPT, gets its EVAL form from the connection, see
// conn.Options.Scripts). The arguments cmd does not take are left out.
func (o *op) encode(cmd *command, a args) {
	o.command = cmd
	o.cmd.reset()
	if !cmd.arg {
		a.arg = nil
	}
	if !cmd.arg2 && !cmd.enroll {
		a.arg2 = nil
	}
	if !cmd.propose {
		a.proposal = nil
	}
	a.id = nil
	if cmd.wake {
		o.relID = a.tok.releaseID()
		a.id = o.relID[:]
	}
	o.nat.cmd = nil
	var tail []string
	script := cmd.script
	if cmd.fenceKey {
		tail = fenceTail(o.c)
		if o.c.vouching() {
			script = cmd.vouched
		}
	}
	switch {
	case cmd.script == nil:
		o.cmd.place = o.c.placement(a.key)
		o.cmd.setNX(o.c, a.key, a.tok, a.arg)
	default:
		o.cmd.script(o.c, script.SHA, &a, tail)
	}
	if len(cmd.natives) > 0 && a.keys == nil && !o.c.cfg.DisableNativeCommands && o.c.anyNative(cmd, o.cmd.place) {
		o.encodeNatives(cmd, &a)
	}
}

// ttlArg formats ttl in milliseconds into the op's scratch, for encode.
func (o *op) ttlArg(ttl time.Duration) []byte {
	o.num = strconv.AppendInt(o.num[:0], ttl.Milliseconds(), 10)
	return o.num
}

// batch appends "EVALSHA <script> keys <each value's keys> len(batch)
// <each value's token, TTL in milliseconds and third argument>", a
// renewer's batch of extensions by the batch script of their command
// (command.batch, see renewer.encode), keys being the number of keys.
func (w *wire) batch(c *Client, script *scripts.Script, batch []*renewal, keys int) {
	w.b = resp.AppendArrayHeader(w.b, 3+keys+1+3*len(batch))
	w.b = resp.AppendBulkString(w.b, "EVALSHA")
	w.b = resp.AppendBulkString(w.b, script.SHA)
	w.b = resp.AppendBulkInt(w.b, int64(keys))
	for _, e := range batch {
		ks := e.batchKeys()
		if ks == nil {
			w.key(c, e.h.key, "")
		}
		for _, k := range ks {
			w.key(c, k, "")
		}
	}
	w.b = resp.AppendBulkInt(w.b, int64(len(batch)))
	for _, e := range batch {
		w.b = resp.AppendBulk(w.b, e.v.tok[:])
		w.b = resp.AppendBulkInt(w.b, e.ttl.Milliseconds())
		if e.h.arg2 != nil {
			w.b = resp.AppendBulk(w.b, e.h.arg2)
		} else {
			w.b = resp.AppendBulkInt(w.b, int64(e.batchKeyCount()))
		}
	}
}

// look appends "MGET key <key's name>", a waiter's look at key (see
// peek.go and scripts.NamedSuffix).
func (w *wire) look(c *Client, key string) {
	w.place = c.placement(key)
	w.b = resp.AppendArrayHeader(w.b, 3)
	w.b = resp.AppendBulkString(w.b, "MGET")
	w.key(c, key, "")
	w.key(c, key, scripts.NamedSuffix)
}

// script appends "EVALSHA sha numkeys key... token [id] [arg] [arg2]
// [proposal]": the keys are a.keys, or a.key alone when a.keys is nil,
// then tail's; each of a's id, arg, arg2 and proposal when not nil.
func (w *wire) script(c *Client, sha string, a *args, tail []string) {
	nkeys := max(1, len(a.keys)) + len(tail)
	n := 4 + nkeys
	for _, x := range [...][]byte{a.id, a.arg, a.arg2, a.proposal} {
		if x != nil {
			n++
		}
	}
	if a.keys != nil {
		w.place = c.placement(a.keys[0]) // the lock's name: a multi-key lock's first, a semaphore's or read-write lock's record
	} else {
		w.place = c.placement(a.key)
	}
	w.b = resp.AppendArrayHeader(w.b, n)
	w.b = resp.AppendBulkString(w.b, "EVALSHA")
	w.b = resp.AppendBulkString(w.b, sha)
	w.b = resp.AppendBulkInt(w.b, int64(nkeys))
	if a.keys == nil {
		w.key(c, a.key, "")
	}
	for _, k := range a.keys {
		w.key(c, k, "")
	}
	for _, k := range tail {
		w.key(c, k, "")
	}
	w.b = resp.AppendBulk(w.b, a.tok[:])
	for _, x := range [...][]byte{a.id, a.arg, a.arg2, a.proposal} {
		if x != nil {
			w.b = resp.AppendBulk(w.b, x)
		}
	}
}

// sentBySHA are the scripts of the commands (and their renewal batches)
// sent with EVALSHA: every connection loads them in its handshake
// (conn.Options.Scripts), so a master that restarted empty runs them at
// the first try instead of answering -NOSCRIPT, and a request answered
// after the decision (not resent) still does its work. vouchedBySHA are
// their cluster forms (command.vouched), which every connection of a
// fencing Client over a cluster loads as well. Fencing's check, state and
// repair go with EVAL and need no loading.
var sentBySHA, vouchedBySHA = loadedScripts()

// loadedScripts collects sentBySHA and vouchedBySHA from the command
// table, each script once.
func loadedScripts() (plain, vouched []string) {
	add := func(list []string, s *scripts.Script) []string {
		if s == nil || slices.Contains(list, s.Source) {
			return list
		}
		return append(list, s.Source)
	}
	for _, cmd := range commands {
		plain = add(plain, cmd.script)
		vouched = add(vouched, cmd.vouched)
		plain = add(plain, cmd.batch)
	}
	return plain, vouched
}

// heldOp is what an extension or a release of one hold sends: cmd over key,
// or keys when not nil, with arg and proposal as cmd takes them (see
// op.encode), and the hold's token, passed on its own (escape analysis
// does not tell the fields of a struct apart: a token beside the name,
// which errors keep, would move every Permit to the heap). name is what
// hooks and errors call it.
type heldOp struct {
	name      string
	cmd       *command
	key       string
	keys      []string
	arg, arg2 []byte
}

// placed is the key that places h over a Redis Cluster (see
// Client.placement): the first of its keys, else its key.
func (h *heldOp) placed() string {
	if h.keys != nil {
		return h.keys[0]
	}
	return h.key
}
