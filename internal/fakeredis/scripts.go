package fakeredis

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/volleylock/volley/internal/scripts"

	"github.com/volleylock/volley/resp"
)

// The Redlock scripts the fake runs natively in Go are those of
// internal/scripts, recognised by their text or SHA-1 (see scriptTable).

// releasedChannelPrefix starts the shard channel the release scripts
// publish on.
const releasedChannelPrefix = scripts.ReleasedChannelPrefix

// scriptKind names a script the fake knows how to run.
type scriptKind uint8

const (
	scriptUnknown scriptKind = iota
	scriptRelease
	scriptReleaseQuiet
	scriptExtend
	scriptHandover
	scriptLockWait
	scriptLeave
	scriptWake
	scriptLockMulti
	scriptReleaseMulti
	scriptReleaseMultiQuiet
	scriptExtendMulti
	scriptExtendBatch
	scriptFenceCheck
	scriptFenceLock
	scriptFenceWrite
	scriptFenceState
	scriptFenceRepair
	scriptSemAcquire
	scriptSemRelease
	scriptSemExtend
	scriptSemExtendBatch
	scriptRWLock
	scriptRWRLock
	scriptRWRExtend
	scriptRWRExtendBatch
	scriptRWRUnlock
	// The cluster forms of the fencing scripts (scripts.FenceLockVouched
	// and the others): fence_vouch.lua's check, then the script.
	scriptFenceLockVouched
	scriptFenceWriteVouched
	scriptFenceStateVouched
	scriptFenceRepairVouched
	scriptSemAcquireVouched
	scriptRWLockVouched
	scriptElectAnnounce
	scriptElectExtendBatch
	scriptElectRelease
	scriptKinds // how many there are
)

// scriptRunner runs one script for c, with keys and argv as EVAL gives
// them, and appends to c.out what the Lua script would return, or the
// error its redis.call would raise. Messages the script publishes to c
// itself come first, as on Redis. The server's lock is held.
type scriptRunner func(c *client, sha string, keys, argv [][]byte)

// scriptTable is every script the fake runs, one entry each: every one of
// scripts.All, with its runner.
var scriptTable = []struct {
	script scripts.Script
	kind   scriptKind
	run    scriptRunner
}{
	{scripts.Release, scriptRelease, runTokenScript(releaseAct)},
	{scripts.Wake, scriptWake, func(c *client, sha string, keys, argv [][]byte) { c.wakeLocked(sha, keys, argv) }},
	{scripts.ReleaseQuiet, scriptReleaseQuiet, runTokenScript(releaseQuietAct)},
	{scripts.Extend, scriptExtend, runTokenScript(extendAct)},
	{scripts.Handover, scriptHandover, runTokenScript(handoverAct)},
	{scripts.LockWait, scriptLockWait, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.lockWaitLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.Leave, scriptLeave, func(c *client, sha string, keys, argv [][]byte) { c.leaveLocked(sha, keys, argv) }},
	{scripts.LockMulti, scriptLockMulti, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.lockMultiLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.ReleaseMulti, scriptReleaseMulti, func(c *client, sha string, keys, argv [][]byte) {
		c.releaseMultiLocked(sha, keys, argv, true)
	}},
	{scripts.ReleaseMultiQuiet, scriptReleaseMultiQuiet, func(c *client, sha string, keys, argv [][]byte) {
		c.releaseMultiLocked(sha, keys, argv, false)
	}},
	{scripts.ExtendMulti, scriptExtendMulti, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.extendMultiLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.ExtendBatch, scriptExtendBatch, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.extendBatchLocked(c.out, c.db, sha, keys, argv, false)
	}},
	{scripts.FenceCheck, scriptFenceCheck, func(c *client, sha string, keys, _ [][]byte) {
		c.out = c.s.fenceCheckLocked(c.out, c.db, sha, keys)
	}},
	{scripts.FenceLock, scriptFenceLock, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.fenceLockLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.FenceWrite, scriptFenceWrite, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.fenceWriteLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.FenceState, scriptFenceState, func(c *client, sha string, keys, _ [][]byte) {
		c.out = c.s.fenceStateLocked(c.out, c.db, sha, keys)
	}},
	{scripts.FenceRepair, scriptFenceRepair, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.fenceRepairLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.SemAcquire, scriptSemAcquire, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.semAcquireLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.SemRelease, scriptSemRelease, func(c *client, sha string, keys, argv [][]byte) {
		c.semReleaseLocked(sha, keys, argv)
	}},
	{scripts.SemExtend, scriptSemExtend, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.semExtendLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.SemExtendBatch, scriptSemExtendBatch, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.batchLocked(c.out, keys, argv, 2, func(out []byte, keys, argv [][]byte) []byte {
			return c.s.semExtendLocked(out, c.db, sha, keys, argv)
		})
	}},
	{scripts.RWLock, scriptRWLock, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.rwLockLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.RWRLock, scriptRWRLock, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.rwRLockLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.RWRExtend, scriptRWRExtend, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.rwRExtendLocked(c.out, c.db, sha, keys, argv)
	}},
	{scripts.RWRExtendBatch, scriptRWRExtendBatch, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.batchLocked(c.out, keys, argv, 1, func(out []byte, keys, argv [][]byte) []byte {
			// RWRExtend reads KEYS[2], the readers' key: the batch's one key.
			return c.s.rwRExtendLocked(out, c.db, sha, [][]byte{keys[0], keys[0]}, argv[:2])
		})
	}},
	{scripts.RWRUnlock, scriptRWRUnlock, func(c *client, sha string, keys, argv [][]byte) {
		c.rwRUnlockLocked(sha, keys, argv)
	}},
	{scripts.FenceLockVouched, scriptFenceLockVouched, vouched(scriptFenceLock)},
	{scripts.FenceWriteVouched, scriptFenceWriteVouched, vouched(scriptFenceWrite)},
	{scripts.FenceStateVouched, scriptFenceStateVouched, vouched(scriptFenceState)},
	{scripts.FenceRepairVouched, scriptFenceRepairVouched, vouched(scriptFenceRepair)},
	{scripts.SemAcquireVouched, scriptSemAcquireVouched, vouched(scriptSemAcquire)},
	{scripts.RWLockVouched, scriptRWLockVouched, vouched(scriptRWLock)},
	{scripts.ElectAnnounce, scriptElectAnnounce, runTokenScript(electAnnounceAct)},
	{scripts.ElectExtendBatch, scriptElectExtendBatch, func(c *client, sha string, keys, argv [][]byte) {
		c.out = c.s.extendBatchLocked(c.out, c.db, sha, keys, argv, true)
	}},
	{scripts.ElectRelease, scriptElectRelease, runTokenScript(electReleaseAct)},
}

