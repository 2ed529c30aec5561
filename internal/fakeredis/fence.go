package fakeredis

import "github.com/volleylock/volley/resp"

// The scripts of fencing (scripts.FenceCheck and the others of
// internal/scripts), run natively. Each follows its Lua statement by
// statement, so that keys passed twice, missing arguments, keys of the
// wrong type and numbers Lua reads its own way (as doubles, see
// luaToNumber) give what Redis gives: the same reply, or the same error
// after the same changes.

// fenceCheckLocked runs scripts.FenceCheck.
func (s *Server) fenceCheckLocked(out []byte, db int, sha string, keys [][]byte) []byte {
	vouched, msg := s.fenceSetAsideLocked(db, keys, s.runID) // string.match(INFO server, "run_id:(%x+)")
	switch {
	case msg != "":
		return appendScriptError(out, msg, sha)
	case vouched:
		return append(out, replyOne...)
	}
	return append(out, replyZero...)
}

// fenceSetAsideLocked is the check of scripts.FenceCheck and of the
// prelude of the cluster forms (fence_vouch.lua), on keys counter, run
// key, unsure hash: if the run key holds id, the counter is vouched for
// (true); else the counter, if any, is set aside as stale, since is set
// to now, the run key to id (false). msg is the error a redis.call
// raised, if any.
func (s *Server) fenceSetAsideLocked(db int, keys [][]byte, id string) (vouched bool, msg string) {
	now := s.clock.Now()
	ms := now.UnixMilli()
	run, found, msg := s.scriptGetLocked(db, keys, 1, ms)
	if msg != "" {
		return false, msg
	}
	if found && run == id {
		return true, ""
	}
	g, found, msg := s.scriptGetLocked(db, keys, 0, ms)
	if msg != "" {
		return false, msg
	}
	if found {
		stale, hasStale, msg := s.scriptHgetLocked(db, keys, 2, "stale", ms)
		if msg != "" {
			return false, msg
		}
		raise := !hasStale
		if hasStale {
			if raise, msg = luaLess(luaToNumber([]byte(stale)), luaToNumber([]byte(g))); msg != "" {
				return false, msg
			}
		}
		if raise {
			if msg := s.scriptHsetLocked(db, keys[2], "stale", []byte(g), ms); msg != "" {
				return false, msg
			}
		}
		delete(s.dbs[db], string(keys[0]))
	}
	unsure, ok := luaArg(keys, 2)
	if !ok {
		return false, errScriptArgs
	}
	var scratch [24]byte
	if msg := s.scriptHsetLocked(db, unsure, "since", appendLuaTime(scratch[:0], now), ms); msg != "" {
		return false, msg
	}
	s.dbs[db][string(keys[1])] = entry{val: id}
	return false, ""
}

// fenceLockLocked runs scripts.FenceLock.
func (s *Server) fenceLockLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	n := max(len(keys)-1, 0)
	out, set := s.lockKeysLocked(out, db, sha, keys[:n], argv, true, now)
	if !set {
		return out
	}
	return s.fenceTailLocked(out, db, sha, keys, argv, len(keys)-1, 2, nil, now)
}

// fenceTailLocked ends a lock script that fences once it set its keys
// (scripts.FenceLock, and scripts.RWLock and scripts.SemAcquire fenced):
// the counter is keys[k], the proposal argv[p]. If the counter exists, it
// is raised to the proposal and the answer is {1, counter as it was};
// else {1}; or the comparison's error. With a grant (SemAcquire's token),
// the answers are {grant, counter} and {grant, ""}.
func (s *Server) fenceTailLocked(out []byte, db int, sha string, keys, argv [][]byte, k, p int, grant []byte, now int64) []byte {
	g, found, msg := s.scriptGetLocked(db, keys, k, now)
	switch {
	case msg != "":
		return appendScriptError(out, msg, sha)
	case found:
		// Raise the counter to the proposal, then answer what it was.
		mark := len(out)
		out = s.raiseCounterLocked(out, db, sha, keys[k], g, argv, p)
		if out[mark] == '-' {
			return out
		}
		out = resp.AppendArrayHeader(out[:mark], 2)
		out = appendGrant(out, grant)
		return resp.AppendBulkString(out, g)
	case grant != nil:
		out = resp.AppendArrayHeader(out, 2)
		out = appendGrant(out, grant)
		return resp.AppendBulkString(out, "")
	default:
		out = resp.AppendArrayHeader(out, 1)
		return append(out, replyOne...)
	}
}

