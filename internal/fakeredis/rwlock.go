package fakeredis

// The scripts of read-write locks (scripts.RWLock, scripts.RWRLock,
// scripts.RWRExtend and scripts.RWRUnlock), run natively. Each follows its
// Lua statement by statement, as the semaphore's do (see semaphore.go):
// missing keys or arguments, keys of the wrong type and TTLs Lua reads its
// own way (tonumber, as doubles) give what Redis gives, the same reply or
// the same error after the same changes. Each reads the clock once: the
// milliseconds of TIME the scripts compute, t[1]*1000+math.floor(t[2]/1000),
// are those keys expire by. The readers are a sorted set (see zset.go) of
// tokens scored by their expiry in those milliseconds.

// waitHolder is the holder's id the scripts answer while readers hold
// the lock or a writer waits for them to leave: no token's.
const waitHolder = "0000000000000000"

// rwWriterLocked is how scripts.RWLock and scripts.RWRLock begin: if the
// writer's key, KEYS[1], exists, it appends its holder's id and PTTL (or
// GET's error), having marked it when mark (see markListenLocked), and
// reports done.
func (s *Server) rwWriterLocked(out []byte, db int, sha string, keys, argv [][]byte, mark bool, now int64) ([]byte, bool) {
	v, found, msg := s.scriptGetLocked(db, keys, 0, now)
	switch {
	case msg != "":
		return appendScriptError(out, msg, sha), true
	case found && isSemaphoreRecord(v):
		return appendErrorReply(out, notALock(keys[0])), true
	case found:
		pttl := s.scriptPttlLocked(db, keys[0], now)
		if mark {
			s.markListenLocked(db, keys[0], max(pttl, 0), argv, now)
		}
		return appendHolder(out, holderID([]byte(v)), pttl), true
	}
	return out, false
}

// rwLockLocked runs scripts.RWLock.
func (s *Server) rwLockLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	wait, _ := luaArg(argv, 2)
	out, done := s.rwWriterLocked(out, db, sha, keys, argv, string(wait) == "1", now)
	if done {
		return out
	}
	ms := float64(now)
	readers, msg := s.scriptZremrangebyscoreLocked(db, keys, 1, ms, now)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	intent, ok := luaArg(keys, 2)
	if readers != nil {
		_, last, _ := readers.last() // ZRANGE KEYS[2] -1 -1 WITHSCORES
		// ARGV[3]=="1" and ...: for a writer that does not wait, neither
		// the intent's key nor the TTL is looked at.
		if string(wait) == "1" {
			if !ok {
				return appendScriptError(out, errScriptArgs, sha)
			}
			less, msg := luaLess(luaNumber{float64(s.scriptPttlLocked(db, intent, now)), true}, luaArgNumber(argv, 1))
			if msg != "" {
				return appendScriptError(out, msg, sha)
			}
			if less { // ARGV[3] is there, so ARGV[2] is
				if msg := s.scriptSetValuePXLocked(db, intent, "1", argv[1], now); msg != "" {
					return appendScriptError(out, msg, sha)
				}
			}
		}
		return appendHolder(out, waitHolder, luaInteger(last-ms))
	}
	if msg := s.scriptSetPXLocked(db, keys[0], argv, 0, now); msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if !ok { // DEL of nil, after the SET
		return appendScriptError(out, errScriptArgs, sha)
	}
	delete(s.dbs[db], string(intent))
	if len(keys) == 4 { // a fenced writer: the counter is KEYS[4]
		return s.fenceTailLocked(out, db, sha, keys, argv, 3, 3, nil, now)
	}
	return append(out, replyOne...)
}

// rwRLockLocked runs scripts.RWRLock.
func (s *Server) rwRLockLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	wait, _ := luaArg(argv, 2)
	out, done := s.rwWriterLocked(out, db, sha, keys, argv, string(wait) == "1", now)
	if done {
		return out
	}
	intent, ok := luaArg(keys, 2)
	if !ok {
		return appendScriptError(out, errScriptArgs, sha)
	}
	if w := s.scriptPttlLocked(db, intent, now); w > 0 {
		if string(wait) == "1" {
			s.markListenLocked(db, keys[0], w, argv, now)
		}
		return appendHolder(out, waitHolder, w)
	}
	ms := float64(now)
	if _, msg := s.scriptZremrangebyscoreLocked(db, keys, 1, ms, now); msg != "" {
		return appendScriptError(out, msg, sha)
	}
	ttl := luaArgNumber(argv, 1)
	if !ttl.ok { // now+nil
		return appendScriptError(out, errLuaArith, sha)
	}
	// ARGV[2] is there, so ARGV[1] is; KEYS[3] is, so KEYS[2] is.
	if msg := s.scriptZaddLocked(db, keys[1], ms+ttl.f, argv[0], now); msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if msg := s.rwRaiseReadersLocked(db, keys[1], ttl.f, argv[1], now); msg != "" {
		return appendScriptError(out, msg, sha)
	}
	return append(out, replyOne...)
}

// rwRExtendLocked runs scripts.RWRExtend.
func (s *Server) rwRExtendLocked(out []byte, db int, sha string, keys, argv [][]byte) []byte {
	now := s.nowMs()
	ms := float64(now)
	score, found, msg := s.scriptZscoreLocked(db, keys, argv, 1, 0, now)
	if msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if !found || score <= ms {
		return append(out, replyZero...)
	}
	ttl := luaArgNumber(argv, 1)
	if !ttl.ok { // now+nil
		return appendScriptError(out, errLuaArith, sha)
	}
	if msg := s.scriptZaddLocked(db, keys[1], ms+ttl.f, argv[0], now); msg != "" {
		return appendScriptError(out, msg, sha)
	}
	if msg := s.rwRaiseReadersLocked(db, keys[1], ttl.f, argv[1], now); msg != "" {
		return appendScriptError(out, msg, sha)
	}
	return append(out, replyOne...)
}

// rwRaiseReadersLocked is how scripts.RWRLock and scripts.RWRExtend end:
// if redis.call("pttl",KEYS[2])<tonumber(ARGV[2]) then
// redis.call("pexpire",KEYS[2],ARGV[2]) end, where ttl is tonumber(ttlArg),
// a number. PEXPIRE's errors apply; a TTL of 0 or less deletes the
// readers.
func (s *Server) rwRaiseReadersLocked(db int, key []byte, ttl float64, ttlArg []byte, now int64) (msg string) {
	if float64(s.scriptPttlLocked(db, key, now)) < ttl {
		return s.scriptPexpireLocked(db, key, ttlArg, now)
	}
	return ""
}

// rwRUnlockLocked runs scripts.RWRUnlock, appending to c.out; it publishes
// as scripts.Release does, on the writer's key's channel.
func (c *client) rwRUnlockLocked(sha string, keys, argv [][]byte) {
	s, db := c.s, c.db
	now := s.nowMs()
	score, found, msg := s.scriptZscoreLocked(db, keys, argv, 1, 0, now)
	if msg != "" {
		c.out = appendScriptError(c.out, msg, sha)
		return
	}
	if !found {
		c.out = append(c.out, replyZero...)
		return
	}
	if msg := s.scriptZremLocked(db, keys[1], argv[0], now); msg != "" {
		c.out = appendScriptError(c.out, msg, sha)
		return
	}
	if score <= float64(now) {
		c.out = append(c.out, replyZero...)
		return
	}
	// KEYS[2] is there, so KEYS[1] is: the channel's name is never
	// "volley:released:"..nil.
	c.publishReleaseLocked(keys[0], argv[0], "")
	c.out = append(c.out, replyOne...)
}