// scriptRunners are scriptTable's runners by kind.
var scriptRunners [scriptKinds]scriptRunner

// knownScript is a script's kind and SHA-1.
type knownScript struct {
	kind scriptKind
	sha  string
}

var (
	// canonicalScripts are the scripts by their exact text, with their
	// SHA-1s, so that EVAL of them hashes nothing.
	canonicalScripts = make(map[string]knownScript)
	// knownScripts are the scripts by their normalised body.
	knownScripts = make(map[string]scriptKind)
	// errUnknownScript answers EVAL and SCRIPT LOAD of any other script.
	errUnknownScript string
)

func init() {
	names := make([]string, 0, len(scriptTable))
	for _, sc := range scriptTable {
		scriptRunners[sc.kind] = sc.run
		canonicalScripts[sc.script.Source] = knownScript{sc.kind, sc.script.SHA}
		knownScripts[normaliseScript([]byte(sc.script.Source))] = sc.kind
		names = append(names, sc.script.Name)
	}
	errUnknownScript = "ERR fakeredis runs only the Redlock scripts of internal/scripts (" +
		strings.Join(names, ", ") + "); this script is none of them"
}

// normaliseScript drops whitespace and makes every quote a double quote,
// so that reformatted copies of a lock script are still recognised.
func normaliseScript(body []byte) string {
	out := make([]byte, 0, len(body))
	for _, b := range body {
		switch b {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			continue
		case '\'':
			b = '"'
		}
		out = append(out, b)
	}
	return string(out)
}

// recogniseScript returns which lock script body is, if any.
func recogniseScript(body []byte) scriptKind {
	return knownScripts[normaliseScript(body)]
}

// sha1Hex returns the lower-case hex SHA-1 of body, the script's name.
func sha1Hex(body []byte) string {
	sum := sha1.Sum(body)
	return hex.EncodeToString(sum[:])
}

