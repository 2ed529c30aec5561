package resp

import (
	"math"
	"strconv"
)

// The encoders follow strconv.AppendInt: they append to dst and return the
// extended slice, which the caller owns. They do not allocate when dst has
// room for the encoding, and they never fail. They do not validate: a simple
// string, error or big number must not contain '\r' or '\n', and a verbatim
// format must be three bytes, or the output is not valid RESP.

// appendHeader appends "<t><n>\r\n".
func appendHeader(dst []byte, t Type, n int64) []byte {
	dst = append(dst, byte(t))
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// appendLine appends "<t><s>\r\n".
func appendLine(dst []byte, t Type, s string) []byte {
	dst = append(dst, byte(t))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendArrayHeader appends "*<n>\r\n", the header of an array of n
// elements. A negative n appends the RESP2 null array "*-1\r\n".
func AppendArrayHeader(dst []byte, n int) []byte {
	if n < 0 {
		return appendNullArray(dst)
	}
	return appendHeader(dst, TypeArray, int64(n))
}

// AppendMapHeader appends "%<pairs>\r\n", the header of a RESP3 map of
// pairs key/value pairs (2*pairs values follow).
func AppendMapHeader(dst []byte, pairs int) []byte {
	return appendHeader(dst, TypeMap, int64(max(pairs, 0)))
}

// AppendPushHeader appends "><n>\r\n", the header of a RESP3 push message.
func AppendPushHeader(dst []byte, n int) []byte {
	return appendHeader(dst, TypePush, int64(max(n, 0)))
}

// appendNullArray appends the RESP2 null array "*-1\r\n".
func appendNullArray(dst []byte) []byte {
	return append(dst, "*-1\r\n"...)
}

// AppendBulk appends b as a bulk string "$<len>\r\n<b>\r\n". A nil b is
// encoded as an empty bulk string, not as null: see [AppendNullBulk].
func AppendBulk(dst []byte, b []byte) []byte {
	dst = appendHeader(dst, TypeBulk, int64(len(b)))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendBulkString appends s as a bulk string "$<len>\r\n<s>\r\n".
func AppendBulkString(dst []byte, s string) []byte {
	dst = appendHeader(dst, TypeBulk, int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendBulkInt appends the decimal form of n as a bulk string, formatting
// it straight into dst (no temporary buffer): AppendBulkInt(dst, -42)
// appends "$3\r\n-42\r\n".
func AppendBulkInt(dst []byte, n int64) []byte {
	dst = appendHeader(dst, TypeBulk, int64(decimalLen(n)))
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// decimalLen returns len(strconv.FormatInt(n, 10)).
func decimalLen(n int64) int {
	l := 1
	u := uint64(n)
	if n < 0 {
		l++
		u = -u
	}
	for u >= 10 {
		u /= 10
		l++
	}
	return l
}

// AppendCommand appends a command as an array of bulk strings, the form
// Redis expects from clients: AppendCommand(dst, "GET", "k") appends
// "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n".
func AppendCommand(dst []byte, args ...string) []byte {
	dst = appendHeader(dst, TypeArray, int64(len(args)))
	for _, a := range args {
		dst = AppendBulkString(dst, a)
	}
	return dst
}

// AppendError appends the simple error "-<msg>\r\n"; msg should start with
// an upper-case prefix such as "ERR" or "WRONGTYPE".
func AppendError(dst []byte, msg string) []byte {
	return appendLine(dst, TypeError, msg)
}

// AppendInteger appends ":<n>\r\n".
func AppendInteger(dst []byte, n int64) []byte {
	return appendHeader(dst, TypeInteger, n)
}

// AppendNullBulk appends the RESP2 null bulk string "$-1\r\n".
func AppendNullBulk(dst []byte) []byte {
	return append(dst, "$-1\r\n"...)
}

// AppendNull appends the RESP3 null "_\r\n".
func AppendNull(dst []byte) []byte {
	return append(dst, "_\r\n"...)
}

// appendBoolean appends the RESP3 boolean "#t\r\n" or "#f\r\n".
func appendBoolean(dst []byte, b bool) []byte {
	if b {
		return append(dst, "#t\r\n"...)
	}
	return append(dst, "#f\r\n"...)
}

// AppendDouble appends the RESP3 double ",<f>\r\n", in the shortest form
// that parses back to f, and as "inf", "-inf" or "nan" for those values.
func AppendDouble(dst []byte, f float64) []byte {
	dst = append(dst, byte(TypeDouble))
	switch {
	case math.IsInf(f, 1):
		dst = append(dst, "inf"...)
	case math.IsInf(f, -1):
		dst = append(dst, "-inf"...)
	case math.IsNaN(f):
		dst = append(dst, "nan"...)
	default:
		dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	return append(dst, '\r', '\n')
}

// AppendVerbatim appends the RESP3 verbatim string
// "=<len>\r\n<format>:<text>\r\n"; format must be three bytes ("txt", "mkd").
func AppendVerbatim(dst []byte, format, text string) []byte {
	dst = appendHeader(dst, TypeVerbatim, int64(len(format)+1+len(text)))
	dst = append(dst, format...)
	dst = append(dst, ':')
	dst = append(dst, text...)
	return append(dst, '\r', '\n')
}

// appendValue appends the encoding of the single node v: for an aggregate,
// only its header (its children are the Values that follow it). It is the
// inverse of [Parse] for one node: a Value that Parse returned is encoded
// exactly as it was on the wire, since Parse accepts only canonical
// numbers and keeps the raw text of doubles and big numbers. A double
// with nil Bytes is formatted from Float as by [AppendDouble]. A Value of
// an unknown Type appends nothing.
func appendValue(dst []byte, v *Value) []byte {
	switch t := v.Type; t {
	case TypeSimpleString, TypeError, TypeBigNumber:
		dst = append(dst, byte(t))
		dst = append(dst, v.Bytes...)
		return append(dst, '\r', '\n')
	case TypeBulk, TypeBulkError, TypeVerbatim:
		if v.Null {
			dst = append(dst, byte(t))
			return append(dst, '-', '1', '\r', '\n')
		}
		dst = appendHeader(dst, t, int64(len(v.Bytes)))
		dst = append(dst, v.Bytes...)
		return append(dst, '\r', '\n')
	case TypeInteger:
		return appendHeader(dst, t, v.Int)
	case TypeNull:
		return AppendNull(dst)
	case TypeBoolean:
		return appendBoolean(dst, v.Int != 0)
	case TypeDouble:
		if v.Bytes == nil {
			return AppendDouble(dst, v.Float)
		}
		dst = append(dst, byte(t))
		dst = append(dst, v.Bytes...)
		return append(dst, '\r', '\n')
	case TypeArray, TypeMap, TypeSet, TypePush, TypeAttribute:
		if v.Null {
			dst = append(dst, byte(t))
			return append(dst, '-', '1', '\r', '\n')
		}
		return appendHeader(dst, t, v.Int)
	}
	return dst
}

// AppendValues appends the encoding of vals, a flat pre-order tree as
// returned by [Parse] or [Reader.ReadReply]: each Value in turn, an
// aggregate by its header alone (its children are the Values that follow
// it). It is the inverse of Parse: for a reply that Parse accepted, the
// result equals the bytes Parse consumed, since Parse accepts only
// canonical numbers and keeps the raw text of doubles and big numbers. A
// double with nil Bytes is formatted from Float as by [AppendDouble]; a
// Value of an unknown Type appends nothing.
func AppendValues(dst []byte, vals []Value) []byte {
	for i := range vals {
		dst = appendValue(dst, &vals[i])
	}
	return dst
}
