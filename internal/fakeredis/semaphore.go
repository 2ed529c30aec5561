package fakeredis

import (
	"strconv"
	"strings"

	"github.com/volleylock/volley/resp"
)

// The scripts of semaphores (scripts.SemAcquire, scripts.SemRelease and
// scripts.SemExtend), run natively. Each follows its Lua statement by
// statement, as the fencing scripts do (see fence.go): keys passed twice,
// a permit's index that is not one (read by tonumber, as a double), a
// record of the wrong type and missing arguments give what Redis gives.

// semRecordPrefix starts a semaphore's record: "semaphore:" and P.
const semRecordPrefix = "semaphore:"

// semAcquireLocked runs scripts.SemAcquire.
func (s *Server) semAcquireLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	fenced := len(argv) > 3 // the counter's key is the last
	n := len(keys) - 1
	if fenced {
		n--
	}
	p := strconv.Itoa(n)
	want := semRecordPrefix + p
	m, found, msg := s.scriptGetLocked(db, keys, 0, now)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if found && m != want {
		if rest, ok := strings.CutPrefix(m, semRecordPrefix); ok {
			return appendErrorReply(out, "PERMITS "+string(keys[0])+" has "+rest+" permits, not "+p)
		}
		return appendErrorReply(out, "WRONGKIND "+string(keys[0])+" is a lock, not a semaphore")
	}
	k, msg := luaKeyIndex(keys, argv, 2)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	key, ok := luaArg(keys, k)
	if !ok {
		return appendScriptError(out, errScriptArgs, sha)
	}
	// ARGV[3] is there, so ARGV[1] and ARGV[2] are: SET NX PX checks the
	// TTL, then sets the permit's key if it does not exist.
	exp, msg := setPXExpiry(argv[1], now)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if _, taken := s.lookupLocked(db, key, now); !taken {
		s.dbs[db][string(key)] = entry{val: string(argv[0]), exp: exp}
		less, msg := luaLess(luaNumber{float64(s.scriptPttlLocked(db, keys[0], now)), true}, luaToNumber(argv[1]))
		if msg != "" {
			return appendScriptError(out, msg, sha)
		}
		if less {
			s.dbs[db][string(keys[0])] = entry{val: want, exp: exp}
		}
		if fenced {
			return s.fenceTailLocked(out, db, sha, keys, argv, len(keys)-1, 3, argv[0], now)
		}
		return resp.AppendBulk(out, argv[0]) // the token: the grant names its request
	}
	// Taken: the indexes of the permits whose keys do not exist, a Lua
	// table of numbers, which is an array of integers, empty or not.
	var free []int64
	for i, pk := range keys[1:max(n+1, 1)] {
		if _, ok := s.lookupLocked(db, pk, now); !ok {
			free = append(free, int64(i))
		}
	}
	out = resp.AppendArrayHeader(out, len(free))
	for _, i := range free {
		out = resp.AppendInteger(out, i)
	}
	return out
}

// semReleaseLocked runs scripts.SemRelease, appending to c.out; with "1" as
// ARGV[3] it publishes as scripts.Release does, on the record's channel.
func (c *client) semReleaseLocked(sha string, keys, argv [][]byte) {
	s, db := c.s, c.db
	now := s.nowMs()
	k, msg := luaKeyIndex(keys, argv, 1)
	if msg != "" {
		c.out = appendScriptError(c.out, msg, sha)
		return
	}
	v, found, msg := s.scriptGetLocked(db, keys, k, now)
	if msg != "" {
		c.out = appendScriptError(c.out, msg, sha)
		return
	}
	// ARGV[2] is there, so ARGV[1] is.
	if !found || v != string(argv[0]) {
		c.out = append(c.out, replyZero...)
		return
	}
	delete(s.dbs[db], string(keys[k]))
	if len(keys) < 2 { // EXISTS with no key: unpack(KEYS,2) is empty
		c.out = appendScriptError(c.out, errScriptArity, sha)
		return
	}
	left := false
	for _, pk := range keys[1:] {
		if _, ok := s.lookupLocked(db, pk, now); ok {
			left = true
		}
	}
	if !left {
		delete(s.dbs[db], string(keys[0]))
	}
	if len(argv) > 2 && string(argv[2]) == "1" {
		c.publishReleaseLocked(keys[0], argv[0], "")
	}
	c.out = append(c.out, replyOne...)
}

// semExtendLocked runs scripts.SemExtend: PEXPIRE's checks and errors
// apply to the permit's key; the record is then written as SET PX would,
// over whatever it holds, if its PTTL is below the TTL.
func (s *Server) semExtendLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	v, found, msg := s.scriptGetLocked(db, keys, 1, now)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if !found || len(argv) == 0 || v != string(argv[0]) {
		return append(out, replyZero...)
	}
	if len(argv) < 2 {
		return appendScriptError(out, errScriptArgs, sha)
	}
	if msg := s.scriptPexpireLocked(db, keys[1], argv[1], now); msg != "" {
		return appendScriptError(out, msg, sha)
	}
	// m=redis.pcall("get",KEYS[1]): an error (another type) is a table,
	// neither false nor the record's text.
	rec, recFound, recMsg := s.scriptGetLocked(db, keys, 0, now)
	if recMsg == "" && !recFound {
		// m==false: the concatenation comes only in the SET.
	} else if len(argv) < 3 { // "semaphore:"..nil
		return appendScriptError(out, errLuaConcatField, sha)
	} else if recMsg != "" || rec != semRecordPrefix+string(argv[2]) {
		return append(out, replyOne...) // someone else's record: left alone
	}
	less, msg := luaLess(luaNumber{float64(s.scriptPttlLocked(db, keys[0], now)), true}, luaToNumber(argv[1]))
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if less {
		if len(argv) < 3 { // "semaphore:"..nil
			return appendScriptError(out, errLuaConcatField, sha)
		}
		if msg := s.scriptSetValuePXLocked(db, keys[0], semRecordPrefix+string(argv[2]), argv[1], now); msg != "" {
			return appendScriptError(out, msg, sha)
		}
	}
	return append(out, replyOne...)
}
