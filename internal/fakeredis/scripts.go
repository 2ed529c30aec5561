package fakeredis

import (
	"crypto/sha1"
	"encoding/hex"
)

// The Redlock scripts the fake runs (see REDLOCK.md), natively in Go: the
// single-key release, extend and handover, the multi-key lock, release and
// extend of redlock.LockMulti, and the scripts of waiting: an attempt that
// reports the holder, and releases that wake waiters by publishing on the
// key's channel.
// The scripts of fencing follow in their own block.
const (
	// CompareAndDeleteScript deletes KEYS[1] if it holds ARGV[1] and
	// returns 1, else returns 0: Redlock's release, without waking waiters.
	CompareAndDeleteScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	// CompareAndPexpireScript sets KEYS[1]'s time to live to ARGV[2]
	// milliseconds if it holds ARGV[1] and returns PEXPIRE's reply, else
	// returns 0: Redlock's extend.
	CompareAndPexpireScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`
	// HandoverScript sets KEYS[1] to ARGV[2] with a TTL of ARGV[3]
	// milliseconds and returns 1 if it holds ARGV[1], else returns 0:
	// Redlock's passing of a held lock from one holder to the next. It
	// never creates a missing key and publishes nothing.
	HandoverScript = `if redis.call("get",KEYS[1]) == ARGV[1] then redis.call("set",KEYS[1],ARGV[2],"px",ARGV[3]) return 1 else return 0 end`
	// ReleaseAndPublishScript deletes KEYS[1] if it holds ARGV[1], publishes
	// the release's id (the first 16 hex digits of ARGV[1]'s SHA-1) on the
	// channel "volley:released:" followed by the key, and returns 1; else it
	// returns 0. It publishes with redis.pcall, so that on Redis an ACL that
	// forbids PUBLISH does not fail the release (the fake has no ACLs).
	ReleaseAndPublishScript = `if redis.call("get",KEYS[1]) == ARGV[1] then redis.call("del",KEYS[1]) redis.pcall("publish","volley:released:"..KEYS[1],string.sub(redis.sha1hex(ARGV[1]),1,16)) return 1 else return 0 end`
	// LockWaitScript sets KEYS[1] to ARGV[1] with a TTL of ARGV[2]
	// milliseconds and returns 1 if the key does not exist; else it returns
	// the holder's id (the first 16 hex digits of the SHA-1 of the key's
	// value) and the key's PTTL, an array of a bulk string and an integer.
	LockWaitScript = `local v=redis.call("get",KEYS[1]) if v then return {string.sub(redis.sha1hex(v),1,16),redis.call("pttl",KEYS[1])} end redis.call("set",KEYS[1],ARGV[1],"px",ARGV[2]) return 1`
	// LockMultiScript sets every key to ARGV[1] with a TTL of ARGV[2]
	// milliseconds and returns 1, only if none of them exists; else it
	// returns the first existing key's holder id and PTTL, as
	// LockWaitScript does.
	LockMultiScript = `for i=1,#KEYS do local v=redis.call("get",KEYS[i]) if v then return {string.sub(redis.sha1hex(v),1,16),redis.call("pttl",KEYS[i])} end end for i=1,#KEYS do redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2]) end return 1`
	// ReleaseMultiScript deletes every key that holds ARGV[1]; it returns 1
	// if all of them did, else 0. It wakes no waiters.
	ReleaseMultiScript = `local n=0 for i=1,#KEYS do if redis.call("get",KEYS[i])==ARGV[1] then n=n+redis.call("del",KEYS[i]) end end if n==#KEYS then return 1 else return 0 end`
	// ReleaseMultiAndPublishScript is ReleaseMultiScript that also
	// publishes, for each key it deletes, as ReleaseAndPublishScript does.
	ReleaseMultiAndPublishScript = `local n=0 for i=1,#KEYS do if redis.call("get",KEYS[i])==ARGV[1] then n=n+redis.call("del",KEYS[i]) redis.pcall("publish","volley:released:"..KEYS[i],string.sub(redis.sha1hex(ARGV[1]),1,16)) end end if n==#KEYS then return 1 else return 0 end`
	// ExtendMultiScript sets every key's TTL to ARGV[2] milliseconds and
	// returns 1, only if every key holds ARGV[1]; else it returns 0.
	ExtendMultiScript = `for i=1,#KEYS do if redis.call("get",KEYS[i])~=ARGV[1] then return 0 end end for i=1,#KEYS do redis.call("pexpire",KEYS[i],ARGV[2]) end return 1`
	// ExtendBatchScript extends many locks in one call: ARGV[1] is their
	// count, then per lock its token, TTL in milliseconds and number of
	// keys (taken from KEYS in order). Each lock whose keys all hold its
	// token is extended; the reply has 1 for it, else 0.
	ExtendBatchScript = `local out={} local k=1 local a=2 for i=1,tonumber(ARGV[1]) do local tok=ARGV[a] local ttl=ARGV[a+1] local n=tonumber(ARGV[a+2]) a=a+3 local ok=1 for j=k,k+n-1 do if redis.call("get",KEYS[j])~=tok then ok=0 break end end if ok==1 then for j=k,k+n-1 do redis.call("pexpire",KEYS[j],ttl) end end out[i]=ok k=k+n end return out`
)

