package fakeredis

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// What the native scripts copy of Lua 5.1 and of redis.call as Redis 7.0
// runs them. Each helper that can raise returns the error's message, ""
// if none; the script then stops and replies with it (appendScriptError),
// keeping whatever it changed before, as Redis does.

// luaArg returns list[i], Lua's KEYS[i+1] or ARGV[i+1]; ok is false where
// Lua has nil.
func luaArg(list [][]byte, i int) (b []byte, ok bool) {
	if i < 0 || i >= len(list) {
		return nil, false
	}
	return list[i], true
}

// scriptGetLocked is redis.call("get", KEYS[i+1]): the value, or found
// false where Lua gets false. It raises on a missing key argument and on
// a key of another type (a hash, a sorted set).
func (s *Server) scriptGetLocked(db int, keys [][]byte, i int, now int64) (val string, found bool, msg string) {
	key, ok := luaArg(keys, i)
	if !ok {
		return "", false, errScriptArgs
	}
	e, found := s.lookupLocked(db, key, now)
	if found && !e.isString() {
		return "", false, errWrongType
	}
	return e.val, found, ""
}

// scriptHgetLocked is redis.call("hget", KEYS[i+1], field). It raises on a
// missing key argument and on a key of another type.
func (s *Server) scriptHgetLocked(db int, keys [][]byte, i int, field string, now int64) (val string, found bool, msg string) {
	key, ok := luaArg(keys, i)
	if !ok {
		return "", false, errScriptArgs
	}
	h, wrongType := s.lookupHashLocked(db, key, now)
	if wrongType {
		return "", false, errWrongType
	}
	if h == nil {
		return "", false, ""
	}
	val, found = h.get([]byte(field))
	return val, found, ""
}

// scriptHsetLocked is redis.call("hset", key, field, val), its reply
// dropped. It raises on a key of another type.
func (s *Server) scriptHsetLocked(db int, key []byte, field string, val []byte, now int64) (msg string) {
	if _, wrongType := s.hsetLocked(db, key, [][]byte{[]byte(field), val}, now); wrongType {
		return errWrongType
	}
	return ""
}

// errNotFloat is what ZADD answers for a score it cannot read, NaN
// included.
const errNotFloat = "ERR value is not a valid float"

// scriptZscoreLocked is redis.call("zscore", KEYS[i+1], ARGV[j+1]): the
// score, or found false where Lua gets false. Lua gets the score as C's
// "%.17g" text, which tonumber reads back exactly, so score is what
// tonumber gives. It raises on a missing argument and on a key of another
// type.
func (s *Server) scriptZscoreLocked(db int, keys, argv [][]byte, i, j int, now int64) (score float64, found bool, msg string) {
	key, ok := luaArg(keys, i)
	member, ok2 := luaArg(argv, j)
	if !ok || !ok2 {
		return 0, false, errScriptArgs
	}
	z, wrongType := s.lookupZsetLocked(db, key, now)
	if wrongType {
		return 0, false, errWrongType
	}
	if z == nil {
		return 0, false, ""
	}
	score, found = z.scores[string(member)]
	return score, found, ""
}

// scriptZremrangebyscoreLocked is redis.call("zremrangebyscore",
// KEYS[i+1], "-inf", max), its reply dropped: it returns the sorted set
// left, nil if there is none (a set it empties is deleted). It raises on
// a missing key argument and on a key of another type.
func (s *Server) scriptZremrangebyscoreLocked(db int, keys [][]byte, i int, max float64, now int64) (z *zsetValue, msg string) {
	key, ok := luaArg(keys, i)
	if !ok {
		return nil, errScriptArgs
	}
	z, wrongType := s.lookupZsetLocked(db, key, now)
	if wrongType {
		return nil, errWrongType
	}
	if z == nil {
		return nil, ""
	}
	z.removeUpTo(max)
	if len(z.scores) == 0 {
		delete(s.dbs[db], string(key))
		return nil, ""
	}
	return z, ""
}

