package fakeredis

import (
	"math"

	"github.com/volleylock/volley/resp"
)

// entry is one key's value and expiry time in Unix milliseconds (0: none).
// The value is the string val, or, when hash or zset is not nil, that hash
// or sorted set.
type entry struct {
	val  string
	hash *hashValue
	zset *zsetValue
	exp  int64
}

// isString reports whether the entry holds a string, the only type the
// string commands (GET, SET's GET) accept: on others they fail with
// WRONGTYPE.
func (e entry) isString() bool { return e.hash == nil && e.zset == nil }

// live reports whether the entry has not expired at now. As in Redis, a key
// expires once now is past its expiry time: at exactly exp it still lives.
func (e entry) live(now int64) bool { return e.exp == 0 || now <= e.exp }

// pttl returns PTTL's reply for a live entry at now: -1 if it has no
// expiry, else the milliseconds left.
func (e entry) pttl(now int64) int64 {
	if e.exp == 0 {
		return -1
	}
	return max(e.exp-now, 0)
}

// sweepEvery is how many commands run between two passes of sweepLocked.
const sweepEvery = 128

// sweepSample is how many keys per database one sweep looks at.
const sweepSample = 20

// sweepLocked deletes expired keys among a few of each database, so that
// keys nobody reads again do not accumulate (Redis' active expiry, in
// miniature). Map iteration starts at a random key, so the sample moves.
func (s *Server) sweepLocked() {
	now := s.nowMs()
	for _, db := range s.dbs {
		n := 0
		for k, e := range db {
			if !e.live(now) {
				delete(db, k)
			}
			if n++; n == sweepSample {
				break
			}
		}
	}
}

// lookupLocked returns the key's entry, deleting it if it has expired.
func (s *Server) lookupLocked(db int, key []byte, now int64) (entry, bool) {
	m := s.dbs[db]
	e, ok := m[string(key)]
	if !ok {
		return entry{}, false
	}
	if !e.live(now) {
		delete(m, string(key))
		return entry{}, false
	}
	return e, true
}

const (
	errSyntax     = "ERR syntax error"
	errNotInteger = "ERR value is not an integer or out of range"
	errWrongType  = "WRONGTYPE Operation against a key holding the wrong kind of value"
)

func cmdGet(c *client, args [][]byte) {
	e, ok := c.s.lookupLocked(c.db, args[1], c.s.nowMs())
	switch {
	case !ok:
		c.out = appendNull(c.out, c.proto)
	case !e.isString():
		c.out = appendError(c.out, errWrongType)
	default:
		c.out = resp.AppendBulkString(c.out, e.val)
	}
}

// cmdMget is MGET key [key ...]: each key's value, nil for a key that
// does not exist or holds no string (as Redis does, without WRONGTYPE).
func cmdMget(c *client, args [][]byte) {
	now := c.s.nowMs()
	c.out = resp.AppendArrayHeader(c.out, len(args)-1)
	for _, k := range args[1:] {
		if e, ok := c.s.lookupLocked(c.db, k, now); ok && e.isString() {
			c.out = resp.AppendBulkString(c.out, e.val)
		} else {
			c.out = appendNull(c.out, c.proto)
		}
	}
}

// SET option flags, as in Redis' t_string.c.
const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
	setEX
	setPX
	setEXAT
	setPXAT
	setIfEq
)

// cmdSet is SET key value [NX|XX] [IFEQ value] [GET] [EX s|PX ms|EXAT
// s|PXAT ms|KEEPTTL], IFEQ where the identity has it (a missing key is then
// never created), with Redis 7.0's option parsing: a repeated option is allowed (the last
// expiry wins), conflicting ones are a syntax error.
func cmdSet(c *client, args [][]byte) {
	flags := 0
	var expire, ifeq []byte
	// IFEQ after NX or XX is a syntax error; so is NX or XX after IFEQ on
	// Valkey, while Redis takes it, all conditions then having to hold.
	exclusive := 0
	if c.s.id.valkey() {
		exclusive = setIfEq
	}
	for j := 3; j < len(args); j++ {
		opt := args[j]
		hasNext := j+1 < len(args)
		switch {
		case equalFold(opt, "nx") && flags&(setXX|exclusive) == 0:
			flags |= setNX
		case equalFold(opt, "xx") && flags&(setNX|exclusive) == 0:
			flags |= setXX
		case equalFold(opt, "ifeq") && hasSetIfEq(c.s.id) && hasNext && flags&(setIfEq|setNX|setXX) == 0:
			flags |= setIfEq
			j++
			ifeq = args[j]
		case equalFold(opt, "get"):
			flags |= setGet
		case equalFold(opt, "keepttl") && flags&(setEX|setPX|setEXAT|setPXAT) == 0:
			flags |= setKeepTTL
		case equalFold(opt, "ex") && flags&(setKeepTTL|setPX|setEXAT|setPXAT) == 0 && hasNext:
			flags |= setEX
			j++
			expire = args[j]
		case equalFold(opt, "px") && flags&(setKeepTTL|setEX|setEXAT|setPXAT) == 0 && hasNext:
			flags |= setPX
			j++
			expire = args[j]
		case equalFold(opt, "exat") && flags&(setKeepTTL|setEX|setPX|setPXAT) == 0 && hasNext:
			flags |= setEXAT
			j++
			expire = args[j]
		case equalFold(opt, "pxat") && flags&(setKeepTTL|setEX|setPX|setEXAT) == 0 && hasNext:
			flags |= setPXAT
			j++
			expire = args[j]
		default:
			c.out = appendError(c.out, errSyntax)
			return
		}
	}

	s := c.s
	now := s.nowMs()
	var when int64
	if expire != nil {
		ms, ok := parseInt64(expire)
		if !ok {
			c.out = appendError(c.out, errNotInteger)
			return
		}
		seconds := flags&(setEX|setEXAT) != 0
		if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
			c.out = appendError(c.out, "ERR invalid expire time in 'set' command")
			return
		}
		if seconds {
			ms *= 1000
		}
		when = ms
		if flags&(setEX|setPX) != 0 {
			if when > math.MaxInt64-now {
				c.out = appendError(c.out, "ERR invalid expire time in 'set' command")
				return
			}
			when += now
		}
	}

	old, found := s.lookupLocked(c.db, args[1], now)
	if flags&(setGet|setIfEq) != 0 {
		if found && !old.isString() {
			c.out = appendError(c.out, errWrongType)
			return
		}
	}
	if flags&setGet != 0 {
		if found {
			c.out = resp.AppendBulkString(c.out, old.val)
		} else {
			c.out = appendNull(c.out, c.proto)
		}
	}
	if (flags&setNX != 0 && found) || (flags&setXX != 0 && !found) ||
		(flags&setIfEq != 0 && (!found || old.val != string(ifeq))) {
		if flags&setGet == 0 {
			c.out = appendNull(c.out, c.proto)
		}
		return
	}
	e := entry{val: string(args[2]), exp: when}
	if flags&setKeepTTL != 0 && found {
		e.exp = old.exp
	}
	s.dbs[c.db][string(args[1])] = e
	if flags&setGet == 0 {
		c.out = append(c.out, replyOK...)
	}
}