// The scripts of fencing (redlock's Config.Fencing), natively in Go (see
// fence.go). Each master keeps a fencing counter, a decimal string, in the
// key fencing passes as the counter ("volley:fence"); the run_id under
// which it last vouched for it ("volley:fence:run"); and, while it has no
// counter it vouches for, a hash ("volley:fence:unsure") of since, its
// TIME in microseconds when it noticed, and stale, the counter it had
// then, if any. Counters are compared as Lua does, as doubles (see
// luaToNumber).
const (
	// FenceCheckScript runs in every connection's handshake. KEYS: the
	// counter, the run key, the unsure hash. If the run key holds the
	// server's run_id (from INFO server), it returns 1 and changes
	// nothing. Else it moves the counter, if any, to the hash's stale
	// field (unless stale is already at least as large), sets since to
	// TIME in microseconds, sets the run key to the run_id and returns 0.
	FenceCheckScript = `local id=string.match(redis.call("info","server"),"run_id:(%x+)") if not id then return redis.error_reply("ERR fencing: INFO gave no run_id") end if redis.call("get",KEYS[2])==id then return 1 end local g=redis.call("get",KEYS[1]) if g then local s=redis.call("hget",KEYS[3],"stale") if not s or tonumber(s)<tonumber(g) then redis.call("hset",KEYS[3],"stale",g) end redis.call("del",KEYS[1]) end local t=redis.call("time") redis.call("hset",KEYS[3],"since",t[1]..string.format("%06d",tonumber(t[2]))) redis.call("set",KEYS[2],id) return 0`
	// FenceLockScript is LockMultiScript over all of KEYS but the last,
	// which is the counter: if a key exists it returns that key's holder
	// id and PTTL; else it sets the keys to ARGV[1] with a TTL of ARGV[2]
	// milliseconds and returns {1, counter}, or {1} if there is no counter.
	FenceLockScript = `local n=#KEYS-1 for i=1,n do local v=redis.call("get",KEYS[i]) if v then return {string.sub(redis.sha1hex(v),1,16),redis.call("pttl",KEYS[i])} end end for i=1,n do redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2]) end local g=redis.call("get",KEYS[#KEYS]) if g then return {1,g} end return {1}`
	// FenceWriteScript returns 0 if one of KEYS but the last does not hold
	// ARGV[1]; else 2 if there is no counter (the last of KEYS); else it
	// raises the counter to ARGV[2] (never lowers it) and returns 1.
	FenceWriteScript = `local n=#KEYS-1 for i=1,n do if redis.call("get",KEYS[i])~=ARGV[1] then return 0 end end local g=redis.call("get",KEYS[#KEYS]) if not g then return 2 end if tonumber(g)<tonumber(ARGV[2]) then redis.call("set",KEYS[#KEYS],ARGV[2]) end return 1`
	// FenceStateScript returns {counter, since, stale, now} (KEYS: the
	// counter, the unsure hash), four bulk strings, "" for what is
	// missing; now is TIME in microseconds. With neither a counter nor a
	// since, it first sets since to now.
	FenceStateScript = `local t=redis.call("time") local now=t[1]..string.format("%06d",tonumber(t[2])) local g=redis.call("get",KEYS[1]) local since=redis.call("hget",KEYS[2],"since") if not g and not since then since=now redis.call("hset",KEYS[2],"since",now) end return {g or "",since or "",redis.call("hget",KEYS[2],"stale") or "",now}`
	// FenceRepairScript (KEYS: the counter, the unsure hash; ARGV: a since,
	// a value) raises an existing counter to the value and returns 1. With
	// no counter, if the hash's since is ARGV[1] it sets the counter to the
	// value, deletes the hash and returns 1; else it returns 0.
	FenceRepairScript = `local g=redis.call("get",KEYS[1]) if g then if tonumber(g)<tonumber(ARGV[2]) then redis.call("set",KEYS[1],ARGV[2]) end return 1 end if redis.call("hget",KEYS[2],"since")~=ARGV[1] then return 0 end redis.call("set",KEYS[1],ARGV[2]) redis.call("del",KEYS[2]) return 1`
)