// loadScriptLocked caches body under its SHA-1 and returns the SHA-1 and
// the kind of script, scriptUnknown if body is not a lock script.
func (s *Server) loadScriptLocked(body []byte) (string, scriptKind) {
	var sha string
	var kind scriptKind
	if known, ok := canonicalScripts[string(body)]; ok {
		sha, kind = known.sha, known.kind
	} else {
		if kind = recogniseScript(body); kind == scriptUnknown {
			return "", kind
		}
		sha = sha1Hex(body)
	}
	s.scripts[sha] = kind
	return sha, kind
}

func cmdEval(c *client, args [][]byte) { c.eval(args, false) }

func cmdEvalSha(c *client, args [][]byte) { c.eval(args, true) }

// eval is EVAL script|EVALSHA sha numkeys key... arg..., with Redis 7.0's
// checks in its order.
func (c *client) eval(args [][]byte, bySHA bool) {
	if bySHA && len(args[1]) != 40 {
		c.out = append(c.out, replyNoScript...)
		return
	}
	numkeys, ok := parseInt64(args[2])
	switch {
	case !ok:
		c.out = appendError(c.out, errNotInteger)
		return
	case numkeys > int64(len(args)-3):
		c.out = appendError(c.out, "ERR Number of keys can't be greater than number of args")
		return
	case numkeys < 0:
		c.out = appendError(c.out, "ERR Number of keys can't be negative")
		return
	}
	var sha string
	var kind scriptKind
	if bySHA {
		var lower [40]byte
		l, _ := lowerInto(lower[:], args[1])
		kind = c.s.scripts[string(l)]
		if kind == scriptUnknown {
			c.out = append(c.out, replyNoScript...)
			return
		}
		sha = string(l)
	} else {
		sha, kind = c.s.loadScriptLocked(args[1])
		if kind == scriptUnknown {
			c.out = appendError(c.out, errUnknownScript)
			return
		}
	}
	keys, argv := args[3:3+numkeys], args[3+numkeys:]
	c.runScriptLocked(kind, sha, keys, argv)
}

// errScriptArgs is what redis.call raises when given a nil argument, such as
// KEYS[1] with no keys or ARGV[2] with one argument.
const errScriptArgs = "ERR Lua redis lib command arguments must be strings or integers"

// runScriptLocked runs a lock script of a known kind (see scriptTable).
func (c *client) runScriptLocked(kind scriptKind, sha string, keys, argv [][]byte) {
	scriptRunners[kind](c, sha, keys, argv)
}

// vouched is the runner of the cluster form of a fencing script (see
// scripts.FenceLockVouched): fence_vouch.lua's check on the last three
// keys (unpack(KEYS, 1, #KEYS-3) for the script), then base's runner.
func vouched(base scriptKind) scriptRunner {
	return func(c *client, sha string, keys, argv [][]byte) {
		if len(keys) < 3 {
			c.out = appendScriptError(c.out, errScriptArgs, sha)
			return
		}
		if _, msg := c.s.fenceSetAsideLocked(c.db, keys[len(keys)-3:], c.s.runID+":"+c.s.replID()); msg != "" {
			c.out = appendScriptError(c.out, msg, sha)
			return
		}
		scriptRunners[base](c, sha, keys[:len(keys)-3], argv)
	}
}

// tokenAct is what a script does once KEYS[1] was found to hold the
// token ARGV[1] (see runTokenScript); now is the server's clock.
type tokenAct func(c *client, sha string, keys, argv [][]byte, now int64)

// runTokenScript is the runner of a single-key script that acts only on a
// key that holds its token (scripts.Release, ReleaseQuiet, Extend,
// Handover): else it answers 0.
func runTokenScript(act tokenAct) scriptRunner {
	return func(c *client, sha string, keys, argv [][]byte) {
		s, db := c.s, c.db
		now := s.nowMs()
		val, found, msg := s.scriptGetLocked(db, keys, 0, now)
		if msg != "" {
			c.out = appendScriptError(c.out, msg, sha)
			return
		}
		// redis.call("get") returns false for a missing key, and ARGV[1]
		// is nil when absent: both compare unequal to anything.
		if !found || len(argv) == 0 || val != string(argv[0]) {
			c.out = append(c.out, replyZero...)
			return
		}
		act(c, sha, keys, argv, now)
	}
}