// scriptZaddLocked is redis.call("zadd", key, score, member), neither key
// nor member nil, its reply dropped. Lua passes the number score as C's
// "%.17g" text, which ZADD reads back exactly, "inf" and "-inf" included;
// it raises on NaN, which ZADD refuses, and then on a key of another
// type. A new set has no expiry; an existing one keeps its own. (With XX,
// as scripts.RWRExtend calls it, the member exists already: the same.)
func (s *Server) scriptZaddLocked(db int, key []byte, score float64, member []byte, now int64) (msg string) {
	if math.IsNaN(score) {
		return errNotFloat
	}
	z, wrongType := s.lookupZsetLocked(db, key, now)
	if wrongType {
		return errWrongType
	}
	if z == nil {
		z = &zsetValue{scores: make(map[string]float64)}
		s.dbs[db][string(key)] = entry{zset: z}
	}
	z.scores[string(member)] = score
	return ""
}

// scriptZremLocked is redis.call("zrem", key, member), neither nil, its
// reply dropped: a set it empties is deleted. It raises on a key of
// another type.
func (s *Server) scriptZremLocked(db int, key, member []byte, now int64) (msg string) {
	z, wrongType := s.lookupZsetLocked(db, key, now)
	if wrongType {
		return errWrongType
	}
	if z == nil {
		return ""
	}
	delete(z.scores, string(member))
	if len(z.scores) == 0 {
		delete(s.dbs[db], string(key))
	}
	return ""
}

// scriptSetLocked is redis.call("set", key, ARGV[i+1]), without options:
// the key becomes that string, with no expiry, whatever it held. It raises
// on a missing argument.
func (s *Server) scriptSetLocked(db int, key []byte, argv [][]byte, i int) (msg string) {
	val, ok := luaArg(argv, i)
	if !ok {
		return errScriptArgs
	}
	s.dbs[db][string(key)] = entry{val: string(val)}
	return ""
}

// scriptSetPXLocked is redis.call("set", key, ARGV[i+1], "px", ARGV[i+2]):
// the key becomes that string, expiring ARGV[i+2] milliseconds after now,
// whatever it held. It raises on a missing argument, and with SET's errors
// on a TTL that is not an integer or not positive, or whose expiry time
// overflows; then nothing changes.
func (s *Server) scriptSetPXLocked(db int, key []byte, argv [][]byte, i int, now int64) (msg string) {
	val, ok := luaArg(argv, i)
	ttl, ok2 := luaArg(argv, i+1)
	if !ok || !ok2 {
		return errScriptArgs
	}
	return s.scriptSetValuePXLocked(db, key, string(val), ttl, now)
}

// scriptSetValuePXLocked is redis.call("set", key, val, "px", ttl) where
// neither can be nil: scriptSetPXLocked for a value the script makes.
func (s *Server) scriptSetValuePXLocked(db int, key []byte, val string, ttl []byte, now int64) (msg string) {
	exp, msg := setPXExpiry(ttl, now)
	if msg != "" {
		return msg
	}
	s.dbs[db][string(key)] = entry{val: val, exp: exp}
	return ""
}

// setPXExpiry is SET's reading of PX ttl at now: the expiry time, or SET's
// error on a TTL that is not an integer or not positive, or whose expiry
// time overflows. SET checks it before it looks at the key, also with NX.
func setPXExpiry(ttl []byte, now int64) (exp int64, msg string) {
	ms, ok := parseInt64(ttl)
	switch {
	case !ok:
		return 0, errNotInteger
	case ms <= 0 || ms > math.MaxInt64-now:
		return 0, "ERR invalid expire time in 'set' command"
	}
	return now + ms, ""
}

// scriptPexpireLocked is redis.call("pexpire", key, ttl) at now, its reply
// dropped: PEXPIRE's error, if any, on a TTL that is not an integer or
// whose expiry time overflows; a TTL of 0 or less deletes the key.
func (s *Server) scriptPexpireLocked(db int, key, ttl []byte, now int64) (msg string) {
	var scratch [64]byte
	r := s.pexpireLocked(scratch[:0], db, key, ttl, nil, now)
	if r[0] == '-' {
		return string(r[1 : len(r)-2])
	}
	return ""
}

