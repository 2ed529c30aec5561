package resp

import "bytes"

// This file is the fast path for the replies a lock reads: +OK and the null
// bulk string for SET NX, :1 and :0 for the scripts, and a short error such
// as -NOSCRIPT. Reader.ReadReply, the decoder the connections use, tries it
// before the general decoder, whose set-up (limits defaults, a resumable
// line scan) costs more than these replies' bytes do.
//
// decodeShort returns 0 rather than an error when it cannot decode its
// input whole: the caller then runs the general decoder, which decodes the
// reply or says what is wrong with it. So the fast path needs no error
// paths, and TestShortAgrees checks that whenever it returns n > 0 it
// returns exactly what the general decoder would.

// maxShortLine is the longest simple string decodeShort decodes, far below
// the defaults of MaxLine and MaxReply.
const maxShortLine = 512

// maxShortDigits is the longest integer decodeShort decodes: 18 decimal
// digits cannot overflow an int64, so it needs no overflow check.
const maxShortDigits = 18

// decodeShort decodes into *v the reply at the start of b if it is a simple
// string or simple error of up to maxShortLine bytes, an integer of up to
// 18 digits or the null bulk string, whole and canonical, within maxLine and maxReply ([Limits]
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
		*v = Value{Type: t, Bytes: b[1:j:j]}
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
		*v = Value{Type: t, Int: u}
		return j + 2

	case TypeBulk:
		if string(b[:4]) == "$-1\r" && len(b) >= 5 && b[4] == '\n' && within(maxReply, 5) {
			*v = Value{Type: TypeBulk, Null: true}
			return 5
		}
	}
	return 0
}

// lineEnd returns the index of the first '\r' or '\n' in b at or after i,
// or len(b) if there is none. Two calls to bytes.IndexByte, which scans
// many bytes per instruction, beat a loop over the bytes for all but the
// shortest lines.
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
