package fakeredis

import "math"

// parseInt64 parses b the way Redis' string2ll does: an optional '-', then
// either "0" alone or a digit 1-9 followed by digits; no '+', no spaces, no
// leading zeros, and no value outside int64. ok is false for anything else.
func parseInt64(b []byte) (n int64, ok bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > uint64(math.MaxInt64)+1 {
			return 0, false
		}
		return int64(-v), true // -v wraps to MinInt64 for 1<<63, as wanted
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// equalFold reports whether b equals the lower-case ASCII word, ignoring
// ASCII case.
func equalFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
}

// lowerInto writes the ASCII lower-case form of b into dst and returns it;
// ok is false when b does not fit.
func lowerInto(dst []byte, b []byte) (out []byte, ok bool) {
	if len(b) > len(dst) {
		return nil, false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst[:len(b)], true
}