// scriptPttlLocked is redis.call("pttl", key), whatever the key holds: -2
// for a missing key, -1 for one without expiry.
func (s *Server) scriptPttlLocked(db int, key []byte, now int64) int64 {
	e, found := s.lookupLocked(db, key, now)
	if !found {
		return -2
	}
	return e.pttl(now)
}

// The errors Lua itself raises in the scripts, worded as Redis relays
// them (appendScriptError adds the script's name), and redis.call's when
// a command gets the wrong number of arguments.
const (
	errLuaArith       = "ERR user_script:1: attempt to perform arithmetic on a nil value"
	errLuaArithString = "ERR user_script:1: attempt to perform arithmetic on a string value"
	errLuaCompareNil  = "ERR user_script:1: attempt to compare number with nil"
	errLuaConcatField = "ERR user_script:1: attempt to concatenate field '?' (a nil value)"
	errScriptArity    = "ERR Wrong number of args calling Redis command from script"
)

// luaKeyIndex is KEYS[tonumber(ARGV[i+1])+2], the key of the permit whose
// index ARGV[i+1] is, as an index of keys for luaArg: -1 where Lua has
// nil, for a number that is not whole or is out of KEYS' range (a permit's
// index of -1 is KEYS[1], the record). An argument that is not a number
// raises Lua's error, as tonumber gives nil and nil+2 fails.
func luaKeyIndex(keys, argv [][]byte, i int) (k int, msg string) {
	n := luaArgNumber(argv, i)
	if !n.ok {
		return -1, errLuaArith
	}
	d := n.f + 2 // NaN and ±Inf fail every test below
	if d != math.Trunc(d) || d < 1 || d > float64(len(keys)) {
		return -1, ""
	}
	return int(d) - 1, ""
}

// appendErrorReply appends what a script's return of
// redis.error_reply(text) becomes on the wire in Redis 7.0: of text up to
// its first NUL byte (and past a leading "-"), the code up to the first
// space ("ERR" if there is none, then the whole text) and the rest with
// CR and LF trimmed at both ends; CR and LF left inside become spaces, as
// in every error reply. Unlike a failed redis.call's, the error does not
// name the script.
func appendErrorReply(out []byte, text string) []byte {
	text = cString([]byte(text), len(text))
	text, _ = strings.CutPrefix(text, "-")
	code, msg, ok := strings.Cut(text, " ")
	if !ok {
		code, msg = "ERR", text
	}
	return appendError(out, code+" "+strings.Trim(msg, "\r\n"))
}

// appendLuaTime appends what the fencing scripts make of TIME:
// t[1]..string.format("%06d",tonumber(t[2])), the seconds and then the
// microseconds on six digits, as TIME reads the clock.
func appendLuaTime(dst []byte, now time.Time) []byte {
	dst = strconv.AppendInt(dst, now.Unix(), 10)
	us := now.Nanosecond() / 1000
	for p := 100000; p > 1 && us < p; p /= 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(us), 10)
}

// luaNumber is what Lua's tonumber returns: a number (a double), or nil
// (ok false).
type luaNumber struct {
	f  float64
	ok bool
}

// luaArgNumber is tonumber(ARGV[i+1]): nil for a missing argument, as
// tonumber(nil) is.
func luaArgNumber(argv [][]byte, i int) luaNumber {
	if b, ok := luaArg(argv, i); ok {
		return luaToNumber(b)
	}
	return luaNumber{}
}