// releasedChannelPrefix starts the channel the release scripts publish on.
const releasedChannelPrefix = "volley:released:"

// scriptKind names a script the fake knows how to run.
type scriptKind uint8

const (
	scriptUnknown scriptKind = iota
	scriptCompareAndDelete
	scriptCompareAndPexpire
	scriptHandover
	scriptReleaseAndPublish
	scriptLockWait
	scriptLockMulti
	scriptReleaseMulti
	scriptReleaseMultiAndPublish
	scriptExtendMulti
	scriptExtendBatch
	scriptFenceCheck
	scriptFenceLock
	scriptFenceWrite
	scriptFenceState
	scriptFenceRepair
)

// scriptTable is every script the fake runs, one entry each.
var scriptTable = []struct {
	body string
	kind scriptKind
}{
	{CompareAndDeleteScript, scriptCompareAndDelete},
	{CompareAndPexpireScript, scriptCompareAndPexpire},
	{HandoverScript, scriptHandover},
	{ReleaseAndPublishScript, scriptReleaseAndPublish},
	{LockWaitScript, scriptLockWait},
	{LockMultiScript, scriptLockMulti},
	{ReleaseMultiScript, scriptReleaseMulti},
	{ReleaseMultiAndPublishScript, scriptReleaseMultiAndPublish},
	{ExtendMultiScript, scriptExtendMulti},
	{ExtendBatchScript, scriptExtendBatch},
	{FenceCheckScript, scriptFenceCheck},
	{FenceLockScript, scriptFenceLock},
	{FenceWriteScript, scriptFenceWrite},
	{FenceStateScript, scriptFenceState},
	{FenceRepairScript, scriptFenceRepair},
}

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
)

func init() {
	for _, sc := range scriptTable {
		canonicalScripts[sc.body] = knownScript{sc.kind, sha1Hex([]byte(sc.body))}
		knownScripts[normaliseScript([]byte(sc.body))] = sc.kind
	}
}

// errUnknownScript answers EVAL and SCRIPT LOAD of any other script.
const errUnknownScript = "ERR fakeredis runs only the Redlock scripts (fakeredis.CompareAndDeleteScript, " +
	"CompareAndPexpireScript, HandoverScript, ReleaseAndPublishScript, LockWaitScript, LockMultiScript, " +
	"ReleaseMultiScript, ReleaseMultiAndPublishScript, ExtendMultiScript, ExtendBatchScript, FenceCheckScript, " +
	"FenceLockScript, FenceWriteScript, FenceStateScript, FenceRepairScript); this script is none of them"

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

