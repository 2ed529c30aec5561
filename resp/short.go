package resp

import "bytes"

// This file is the fast path for the replies a lock reads: +OK and the null
// bulk string for SET NX, :1 and :0 for the scripts, and a short error such
// as -NOSCRIPT. They are most of what a Redlock client decodes, and each one
// would otherwise pay for the general decoder's set-up (limits defaults, a
// stack, a resumable line scan), which costs more than its bytes do.
//
// Every function here returns 0 rather than an error when it cannot decode
// its input whole: the caller then runs the general decoder, which decodes
// the reply or says what is wrong with it. So the fast path needs no error
// paths, and TestShortAgrees checks that whenever it returns n > 0 it
// returns exactly what the general decoder would.

// decodeOK decodes into *v the commonest reply of all, +OK, and returns the
// bytes consumed, 5, or 0 for anything else. decodeOK, decodeDigit and
// decodeNullBulk are small enough to be inlined into their callers, so these
// replies cost no call at all; the callers try them before decodeShort. maxReply is a [Limits] field as the caller
// got it: zero or negative means the default.
func decodeOK(v *Value, b []byte, maxLine, maxReply int) int {
	if len(b) >= 5 && string(b[:5]) == "+OK\r\n" && within(maxLine, 2) && within(maxReply, 5) {
		setValue(v, TypeSimpleString, false, b[1:3:3], 0)
		return 5
	}
	return 0
}

// decodeDigit decodes into *v a one-digit integer such as :1 and :0, what
// the lock scripts return, and returns the bytes consumed, 4, or 0 for
// anything else.
func decodeDigit(v *Value, b []byte, maxReply int) int {
	if len(b) >= 4 && b[0] == ':' && b[1]-'0' <= 9 && string(b[2:4]) == "\r\n" && within(maxReply, 4) {
		setValue(v, TypeInteger, false, nil, int64(b[1]-'0'))
		return 4
	}
	return 0
}

// decodeNullBulk decodes into *v the RESP2 null bulk string, $-1, the reply
// of SET NX when the key is taken, and returns the bytes consumed, 5, or 0
// for anything else.
func decodeNullBulk(v *Value, b []byte, maxReply int) int {
	if len(b) >= 5 && string(b[:5]) == "$-1\r\n" && within(maxReply, 5) {
		setValue(v, TypeBulk, true, nil, 0)
		return 5
	}
	return 0
}

// setValue sets every field of *v, one by one: assigning a composite
// literal would zero *v through a runtime call while the garbage collector
// marks (v may point into the heap), and a function that may call anything
// saves its registers on entry, even on paths that make no call.
func setValue(v *Value, t Type, null bool, bytes []byte, n int64) {
	v.Type, v.Null, v.Bytes, v.Int, v.Float, v.Size = t, null, bytes, n, 0, 0
}

// maxShortLine is the longest simple string decodeShort decodes, far below
// the defaults of MaxLine and MaxReply.
const maxShortLine = 512

// maxShortDigits is the longest integer decodeShort decodes: 18 decimal
// digits cannot overflow an int64, so it needs no overflow check.
const maxShortDigits = 18

// decodeShort decodes into *v the reply at the start of b if it is a simple
// string or simple error of up to maxShortLine bytes or an integer of up to
// 18 digits, whole and canonical, within maxLine and maxReply ([Limits]
// fields as the caller got them: zero or negative means the default, which
// no short reply exceeds). It sets every field of *v and returns the bytes
// consumed, or returns 0 and leaves *v alone.
func decodeShort(v *Value, b []byte, maxLine, maxReply int) int {
	if len(b) < 4 {
		return 0
	}
	switch t := Type(b[0]); t {
	case TypeSimpleString, TypeError:
		// The line ends at its first CR or LF, which must be a CR followed
		// by an LF.
		hi := min(len(b), maxShortLine+2)
		j := lineEnd(b[:hi], 1)
		if j+1 >= hi || b[j] != '\r' || b[j+1] != '\n' ||
			!within(maxLine, j-1) || !within(maxReply, j+2) {
			return 0
		}
		setValue(v, t, false, b[1:j:j], 0)
		return j + 2

	case TypeInteger:
		i := 1
		neg := b[1] == '-'
		if neg {
			i = 2
		}
		j := i
		var u int64
		for ; j < len(b) && j-i < maxShortDigits; j++ {
			d := b[j] - '0'
			if d > 9 {
				break
			}
			u = u*10 + int64(d)
		}
		if j == i || j+1 >= len(b) || b[j] != '\r' || b[j+1] != '\n' ||
			(b[i] == '0' && (j > i+1 || neg)) || !within(maxReply, j+2) {
			// Empty, unterminated, too long, a leading zero or -0, or too
			// big a reply.
			return 0
		}
		if neg {
			u = -u
		}
		setValue(v, t, false, nil, u)
		return j + 2

	}
	return 0
}

// lineEnd returns the index of the first '\r' or '\n' in b at or after i,
// or len(b) if there is none. Two calls to bytes.IndexByte, which scans
// many bytes per instruction, beat a loop over the bytes for all but the
// shortest lines (and +OK, the commonest, has its own path).
func lineEnd(b []byte, i int) int {
	end := len(b)
	if k := bytes.IndexByte(b[i:], '\n'); k >= 0 {
		end = i + k
	}
	if k := bytes.IndexByte(b[i:end], '\r'); k >= 0 {
		return i + k
	}
	return end
}

// within reports whether n is within limit, a [Limits] field where zero or
// negative means a default that n, the size of a short reply, never
// reaches.
func within(limit, n int) bool {
	return limit <= 0 || n <= limit
}
