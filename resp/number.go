package resp

import (
	"errors"
	"math"
	"strconv"
)

var (
	posInf = math.Inf(1)
	negInf = math.Inf(-1)
	nan    = math.NaN()
)

// parseInt parses the canonical decimal int64 at b[i:] and its CRLF, and
// returns it with the offset after the CRLF. It checks for overflow and
// rejects an empty number, a '+' sign, leading zeros and "-0".
func parseInt(b []byte, i int) (n int64, next, need int, err error) {
	j := i
	neg := false
	if j < len(b) && b[j] == '-' {
		neg = true
		j++
	}
	digits := j
	limit := uint64(1<<63 - 1)
	if neg {
		limit = 1 << 63
	}
	var u uint64
	for ; j < len(b); j++ {
		c := b[j]
		if c == '\r' {
			break
		}
		d := c - '0'
		if d > 9 {
			return 0, 0, 0, protoErr(j, "invalid digit")
		}
		if j == digits+1 && b[digits] == '0' {
			return 0, 0, 0, protoErr(digits, "leading zero")
		}
		// 18 digits cannot overflow; only longer numbers pay the division.
		if j-digits >= 18 && u > (limit-uint64(d))/10 {
			return 0, 0, 0, protoErr(i, "integer overflows int64")
		}
		u = u*10 + uint64(d)
	}
	if j >= len(b) {
		return 0, 0, len(b) + 1, ErrIncomplete
	}
	if j == digits {
		return 0, 0, 0, protoErr(j, "empty number")
	}
	if neg && u == 0 {
		return 0, 0, 0, protoErr(i, "negative zero")
	}
	if j+1 >= len(b) {
		return 0, 0, j + 2, ErrIncomplete
	}
	if b[j+1] != '\n' {
		return 0, 0, 0, protoErr(j+1, "expected CRLF")
	}
	if neg {
		return -int64(u), j + 2, 0, nil // -(1<<63) wraps to itself: correct
	}
	return int64(u), j + 2, 0, nil
}

// digitsEnd returns the index of the first non-digit of b at or after i.
func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i]-'0' <= 9 {
		i++
	}
	return i
}

// validBigNumber reports whether s is an optional sign and one or more
// decimal digits.
func validBigNumber(s []byte) bool {
	i := 0
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		i++
	}
	return i < len(s) && digitsEnd(s, i) == len(s)
}

// parseDouble parses a RESP3 double: "inf", "-inf", "nan" (also "+inf" and
// "-nan", which older servers print), or
// [sign] digits [ "." digits ] [ ("e"|"E") [sign] digits ].
// strconv.ParseFloat alone would also accept hex floats, "Infinity" and
// underscores, so the grammar is checked first.
func parseDouble(s []byte) (float64, bool) {
	switch string(s) {
	case "inf", "+inf":
		return posInf, true
	case "-inf":
		return negInf, true
	case "nan", "-nan":
		return nan, true
	}
	i := 0
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		i++
	}
	j := digitsEnd(s, i)
	if j == i {
		return 0, false
	}
	if j < len(s) && s[j] == '.' {
		k := digitsEnd(s, j+1)
		if k == j+1 {
			return 0, false
		}
		j = k
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		k := digitsEnd(s, j)
		if k == j {
			return 0, false
		}
		j = k
	}
	if j != len(s) {
		return 0, false
	}
	// The conversion does not allocate for inputs up to 32 bytes: the
	// compiler places the temporary string on the stack. A valid double
	// beyond float64's range is ±Inf (ParseFloat's value with ErrRange),
	// as one too small is 0: both are what the server meant, rounded.
	f, err := strconv.ParseFloat(string(s), 64)
	return f, err == nil || errors.Is(err, strconv.ErrRange)
}
