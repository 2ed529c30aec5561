package fakeredis

import (
	"math"
	"strconv"

	"github.com/volleylock/volley/resp"
)

// Replies are encoded with resp's encoders; this file holds only what the
// fake decides on top of them: its static replies, the sanitising of
// error texts, and the choices between RESP2 and RESP3 forms that Redis
// makes by the connection's protocol.

// Static replies.
const (
	replyOK       = "+OK\r\n"
	replyPong     = "+PONG\r\n"
	replyZero     = ":0\r\n"
	replyOne      = ":1\r\n"
	replyNoScript = "-NOSCRIPT No matching script. Please use EVAL.\r\n"
	replyNoAuth   = "-NOAUTH Authentication required.\r\n"
)

// appendError appends the error reply -msg\r\n. msg carries its own prefix
// ("ERR ...", "WRONGPASS ..."); CR and LF in it become spaces, as Redis'
// addReplyErrorFormat does, so the frame stays valid.
func appendError(dst []byte, msg string) []byte {
	start := len(dst) + 1
	dst = resp.AppendError(dst, msg)
	for i := start; i < len(dst)-2; i++ {
		if dst[i] == '\r' || dst[i] == '\n' {
			dst[i] = ' '
		}
	}
	return dst
}

// appendMapLen appends a map header of n pairs: %n\r\n in RESP3, a flat
// array of 2n elements in RESP2.
func appendMapLen(dst []byte, proto, n int) []byte {
	if proto < 3 {
		return resp.AppendArrayHeader(dst, 2*n)
	}
	return resp.AppendMapHeader(dst, n)
}

// appendPushLen appends the header of an out-of-band frame of n elements:
// a RESP3 push (>n), or an array in RESP2.
func appendPushLen(dst []byte, proto, n int) []byte {
	if proto < 3 {
		return resp.AppendArrayHeader(dst, n)
	}
	return resp.AppendPushHeader(dst, n)
}

// appendNull appends the null reply of the protocol: $-1 in RESP2 (Redis'
// null bulk string), _ in RESP3.
func appendNull(dst []byte, proto int) []byte {
	if proto < 3 {
		return resp.AppendNullBulk(dst)
	}
	return resp.AppendNull(dst)
}

// appendVerbatim appends text as a RESP3 verbatim string of format "txt",
// or as a bulk string in RESP2, as Redis' addReplyVerbatim does.
func appendVerbatim(dst []byte, proto int, text []byte) []byte {
	if proto < 3 {
		return resp.AppendBulk(dst, text)
	}
	return resp.AppendVerbatim(dst, "txt", string(text))
}

// appendDouble appends a double as Redis 7.0's addReplyDouble does (a
// sorted set's score): formatted by C's "%.17g", which strconv's 'g' with a
// precision of 17 matches, or as "inf" or "-inf"; a bulk string in RESP2,
// a RESP3 double (",...") in RESP3. The form is not the shortest one
// resp.AppendDouble writes: 0.1 is "0.10000000000000001".
func appendDouble(dst []byte, proto int, f float64) []byte {
	var scratch [32]byte
	text := scratch[:0]
	switch {
	case math.IsInf(f, 1):
		text = append(text, "inf"...)
	case math.IsInf(f, -1):
		text = append(text, "-inf"...)
	default:
		text = strconv.AppendFloat(text, f, 'g', 17, 64)
	}
	if proto < 3 {
		return resp.AppendBulk(dst, text)
	}
	dst = append(dst, ',')
	dst = append(dst, text...)
	return append(dst, '\r', '\n')
}
