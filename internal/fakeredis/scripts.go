package fakeredis

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
)

// The Redlock scripts the fake runs (see REDLOCK.md), natively in Go: the
// single-key release and extend, and the multi-key lock, release and extend
// of redlock.LockMulti.
const (
	// CompareAndDeleteScript deletes KEYS[1] if it holds ARGV[1] and
	// returns 1, else returns 0: Redlock's release.
	CompareAndDeleteScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	// CompareAndPexpireScript sets KEYS[1]'s time to live to ARGV[2]
	// milliseconds if it holds ARGV[1] and returns PEXPIRE's reply, else
	// returns 0: Redlock's extend.
	CompareAndPexpireScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`
	// LockMultiScript sets every key to ARGV[1] with a TTL of ARGV[2]
	// milliseconds and returns 1, only if none of them exists; else it
	// returns 0.
	LockMultiScript = `for i=1,#KEYS do if redis.call("exists",KEYS[i])==1 then return 0 end end for i=1,#KEYS do redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2]) end return 1`
	// ReleaseMultiScript deletes every key that holds ARGV[1]; it returns 1
	// if all of them did, else 0.
	ReleaseMultiScript = `local n=0 for i=1,#KEYS do if redis.call("get",KEYS[i])==ARGV[1] then n=n+redis.call("del",KEYS[i]) end end if n==#KEYS then return 1 else return 0 end`
	// ExtendMultiScript sets every key's TTL to ARGV[2] milliseconds and
	// returns 1, only if every key holds ARGV[1]; else it returns 0.
	ExtendMultiScript = `for i=1,#KEYS do if redis.call("get",KEYS[i])~=ARGV[1] then return 0 end end for i=1,#KEYS do redis.call("pexpire",KEYS[i],ARGV[2]) end return 1`
	// ExtendBatchScript extends many locks in one call: ARGV[1] is their
	// count, then per lock its token, TTL in milliseconds and number of
	// keys (taken from KEYS in order). Each lock whose keys all hold its
	// token is extended; the reply has 1 for it, else 0.
	ExtendBatchScript = `local out={} local k=1 local a=2 for i=1,tonumber(ARGV[1]) do local tok=ARGV[a] local ttl=ARGV[a+1] local n=tonumber(ARGV[a+2]) a=a+3 local ok=1 for j=k,k+n-1 do if redis.call("get",KEYS[j])~=tok then ok=0 break end end if ok==1 then for j=k,k+n-1 do redis.call("pexpire",KEYS[j],ttl) end end out[i]=ok k=k+n end return out`
)

// scriptKind names a script the fake knows how to run.
type scriptKind uint8

const (
	scriptUnknown scriptKind = iota
	scriptCompareAndDelete
	scriptCompareAndPexpire
	scriptLockMulti
	scriptReleaseMulti
	scriptExtendMulti
	scriptExtendBatch
)

// canonical scripts by their normalised body.
var knownScripts = map[string]scriptKind{
	normaliseScript([]byte(CompareAndDeleteScript)):  scriptCompareAndDelete,
	normaliseScript([]byte(CompareAndPexpireScript)): scriptCompareAndPexpire,
	normaliseScript([]byte(LockMultiScript)):         scriptLockMulti,
	normaliseScript([]byte(ReleaseMultiScript)):      scriptReleaseMulti,
	normaliseScript([]byte(ExtendMultiScript)):       scriptExtendMulti,
	normaliseScript([]byte(ExtendBatchScript)):       scriptExtendBatch,
}

// errUnknownScript answers EVAL and SCRIPT LOAD of any other script.
const errUnknownScript = "ERR fakeredis runs only the Redlock scripts (fakeredis.CompareAndDeleteScript, " +
	"CompareAndPexpireScript, LockMultiScript, ReleaseMultiScript, ExtendMultiScript, ExtendBatchScript); this script is none of them"

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

// SHA-1s of the canonical scripts, so that EVAL of them hashes nothing.
var (
	compareAndDeleteSHA  = sha1Hex([]byte(CompareAndDeleteScript))
	compareAndPexpireSHA = sha1Hex([]byte(CompareAndPexpireScript))
)