// releaseAct deletes the key; when its mark (see listenKey) does not
// exist, that is all. Else it takes the longest waiting
// Client off the key's waiters (see lockWaitLocked), names it for scripts.NamedMs (see
// namedKey) and publishes the release's id, ARGV[2], on its channel. As
// the script's redis.pcall, a waiters' key of another type names nobody,
// and a missing id publishes nothing.
//
// With an ARGV[3] (scripts.Release's cutoff), the longest waiter is looked
// at first (ZRANGE 0 0 WITHSCORES): one whose score is greater than the
// cutoff is left asleep and the answer is 3; one that is woken makes it 2.
func releaseAct(c *client, sha string, keys, argv [][]byte, now int64) {
	delete(c.s.dbs[c.db], string(keys[0]))
	if _, marked := c.s.lookupLocked(c.db, listenKey(keys[0]), now); !marked {
		c.out = append(c.out, replyOne...) // nobody waits: no publish
		return
	}
	id, _ := luaArg(argv, 1)
	cutoff, turn := luaArg(argv, 2)
	if turn {
		z, _ := c.s.lookupZsetLocked(c.db, waitersKey(keys[0]), now)
		if z == nil {
			c.publishIDLocked(keys[0], id, "")
			c.out = append(c.out, replyOne...)
			return
		}
		_, score, _ := z.head()
		cut := luaToNumber(cutoff)
		if !cut.ok {
			c.out = appendScriptError(c.out, errLuaCompareNil, sha)
			return
		}
		if score > cut.f {
			c.out = resp.AppendInteger(c.out, 3)
			return
		}
	}
	next := c.s.wakeLongestLocked(c.db, keys[0], now)
	c.publishIDLocked(keys[0], id, next)
	if turn && next != "" {
		c.out = resp.AppendInteger(c.out, 2)
		return
	}
	c.out = append(c.out, replyOne...)
}

// releaseQuietAct deletes the key; with an enrolment (ARGV[3], see
// enrolment), it puts the Client back among the key's waiters with its
// score unless it is there, and sets their TTL to ARGV[2]. As the
// script's redis.pcall, a waiters' key of another type is left alone.
func releaseQuietAct(c *client, sha string, keys, argv [][]byte, now int64) {
	delete(c.s.dbs[c.db], string(keys[0]))
	if score, id, ok := enrolment(argv); ok {
		wk := waitersKey(keys[0])
		if z, wrongType := c.s.lookupZsetLocked(c.db, wk, now); !wrongType && (z == nil || !z.has(id)) {
			c.s.scriptZaddLocked(c.db, wk, score, id, now)
		}
		if ttl, ok := luaArg(argv, 1); ok {
			c.s.scriptPexpireLocked(c.db, wk, ttl, now)
			c.s.scriptSetValuePXLocked(c.db, listenKey(keys[0]), "1", ttl, now)
		}
	}
	c.out = append(c.out, replyOne...)
}

// wakeLongestLocked takes the longest waiting Client off key's waiters and
// names it for scripts.NamedMs (see namedKey); it returns it, "" when none
// waits (or the waiters' key is of another type, as redis.pcall sees it).
func (s *Server) wakeLongestLocked(db int, key []byte, now int64) string {
	next, _ := s.zpopminLocked(db, waitersKey(key), now)
	if next != "" {
		s.scriptSetValuePXLocked(db, namedKey(key), next, []byte(strconv.Itoa(scripts.NamedMs)), now)
	}
	return next
}

// wakeLocked runs scripts.Wake: if KEYS[1] does not exist, the longest
// waiter is woken as a release wakes it, with the id of ARGV[1], and the
// answer is 1; else 0.
func (c *client) wakeLocked(sha string, keys, argv [][]byte) {
	now := c.s.nowMs()
	if len(keys) == 0 || len(argv) == 0 {
		c.out = appendScriptError(c.out, errScriptArgs, sha)
		return
	}
	if _, ok := c.s.lookupLocked(c.db, keys[0], now); ok {
		c.out = append(c.out, replyZero...)
		return
	}
	next := c.s.wakeLongestLocked(c.db, keys[0], now)
	c.publishReleaseLocked(keys[0], argv[0], next)
	c.out = append(c.out, replyOne...)
}