// runScriptLocked runs a lock script and appends its reply to c.out: what
// the Lua script would return, or the error its redis.call would raise.
// Messages the script publishes to c itself come first, as on Redis.
func (c *client) runScriptLocked(kind scriptKind, sha string, keys, argv [][]byte) {
	s, db := c.s, c.db
	switch kind {
	case scriptFenceCheck:
		c.out = s.fenceCheckLocked(c.out, db, sha, keys)
		return
	case scriptFenceLock:
		c.out = s.fenceLockLocked(c.out, db, sha, keys, argv)
		return
	case scriptFenceWrite:
		c.out = s.fenceWriteLocked(c.out, db, sha, keys, argv)
		return
	case scriptFenceState:
		c.out = s.fenceStateLocked(c.out, db, sha, keys)
		return
	case scriptFenceRepair:
		c.out = s.fenceRepairLocked(c.out, db, sha, keys, argv)
		return
	case scriptLockWait:
		if len(keys) == 0 {
			c.out = appendScriptError(c.out, errScriptArgs, sha)
			return
		}
		c.out = s.lockMultiLocked(c.out, db, sha, keys[:1], argv)
		return
	case scriptLockMulti:
		c.out = s.lockMultiLocked(c.out, db, sha, keys, argv)
		return
	case scriptReleaseMulti, scriptReleaseMultiAndPublish:
		c.releaseMultiLocked(sha, keys, argv, kind == scriptReleaseMultiAndPublish)
		return
	case scriptExtendMulti:
		c.out = s.extendMultiLocked(c.out, db, sha, keys, argv)
		return
	case scriptExtendBatch:
		c.out = s.extendBatchLocked(c.out, db, sha, keys, argv)
		return
	}
	now := s.nowMs()
	val, found, msg := s.scriptGetLocked(db, keys, 0, now)
	if msg != "" {
		c.out = appendScriptError(c.out, msg, sha)
		return
	}
	// redis.call("get") returns false for a missing key, and ARGV[1] is nil
	// when absent: both compare unequal to anything.
	if !found || len(argv) == 0 || val != string(argv[0]) {
		c.out = append(c.out, replyZero...)
		return
	}
	key := keys[0]
	switch kind {
	case scriptCompareAndDelete:
		delete(s.dbs[db], string(key))
		c.out = append(c.out, replyOne...)
	case scriptReleaseAndPublish:
		delete(s.dbs[db], string(key))
		c.publishReleaseLocked(key, argv[0])
		c.out = append(c.out, replyOne...)
	case scriptHandover:
		if msg := s.scriptSetPXLocked(db, key, argv, 1, now); msg != "" {
			c.out = appendScriptError(c.out, msg, sha)
			return
		}
		c.out = append(c.out, replyOne...)
	default: // scriptCompareAndPexpire
		if len(argv) < 2 {
			c.out = appendScriptError(c.out, errScriptArgs, sha)
			return
		}
		mark := len(c.out)
		c.out = s.pexpireLocked(c.out, db, key, argv[1], nil)
		if c.out[mark] == '-' {
			msg := string(c.out[mark+1 : len(c.out)-2])
			c.out = appendScriptError(c.out[:mark], msg, sha)
		}
	}
}

// publishReleaseLocked publishes what the release scripts do when they
// delete key, which held token: the release's id on the key's channel.
func (c *client) publishReleaseLocked(key, token []byte) {
	channel := append([]byte(releasedChannelPrefix), key...)
	c.s.publishLocked(c, channel, []byte(holderID(token)))
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

// lockMultiLocked runs LockMultiScript, and LockWaitScript given its one
// key.
func (s *Server) lockMultiLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	out, set := s.lockKeysLocked(out, db, sha, keys, argv, s.nowMs())
	if set {
		out = append(out, replyOne...)
	}
	return out
}

// lockKeysLocked is what LockMultiScript and FenceLockScript share: if one
// of keys exists, it appends that key's holder id and PTTL and returns
// false; else it sets every key to ARGV[1] with a TTL of ARGV[2]
// milliseconds and returns true, appending nothing, or appends the error
// SET raises and returns false. As in Lua, a missing or invalid ARGV fails
// only once the loop reaches the first SET, and every SET gets the same
// arguments, so the script fails before changing anything or not at all.
func (s *Server) lockKeysLocked(out []byte, db int, sha string, keys, argv [][]byte, now int64) ([]byte, bool) {
	for _, k := range keys {
		e, found := s.lookupLocked(db, k, now)
		switch {
		case found && e.hash != nil:
			return appendScriptError(out, errWrongType, sha), false
		case found:
			// A Lua table of a string and a number: an array of a bulk
			// string and an integer.
			out = appendArrayLen(out, 2)
			out = appendBulkString(out, holderID([]byte(e.val)))
			return appendInt(out, e.pttl(now)), false
		}
	}
	for _, k := range keys {
		if msg := s.scriptSetPXLocked(db, k, argv, 0, now); msg != "" {
			return appendScriptError(out, msg, sha), false
		}
	}
	return out, true
}

// releaseMultiLocked runs ReleaseMultiScript, or with publish
// ReleaseMultiAndPublishScript, appending to c.out. A key that holds a
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
				c.publishReleaseLocked(k, argv[0])
			}
		}
	}
	if n == len(keys) {
		c.out = append(c.out, replyOne...)
	} else {
		c.out = append(c.out, replyZero...)
	}
}

// extendMultiLocked runs ExtendMultiScript: PEXPIRE's own checks and errors
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
		for j := range mine {
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