// loadScriptLocked caches body under its SHA-1 and returns the SHA-1 and
// the kind of script, scriptUnknown if body is not a lock script.
func (s *Server) loadScriptLocked(body []byte) (string, scriptKind) {
	var sha string
	kind := scriptUnknown
	switch string(body) {
	case CompareAndDeleteScript:
		sha, kind = compareAndDeleteSHA, scriptCompareAndDelete
	case CompareAndPexpireScript:
		sha, kind = compareAndPexpireSHA, scriptCompareAndPexpire
	default:
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
	c.out = c.s.runScriptLocked(c.out, c.db, kind, sha, keys, argv)
}

// errScriptArgs is what redis.call raises when given a nil argument, such as
// KEYS[1] with no keys or ARGV[2] with one argument.
const errScriptArgs = "ERR Lua redis lib command arguments must be strings or integers"

// runScriptLocked runs a lock script and appends its reply: what the Lua
// script would return, or the error its redis.call would raise.
func (s *Server) runScriptLocked(out []byte, db int, kind scriptKind, sha string, keys, argv [][]byte) []byte {
	switch kind {
	case scriptLockMulti:
		return s.lockMultiLocked(out, db, sha, keys, argv)
	case scriptReleaseMulti:
		return s.releaseMultiLocked(out, db, keys, argv)
	case scriptExtendMulti:
		return s.extendMultiLocked(out, db, sha, keys, argv)
	case scriptExtendBatch:
		return s.extendBatchLocked(out, db, sha, keys, argv)
	}
	if len(keys) == 0 {
		return appendScriptError(out, errScriptArgs, sha)
	}
	key := keys[0]
	e, found := s.lookupLocked(db, key, s.nowMs())
	// redis.call("get") returns false for a missing key, and ARGV[1] is nil
	// when absent: both compare unequal to anything.
	if !found || len(argv) == 0 || e.val != string(argv[0]) {
		return append(out, replyZero...)
	}
	switch kind {
	case scriptCompareAndDelete:
		delete(s.dbs[db], string(key))
		return append(out, replyOne...)
	default: // scriptCompareAndPexpire
		if len(argv) < 2 {
			return appendScriptError(out, errScriptArgs, sha)
		}
		mark := len(out)
		out = s.pexpireLocked(out, db, key, argv[1], nil)
		if out[mark] == '-' {
			msg := string(out[mark+1 : len(out)-2])
			return appendScriptError(out[:mark], msg, sha)
		}
		return out
	}
}

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
	c.out = appendBulkString(c.out, sha)
}

func cmdScriptExists(c *client, args [][]byte) {
	c.out = appendArrayLen(c.out, len(args)-2)
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

// lockMultiLocked runs LockMultiScript. As in Lua, a missing or invalid
// ARGV fails only once the loop reaches the first SET, and every SET gets
// the same arguments, so the script fails before changing anything or not
// at all.
func (s *Server) lockMultiLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	for _, k := range keys {
		if _, ok := s.lookupLocked(db, k, now); ok {
			return append(out, replyZero...)
		}
	}
	if len(keys) == 0 {
		return append(out, replyOne...)
	}
	if len(argv) < 2 {
		return appendScriptError(out, errScriptArgs, sha)
	}
	ms, ok := parseInt64(argv[1])
	switch {
	case !ok:
		return appendScriptError(out, errNotInteger, sha)
	case ms <= 0 || ms > math.MaxInt64-now:
		return appendScriptError(out, "ERR invalid expire time in 'set' command", sha)
	}
	for _, k := range keys {
		s.dbs[db][string(k)] = entry{val: string(argv[0]), exp: now + ms}
	}
	return append(out, replyOne...)
}

// releaseMultiLocked runs ReleaseMultiScript.
func (s *Server) releaseMultiLocked(out []byte, db int, keys, argv [][]byte) []byte {
	now := s.nowMs()
	n := 0
	for _, k := range keys {
		if e, ok := s.lookupLocked(db, k, now); ok && len(argv) > 0 && e.val == string(argv[0]) {
			delete(s.dbs[db], string(k))
			n++
		}
	}
	if n == len(keys) {
		return append(out, replyOne...)
	}
	return append(out, replyZero...)
}

// extendMultiLocked runs ExtendMultiScript: PEXPIRE's own checks and errors
// apply, raised at the first key, before any key changed.
func (s *Server) extendMultiLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	for _, k := range keys {
		if e, ok := s.lookupLocked(db, k, now); !ok || len(argv) == 0 || e.val != string(argv[0]) {
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
		mark := len(out)
		out = s.pexpireLocked(out, db, k, argv[1], nil)
		if out[mark] == '-' { // at the first key, if at all: same arguments
			msg := string(out[mark+1 : len(out)-2])
			return appendScriptError(out[:mark], msg, sha)
		}
		out = out[:mark] // Lua drops each PEXPIRE's reply
	}
	return append(out, replyOne...)
}

// errBatchArgs answers an ExtendBatchScript call whose counts do not fit its
// arguments. Redis raises a Lua error there, worded by the interpreter; the
// fake does not mimic its text.
const errBatchArgs = "ERR fakeredis: ExtendBatchScript: counts do not match the arguments"

// extendBatchLocked runs ExtendBatchScript. As in Lua, locks are processed
// in order and a PEXPIRE error ends the script, keeping what was done.
func (s *Server) extendBatchLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
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
		for _, key := range mine {
			if e, found := s.lookupLocked(db, key, now); !found || e.val != string(tok) {
				res[i] = false
				break
			}
		}
		if !res[i] {
			continue
		}
		for _, key := range mine {
			mark := len(out)
			out = s.pexpireLocked(out, db, key, ttl, nil)
			if out[mark] == '-' {
				msg := string(out[mark+1 : len(out)-2])
				return appendScriptError(out[:mark], msg, sha)
			}
			out = out[:mark]
		}
	}
	out = appendArrayLen(out, len(res))
	for _, r := range res {
		if r {
			out = append(out, replyOne...)
		} else {
			out = append(out, replyZero...)
		}
	}
	return out
}