func cmdDel(c *client, args [][]byte) {
	s := c.s
	now := s.nowMs()
	var n int64
	for _, k := range args[1:] {
		if _, ok := s.lookupLocked(c.db, k, now); ok {
			delete(s.dbs[c.db], string(k))
			n++
		}
	}
	c.out = resp.AppendInteger(c.out, n)
}

func cmdExists(c *client, args [][]byte) {
	s := c.s
	now := s.nowMs()
	var n int64
	for _, k := range args[1:] {
		if _, ok := s.lookupLocked(c.db, k, now); ok {
			n++
		}
	}
	c.out = resp.AppendInteger(c.out, n)
}

// PEXPIRE condition flags.
const (
	expireNX = 1 << iota
	expireXX
	expireGT
	expireLT
)

func cmdPexpire(c *client, args [][]byte) {
	c.out = c.s.pexpireLocked(c.out, c.db, args[1], args[2], args[3:], c.s.nowMs())
}

// pexpireLocked runs PEXPIRE key ms [NX|XX|GT|LT ...] at now and appends
// its reply, as Redis 7.0's expireGenericCommand: options first, then the
// integer.
func (s *Server) pexpireLocked(out []byte, db int, key, msArg []byte, opts [][]byte, now int64) []byte {
	flags := 0
	for _, opt := range opts {
		switch {
		case equalFold(opt, "nx"):
			flags |= expireNX
		case equalFold(opt, "xx"):
			flags |= expireXX
		case equalFold(opt, "gt"):
			flags |= expireGT
		case equalFold(opt, "lt"):
			flags |= expireLT
		default:
			return appendError(out, "ERR Unsupported option "+cString(opt, len(opt)))
		}
	}
	if flags&expireNX != 0 && flags&(expireXX|expireGT|expireLT) != 0 {
		return appendError(out, "ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if flags&expireGT != 0 && flags&expireLT != 0 {
		return appendError(out, "ERR GT and LT options at the same time are not compatible")
	}
	when, ok := parseInt64(msArg)
	if !ok {
		return appendError(out, errNotInteger)
	}
	if when > math.MaxInt64-now {
		return appendError(out, "ERR invalid expire time in 'pexpire' command")
	}
	when += now
	e, found := s.lookupLocked(db, key, now)
	if !found {
		return append(out, replyZero...)
	}
	switch {
	case flags&expireNX != 0 && e.exp != 0,
		flags&expireXX != 0 && e.exp == 0,
		flags&expireGT != 0 && (e.exp == 0 || when <= e.exp),
		flags&expireLT != 0 && e.exp != 0 && when >= e.exp:
		return append(out, replyZero...)
	}
	if when <= now {
		delete(s.dbs[db], string(key))
	} else {
		e.exp = when
		s.dbs[db][string(key)] = e
	}
	return append(out, replyOne...)
}

func cmdPttl(c *client, args [][]byte) { c.ttl(args[1], true) }

func cmdTTL(c *client, args [][]byte) { c.ttl(args[1], false) }

// ttl appends the key's remaining time to live: -2 if it does not exist,
// -1 if it has no expiry, else milliseconds, or seconds rounded to nearest.
func (c *client) ttl(key []byte, ms bool) {
	now := c.s.nowMs()
	e, ok := c.s.lookupLocked(c.db, key, now)
	switch {
	case !ok:
		c.out = resp.AppendInteger(c.out, -2)
	case e.exp == 0 || ms:
		c.out = resp.AppendInteger(c.out, e.pttl(now))
	default:
		c.out = resp.AppendInteger(c.out, (e.pttl(now)+500)/1000)
	}
}
