package fakeredis

import "strconv"

// Reply encoders. Each appends one RESP frame to dst and returns the
// extended slice, formatting numbers straight into dst.

// Static replies.
const (
	replyOK       = "+OK\r\n"
	replyPong     = "+PONG\r\n"
	replyZero     = ":0\r\n"
	replyOne      = ":1\r\n"
	replyNull2    = "$-1\r\n" // RESP2 null bulk string
	replyNull3    = "_\r\n"   // RESP3 null
	replyNoScript = "-NOSCRIPT No matching script. Please use EVAL.\r\n"
	replyNoAuth   = "-NOAUTH Authentication required.\r\n"
)

// appendError appends an error reply: -msg\r\n. msg carries its own prefix
// ("ERR ...", "WRONGPASS ..."); CR and LF in it become spaces, as Redis'
// addReplyErrorFormat does, so the frame stays valid.
func appendError(dst []byte, msg string) []byte {
	dst = append(dst, '-')
	for i := 0; i < len(msg); i++ {
		b := msg[i]
		if b == '\r' || b == '\n' {
			b = ' '
		}
		dst = append(dst, b)
	}
	return append(dst, '\r', '\n')
}

// appendInt appends an integer reply: :n\r\n.
func appendInt(dst []byte, n int64) []byte {
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// appendBulk appends a bulk string: $len\r\nb\r\n.
func appendBulk(dst []byte, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// appendBulkString is appendBulk for a string.
func appendBulkString(dst []byte, s string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// appendBulkInt appends n as a bulk string, without a temporary string.
func appendBulkInt(dst []byte, n int64) []byte {
	var scratch [20]byte
	digits := strconv.AppendInt(scratch[:0], n, 10)
	return appendBulk(dst, digits)
}

// appendArrayLen appends an array header: *n\r\n.
func appendArrayLen(dst []byte, n int) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// appendMapLen appends a map header of n pairs: %n\r\n in RESP3, a flat
// array of 2n elements in RESP2.
func appendMapLen(dst []byte, proto, n int) []byte {
	if proto < 3 {
		return appendArrayLen(dst, 2*n)
	}
	dst = append(dst, '%')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// appendPushLen appends the header of an out-of-band frame of n elements:
// a RESP3 push (>n), or an array in RESP2.
func appendPushLen(dst []byte, proto, n int) []byte {
	if proto < 3 {
		return appendArrayLen(dst, n)
	}
	dst = append(dst, '>')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// appendNull appends the null reply of the protocol: $-1 in RESP2 (Redis'
// null bulk string), _ in RESP3.
func appendNull(dst []byte, proto int) []byte {
	if proto < 3 {
		return append(dst, replyNull2...)
	}
	return append(dst, replyNull3...)
}

// appendVerbatim appends text as a RESP3 verbatim string of format "txt"
// (=len\r\ntxt:text\r\n), or as a bulk string in RESP2, as Redis'
// addReplyVerbatim does.
func appendVerbatim(dst []byte, proto int, text []byte) []byte {
	if proto < 3 {
		return appendBulk(dst, text)
	}
	dst = append(dst, '=')
	dst = strconv.AppendInt(dst, int64(len(text)+4), 10)
	dst = append(dst, "\r\ntxt:"...)
	dst = append(dst, text...)
	return append(dst, '\r', '\n')
}