// leaveLocked runs scripts.Leave: unless KEYS[1] holds a string whose
// holder id is ARGV[2] (not empty), ARGV[1] leaves the key's waiters and
// the answer is how many left (ZREM's); else 0. As the script's
// redis.pcall, a key or a waiters' key of another type is no error.
func (c *client) leaveLocked(sha string, keys, argv [][]byte) {
	now := c.s.nowMs()
	if len(keys) == 0 || len(argv) < 2 {
		c.out = appendScriptError(c.out, errScriptArgs, sha)
		return
	}
	if e, ok := c.s.lookupLocked(c.db, keys[0], now); ok && e.isString() && len(argv[1]) > 0 && holderID([]byte(e.val)) == string(argv[1]) {
		c.out = append(c.out, replyZero...)
		return
	}
	wk := waitersKey(keys[0])
	z, wrongType := c.s.lookupZsetLocked(c.db, wk, now)
	if wrongType {
		c.out = appendError(c.out, errWrongType) // redis.pcall's error, returned: not the script's
		return
	}
	if z == nil || !z.has(argv[0]) {
		c.out = append(c.out, replyZero...)
		return
	}
	c.s.scriptZremLocked(c.db, wk, argv[0], now)
	c.out = append(c.out, replyOne...)
}

// waitersKey is the name of key's waiters' sorted set (scripts.WaitersSuffix).
func waitersKey(key []byte) []byte {
	return append(append([]byte(nil), key...), scripts.WaitersSuffix...)
}

// namedKey is the name of the key that holds the Client a release of
// key named (scripts.NamedSuffix).
func namedKey(key []byte) []byte {
	return append(append([]byte(nil), key...), scripts.NamedSuffix...)
}

// listenKey is the name of the mark every waiting attempt leaves on key
// (scripts.ListenSuffix).
func listenKey(key []byte) []byte {
	return append(append([]byte(nil), key...), scripts.ListenSuffix...)
}

// markListenLocked is the acquire scripts' mark of a taken key: local t =
// tonumber(ARGV[2]) if t then redis.pcall("set", key .. "$LISTEN", "1",
// "px", base + t) end. Redis hands the sum to SET as %.17g prints it,
// which SET reads only for a whole number below 1e17; what SET refuses,
// redis.pcall swallows.
func (s *Server) markListenLocked(db int, key []byte, base int64, argv [][]byte, now int64) {
	if px, ok := luaSumPX(base, luaArgNumber(argv, 1)); ok {
		s.scriptSetValuePXLocked(db, listenKey(key), "1", px, now)
	}
}

// luaSumPX is base + t as a script hands it to SET PX or PEXPIRE: Redis
// formats a Lua number with %.17g, which those commands read only for a
// whole number below 1e17; ok is false for a t that is nil and for a
// sum they refuse (which redis.pcall swallows).
func luaSumPX(base int64, t luaNumber) ([]byte, bool) {
	if !t.ok {
		return nil, false
	}
	sum := float64(base) + t.f
	if sum != math.Trunc(sum) || math.Abs(sum) >= 1e17 {
		return nil, false
	}
	return strconv.AppendInt(nil, int64(sum), 10), true
}

// enrolment reads LockWait's ARGV[3], "<score>:<id>" as the script's
// string.match(ARGV[3], "^(%d+):(.+)$"); ok is false when it is missing or
// of another form.
func enrolment(argv [][]byte) (score float64, id []byte, ok bool) {
	a, ok := luaArg(argv, 2)
	if !ok {
		return 0, nil, false
	}
	digits := 0
	for digits < len(a) && '0' <= a[digits] && a[digits] <= '9' {
		digits++
	}
	if digits == 0 || digits+1 >= len(a) || a[digits] != ':' {
		return 0, nil, false
	}
	n, err := strconv.ParseFloat(string(a[:digits]), 64)
	if err != nil {
		return 0, nil, false
	}
	return n, a[digits+1:], true
}