// appendGrant appends a fenced lock script's first element: 1, or the
// grant when there is one.
func appendGrant(out, grant []byte) []byte {
	if grant == nil {
		return append(out, replyOne...)
	}
	return resp.AppendBulk(out, grant)
}

// fenceWriteLocked runs scripts.FenceWrite.
func (s *Server) fenceWriteLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	last := len(keys) - 1
	for i := 0; i < last; i++ {
		v, found, msg := s.scriptGetLocked(db, keys, i, now)
		if msg != "" {
			return appendScriptError(out, msg, sha)
		}
		// false, or a string, ~= ARGV[1]; nil if absent.
		if !found || len(argv) == 0 || v != string(argv[0]) {
			return append(out, replyZero...)
		}
	}
	g, found, msg := s.scriptGetLocked(db, keys, last, now)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if !found {
		return append(out, ":2\r\n"...)
	}
	return s.raiseCounterLocked(out, db, sha, keys[last], g, argv, 1)
}

// raiseCounterLocked raises the counter g at key to the script's argument
// argv[i] (ARGV[i+1]), as scripts.FenceLock (i = 2), scripts.RWLock (i = 3), scripts.FenceWrite
// and scripts.FenceRepair (i = 1) do: if tonumber(g)<tonumber(argv[i]),
// set the key to argv[i]; it appends 1, or the error of the comparison.
func (s *Server) raiseCounterLocked(out []byte, db int, sha string, key []byte, g string, argv [][]byte, i int) []byte {
	raise, msg := luaLess(luaToNumber([]byte(g)), luaArgNumber(argv, i))
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if raise {
		// tonumber(nil) is nil, which compares with nothing: argv[i] exists.
		s.dbs[db][string(key)] = entry{val: string(argv[i])}
	}
	return append(out, replyOne...)
}

// fenceStateLocked runs scripts.FenceState.
func (s *Server) fenceStateLocked(out []byte, db int, sha string, keys [][]byte) []byte {
	now := s.clock.Now()
	ms := now.UnixMilli()
	var scratch [24]byte
	nowUs := appendLuaTime(scratch[:0], now)
	g, hasG, msg := s.scriptGetLocked(db, keys, 0, ms)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	since, hasSince, msg := s.scriptHgetLocked(db, keys, 1, "since", ms)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if !hasG && !hasSince {
		// Lost both without a restart (FLUSHALL, an eviction): unsure now.
		since = string(nowUs)
		if msg := s.scriptHsetLocked(db, keys[1], "since", nowUs, ms); msg != "" {
			return appendScriptError(out, msg, sha)
		}
	}
	stale, _, msg := s.scriptHgetLocked(db, keys, 1, "stale", ms)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	out = resp.AppendArrayHeader(out, 4)
	out = resp.AppendBulkString(out, g) // "" when missing, as `or ""` makes it
	out = resp.AppendBulkString(out, since)
	out = resp.AppendBulkString(out, stale)
	return resp.AppendBulk(out, nowUs)
}

// fenceRepairLocked runs scripts.FenceRepair.
func (s *Server) fenceRepairLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	g, found, msg := s.scriptGetLocked(db, keys, 0, now)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if found {
		return s.raiseCounterLocked(out, db, sha, keys[0], g, argv, 1)
	}
	since, found, msg := s.scriptHgetLocked(db, keys, 1, "since", now)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	// false ~= ARGV[1], and anything ~= nil.
	if !found || len(argv) == 0 || since != string(argv[0]) {
		return append(out, replyZero...)
	}
	if msg := s.scriptSetLocked(db, keys[0], argv, 1); msg != "" {
		return appendScriptError(out, msg, sha)
	}
	delete(s.dbs[db], string(keys[1]))
	return append(out, replyOne...)
}