// luaToNumber is Lua's tonumber(s) in Redis, whose Lua 5.1 reads numbers
// with C's strtod (glibc's, on Linux): the string up to its first NUL
// byte, with blanks around it, must be a decimal or hexadecimal number
// (0x, with an optional binary exponent p), inf, infinity, nan or
// nan(chars), in any case, signed or not. Anything else is nil. Every
// decimal integer of up to 2^53 is read exactly; beyond, it is rounded to
// the nearest double, as Lua does, so that 2^53+1 reads as 2^53.
func luaToNumber(b []byte) luaNumber {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	for len(b) > 0 && isCSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isCSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	num, neg := b, false
	if len(num) > 0 && (num[0] == '+' || num[0] == '-') {
		num, neg = num[1:], num[0] == '-'
	}
	var f float64
	switch {
	case equalFold(num, "inf"), equalFold(num, "infinity"):
		f = math.Inf(1)
	case len(num) >= 3 && equalFold(num[:3], "nan") && nanChars(num[3:]):
		f = math.NaN()
	case len(num) >= 2 && num[0] == '0' && (num[1] == 'x' || num[1] == 'X'):
		digits, exp := scanDigits(num[2:], true)
		if digits == 0 || !validExponent(num[2+exp:], 'p') {
			return luaNumber{}
		}
		text := string(num)
		if exp == len(num)-2 {
			text += "p0" // strconv insists on the exponent strtod allows to omit
		}
		f = parseFloat(text)
	default:
		digits, exp := scanDigits(num, false)
		if digits == 0 || !validExponent(num[exp:], 'e') {
			return luaNumber{}
		}
		f = parseFloat(string(num))
	}
	if neg {
		f = -f
	}
	return luaNumber{f, true}
}

// isCSpace reports whether b is a blank to C's isspace.
func isCSpace(b byte) bool { return b == ' ' || ('\t' <= b && b <= '\r') }

// nanChars reports whether b may follow "nan" in a number strtod reads:
// nothing, or "(" letters, digits and underscores ")".
func nanChars(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if len(b) < 2 || b[0] != '(' || b[len(b)-1] != ')' {
		return false
	}
	for _, c := range b[1 : len(b)-1] {
		if !(c == '_' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z') {
			return false
		}
	}
	return true
}

// scanDigits scans a mantissa, digits with at most one '.', hexadecimal if
// hex, and returns how many digits it has and where it ends.
func scanDigits(b []byte, hex bool) (digits, end int) {
	dot := false
	for end < len(b) {
		c := b[end]
		switch {
		case '0' <= c && c <= '9', hex && 'a' <= c|0x20 && c|0x20 <= 'f':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return digits, end
		}
		end++
	}
	return digits, end
}

// validExponent reports whether b is empty or an exponent: the letter
// mark, in any case, an optional sign and decimal digits.
func validExponent(b []byte, mark byte) bool {
	if len(b) == 0 {
		return true
	}
	if b[0]|0x20 != mark {
		return false
	}
	b = b[1:]
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseFloat parses a number luaToNumber has checked, rounding to nearest
// as strtod does; out of range it is ±Inf, or 0 for a tiny one.
func parseFloat(text string) float64 {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		panic("fakeredis: luaToNumber let through " + strconv.Quote(text))
	}
	return f
}

// luaInteger is what Redis 7.0 makes of a Lua number a script returns, an
// integer reply: C's cast to long long, which drops the fraction. For NaN
// and numbers out of its range (±Inf included) C leaves the result
// undefined, and Redis answers what the CPU's conversion gives: the
// minimum on x86 (cvttsd2si), a saturated value on arm64 and others (0
// for NaN). The fake answers as a redis-server built for its own
// GOARCH would, the one a differential test runs beside it.
func luaInteger(f float64) int64 {
	switch {
	case f >= -0x1p63 && f < 0x1p63:
		return int64(f)
	case runtime.GOARCH == "amd64" || runtime.GOARCH == "386":
		return math.MinInt64
	case f > 0:
		return math.MaxInt64
	case f < 0:
		return math.MinInt64
	}
	return 0 // NaN
}

// luaLess is Lua's a < b for two results of tonumber: a nil among them
// raises Lua's error, worded as Redis relays it.
func luaLess(a, b luaNumber) (less bool, msg string) {
	if a.ok && b.ok {
		return a.f < b.f, ""
	}
	ta, tb := a.typeName(), b.typeName()
	if ta == tb {
		return false, "ERR user_script:1: attempt to compare two " + ta + " values"
	}
	return false, "ERR user_script:1: attempt to compare " + ta + " with " + tb
}

func (n luaNumber) typeName() string {
	if n.ok {
		return "number"
	}
	return "nil"
}