// lockWaitLocked runs scripts.LockWait: LockMulti's attempt on KEYS[1];
// with an enrolment ARGV[3] ("<score>:<id>"), a Client that sets the key
// leaves its waiters, one that finds it taken joins them with that score
// unless it is there, and the waiters' TTL becomes the
// key's PTTL (0 when it has none) plus ARGV[2]. Every attempt that waits
// marks the key with that TTL (see markListenLocked). As the script's
// redis.pcall, a waiters' key of another type is left alone.
func (s *Server) lockWaitLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	if len(keys) == 0 {
		return appendScriptError(out, errScriptArgs, sha)
	}
	now := s.nowMs()
	mark := len(out)
	score, id, enroll := enrolment(argv)
	wk, nk := waitersKey(keys[0]), namedKey(keys[0])
	named, hasNamed := "", false
	_, taken := s.lookupLocked(db, keys[0], now)
	if enroll && !taken {
		// The name matters only to a free key: a taken one is no one's
		// to take, and its name is left to expire (or to the next
		// release, which names again).
		if e, ok := s.lookupLocked(db, nk, now); ok && e.isString() {
			named, hasNamed = e.val, true
		}
	}
	if !taken && hasNamed && named != string(id) {
		// Free, but a release named another Client: this one waits its
		// turn, enrolled.
		z, wrongType := s.lookupZsetLocked(db, wk, now)
		if !wrongType && (z == nil || !z.has(id)) {
			s.scriptZaddLocked(db, wk, score, id, now)
		}
		if ttl, ok := luaArg(argv, 1); ok {
			if !wrongType {
				s.scriptPexpireLocked(db, wk, ttl, now)
			}
			s.scriptSetValuePXLocked(db, listenKey(keys[0]), "1", ttl, now)
		}
		return appendHolder(out, holderID([]byte(named)), s.scriptPttlLocked(db, nk, now))
	}
	out, set := s.lockKeysLocked(out, db, sha, keys[:1], argv, false, now)
	if set {
		if enroll {
			s.scriptZremLocked(db, wk, id, now)
		}
		if hasNamed {
			delete(s.dbs[db], string(nk))
		}
		return append(out, replyOne...)
	}
	if len(out) == mark || out[mark] != '*' {
		return out // an error
	}
	pttl := max(s.scriptPttlLocked(db, keys[0], now), 0)
	if z, wrongType := s.lookupZsetLocked(db, wk, now); enroll && !wrongType {
		if z == nil || !z.has(id) {
			s.scriptZaddLocked(db, wk, score, id, now)
		}
		t := luaArgNumber(argv, 1)
		if !t.ok {
			return appendScriptError(out[:mark], errLuaArithString, sha)
		}
		if px, ok := luaSumPX(pttl, t); ok {
			s.scriptPexpireLocked(db, wk, px, now)
		}
	}
	s.markListenLocked(db, keys[0], pttl, argv, now)
	return out
}

// handoverAct sets the key to the next token, ARGV[2], for ARGV[3] ms.
func handoverAct(c *client, sha string, keys, argv [][]byte, now int64) {
	if msg := c.s.scriptSetPXLocked(c.db, keys[0], argv, 1, now); msg != "" {
		c.out = appendScriptError(c.out, msg, sha)
		return
	}
	c.out = append(c.out, replyOne...)
}

// extendAct sets the key's TTL to ARGV[2] ms.
func extendAct(c *client, sha string, keys, argv [][]byte, now int64) {
	if len(argv) < 2 {
		c.out = appendScriptError(c.out, errScriptArgs, sha)
		return
	}
	mark := len(c.out)
	c.out = c.s.pexpireLocked(c.out, c.db, keys[0], argv[1], nil, now)
	if c.out[mark] == '-' {
		msg := string(c.out[mark+1 : len(c.out)-2])
		c.out = appendScriptError(c.out[:mark], msg, sha)
	}
}

// publishReleaseLocked publishes what the release scripts do when they
// delete key, which held token (for scripts.SemRelease, key is the
// semaphore's record; for scripts.RWRUnlock, it is the writer's key, and
// token the reader's): the release's id (holderID) on the key's shard
// channel (SPUBLISH), or, when it names next, the Client that waited
// longest, on that Client's channel of the key.
func (c *client) publishReleaseLocked(key, token []byte, next string) {
	c.publishIDLocked(key, []byte(holderID(token)), next)
}

// publishIDLocked is publishReleaseLocked of a release whose id the
// Client sent (scripts.Release): nothing when id is nil.
func (c *client) publishIDLocked(key, id []byte, next string) {
	if id == nil {
		return
	}
	channel := append([]byte(releasedChannelPrefix), key...)
	if next != "" {
		channel = append(append(channel, ':'), next...)
	}
	c.s.publishLocked(c, shard, channel, id)
}

// appendHolder appends what the lock scripts answer when a key is taken,
// a Lua table of a string and a number: an array of the holder's id (a
// bulk string) and a PTTL (an integer).
func appendHolder(out []byte, id string, pttl int64) []byte {
	out = resp.AppendArrayHeader(out, 2)
	out = resp.AppendBulkString(out, id)
	return resp.AppendInteger(out, pttl)
}

// holderID returns the id the scripts give a token: the first 16 of the
// lower-case hex digits of its SHA-1, as string.sub(redis.sha1hex(v),1,16).
func holderID(token []byte) string { return sha1Hex(token)[:16] }

// appendScriptError appends the error a failed redis.call raises out of a
// script, as Redis 7.0 words it.
func appendScriptError(out []byte, msg, sha string) []byte {
	return appendError(out, msg+" script: "+sha+", on @user_script:1.")
}

func cmdScriptLoad(c *client, args [][]byte) {
	sha, kind := c.s.loadScriptLocked(args[2])
	if kind == scriptUnknown {
		c.out = appendError(c.out, errUnknownScript)
		return
	}
	c.out = resp.AppendBulkString(c.out, sha)
}

func cmdScriptExists(c *client, args [][]byte) {
	c.out = resp.AppendArrayHeader(c.out, len(args)-2)
	for _, a := range args[2:] {
		var lower [40]byte
		l, ok := lowerInto(lower[:], a)
		if ok && c.s.scripts[string(l)] != scriptUnknown {
			c.out = append(c.out, replyOne...)
		} else {
			c.out = append(c.out, replyZero...)
		}
	}
}

func cmdScriptFlush(c *client, args [][]byte) {
	if len(args) > 3 || (len(args) == 3 && !equalFold(args[2], "sync") && !equalFold(args[2], "async")) {
		c.out = appendError(c.out, "ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	clear(c.s.scripts)
	c.out = append(c.out, replyOK...)
}

// lockMultiLocked runs scripts.LockMulti, and scripts.LockWait given its one
// key.
func (s *Server) lockMultiLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	out, set := s.lockKeysLocked(out, db, sha, keys, argv, true, s.nowMs())
	if set {
		out = append(out, replyOne...)
	}
	return out
}

// lockKeysLocked is what scripts.LockMulti and scripts.FenceLock share: if one
// of keys exists, it appends that key's holder id and PTTL (or, for a
// semaphore's record, the WRONGKIND error), having marked it with mark
// (see markListenLocked), and returns false; else it sets
// every key to ARGV[1] with a TTL of ARGV[2] milliseconds and returns true,
// appending nothing, or appends the error SET raises and returns false. As
// in Lua, a missing or invalid ARGV fails only once the loop reaches the
// first SET, and every SET gets the same arguments, so the script fails
// before changing anything or not at all.
func (s *Server) lockKeysLocked(out []byte, db int, sha string, keys, argv [][]byte, mark bool, now int64) ([]byte, bool) {
	for _, k := range keys {
		e, found := s.lookupLocked(db, k, now)
		switch {
		case found && !e.isString():
			return appendScriptError(out, errWrongType, sha), false
		case found && isSemaphoreRecord(e.val):
			return appendErrorReply(out, notALock(k)), false
		case found:
			if mark {
				s.markListenLocked(db, k, max(e.pttl(now), 0), argv, now)
			}
			return appendHolder(out, holderID([]byte(e.val)), e.pttl(now)), false
		}
	}
	for _, k := range keys {
		if msg := s.scriptSetPXLocked(db, k, argv, 0, now); msg != "" {
			return appendScriptError(out, msg, sha), false
		}
	}
	return out, true
}

// releaseMultiLocked runs scripts.ReleaseMultiQuiet, or with publish
// scripts.ReleaseMulti, appending to c.out. A key that holds a
// hash raises an error there, after the keys before it were released.
func (c *client) releaseMultiLocked(sha string, keys, argv [][]byte, publish bool) {
	s := c.s
	now := s.nowMs()
	n := 0
	for i, k := range keys {
		v, found, msg := s.scriptGetLocked(c.db, keys, i, now)
		if msg != "" {
			c.out = appendScriptError(c.out, msg, sha)
			return
		}
		if found && len(argv) > 0 && v == string(argv[0]) {
			delete(s.dbs[c.db], string(k))
			n++
			if publish {
				c.publishReleaseLocked(k, argv[0], "")
			}
		}
	}
	if n == len(keys) {
		c.out = append(c.out, replyOne...)
	} else {
		c.out = append(c.out, replyZero...)
	}
}

// extendMultiLocked runs scripts.ExtendMulti: PEXPIRE's own checks and errors
// apply, raised at the first key, before any key changed.
func (s *Server) extendMultiLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	for i := range keys {
		v, found, msg := s.scriptGetLocked(db, keys, i, now)
		if msg != "" {
			return appendScriptError(out, msg, sha)
		}
		if !found || len(argv) == 0 || v != string(argv[0]) {
			return append(out, replyZero...)
		}
	}
	if len(keys) == 0 {
		return append(out, replyOne...)
	}
	if len(argv) < 2 {
		return appendScriptError(out, errScriptArgs, sha)
	}
	for _, k := range keys {
		// An error comes at the first key, if at all: same arguments.
		if msg := s.scriptPexpireLocked(db, k, argv[1], now); msg != "" {
			return appendScriptError(out, msg, sha)
		}
	}
	return append(out, replyOne...)
}

// errBatchArgs answers a scripts.ExtendBatch call whose counts do not fit its
// arguments. Redis raises a Lua error there, worded by the interpreter; the
// fake does not mimic its text.
const errBatchArgs = "ERR fakeredis: extend_batch: counts do not match the arguments"

// extendBatchLocked runs scripts.ExtendBatch, or with firstOnly
// scripts.ElectExtendBatch (a value's first key alone must hold its
// token). As in Lua, locks are processed in order and a PEXPIRE error
// ends the script, keeping what was done.
func (s *Server) extendBatchLocked(out []byte, db int, sha string, keys, argv [][]byte, firstOnly bool) []byte {
	if len(argv) == 0 {
		return appendError(out, errBatchArgs)
	}
	count, ok := parseInt64(argv[0])
	if !ok || count < 0 || 1+3*count > int64(len(argv)) {
		return appendError(out, errBatchArgs)
	}
	now := s.nowMs()
	res := make([]bool, count)
	k := 0
	for i := range res {
		a := argv[1+3*i:]
		tok, ttl := a[0], a[1]
		n, ok := parseInt64(a[2])
		if !ok || n < 0 || int64(k)+n > int64(len(keys)) {
			return appendError(out, errBatchArgs)
		}
		mine := keys[k : k+int(n)]
		k += int(n)
		res[i] = true
		check := mine
		if firstOnly {
			check = mine[:min(1, len(mine))]
		}
		for j := range check {
			v, found, msg := s.scriptGetLocked(db, mine, j, now)
			if msg != "" {
				return appendScriptError(out, msg, sha)
			}
			if !found || v != string(tok) {
				res[i] = false
				break
			}
		}
		if !res[i] {
			continue
		}
		for _, key := range mine {
			if msg := s.scriptPexpireLocked(db, key, ttl, now); msg != "" {
				return appendScriptError(out, msg, sha)
			}
		}
	}
	out = resp.AppendArrayHeader(out, len(res))
	for _, r := range res {
		if r {
			out = append(out, replyOne...)
		} else {
			out = append(out, replyZero...)
		}
	}
	return out
}

// batchLocked runs a batch script made of a one-value script, one: ARGV[1]
// is the number of values; then, per value, three arguments and nkeys of
// KEYS, in order, which one is given. As in Lua, values are processed in
// order, and an error ends the script, keeping what was done. The reply
// is an array of one's integer answers.
func (s *Server) batchLocked(out []byte, keys, argv [][]byte, nkeys int, one func(out []byte, keys, argv [][]byte) []byte) []byte {
	if len(argv) == 0 {
		return appendError(out, errBatchArgs)
	}
	count, ok := parseInt64(argv[0])
	if !ok || count < 0 || 1+3*count > int64(len(argv)) || int64(nkeys)*count > int64(len(keys)) {
		return appendError(out, errBatchArgs)
	}
	res := make([]bool, count)
	var scratch []byte
	for i := range res {
		scratch = one(scratch[:0], keys[nkeys*i:nkeys*(i+1)], argv[1+3*i:4+3*i])
		switch string(scratch) {
		case replyOne:
			res[i] = true
		case replyZero:
		default: // an error, which ends the script
			return append(out, scratch...)
		}
	}
	out = resp.AppendArrayHeader(out, len(res))
	for _, r := range res {
		if r {
			out = append(out, replyOne...)
		} else {
			out = append(out, replyZero...)
		}
	}
	return out
}

// isSemaphoreRecord reports whether a key's value is a semaphore's record
// ("semaphore:"+P), which the lock scripts refuse to treat as a holder.
func isSemaphoreRecord(v string) bool { return strings.HasPrefix(v, "semaphore:") }

// notALock is the error the lock scripts return for a semaphore's record
// at key.
func notALock(key []byte) string { return "WRONGKIND " + string(key) + " is a semaphore, not a lock" }
