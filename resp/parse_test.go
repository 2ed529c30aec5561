package resp

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var parseOK = []struct {
	name, in, want string
}{
	{"simple", "+OK\r\n", "+OK"},
	{"simple empty", "+\r\n", "+"},
	{"simple with spaces", "+hello world\r\n", "+hello world"},
	{"error", "-ERR unknown command\r\n", "-ERR unknown command"},
	{"error empty", "-\r\n", "-"},
	{"integer", ":1\r\n", ":1"},
	{"integer zero", ":0\r\n", ":0"},
	{"integer negative", ":-2\r\n", ":-2"},
	{"integer max", ":9223372036854775807\r\n", ":9223372036854775807"},
	{"integer min", ":-9223372036854775808\r\n", ":-9223372036854775808"},
	{"bulk", "$5\r\nhello\r\n", "$hello"},
	{"bulk empty", "$0\r\n\r\n", "$"},
	{"bulk binary", "$4\r\na\r\nb\r\n", "$a\r\nb"},
	{"bulk null", "$-1\r\n", "$nil"},
	{"array", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "*2[$GET $k]"},
	{"array empty", "*0\r\n", "*0[]"},
	{"array null", "*-1\r\n", "*nil"},
	{"array nested", "*3\r\n*1\r\n:1\r\n*0\r\n*2\r\n*1\r\n+x\r\n$-1\r\n", "*3[*1[:1] *0[] *2[*1[+x] $nil]]"},
	{"null", "_\r\n", "_"},
	{"true", "#t\r\n", "#t"},
	{"false", "#f\r\n", "#f"},
	{"double", ",1.5\r\n", ",1.5"},
	{"double exp", ",1e+300\r\n", ",1e+300"},
	{"double inf", ",inf\r\n", ",inf"},
	{"double -inf", ",-inf\r\n", ",-inf"},
	{"double nan", ",nan\r\n", ",nan"},
	{"double int", ",10\r\n", ",10"},
	{"big number", "(3492890328409238509324850943850943825024385\r\n", "(3492890328409238509324850943850943825024385"},
	{"big number negative", "(-1\r\n", "(-1"},
	{"bulk error", "!21\r\nSYNTAX invalid syntax\r\n", "!SYNTAX invalid syntax"},
	{"verbatim", "=15\r\ntxt:Some string\r\n", "=txt:Some string"},
	{"verbatim empty text", "=4\r\ntxt:\r\n", "=txt:"},
	{"map", "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", "%2[+first :1 +second :2]"},
	{"map empty", "%0\r\n", "%0[]"},
	{"set", "~3\r\n+a\r\n+b\r\n:1\r\n", "~3[+a +b :1]"},
	{"push", ">2\r\n+pubsub\r\n$1\r\nx\r\n", ">2[+pubsub $x]"},
	{"attribute then value", "|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n", "|1[+ttl :3] $v"},
	{"attribute inside array", "*2\r\n:1\r\n|1\r\n+a\r\n+b\r\n:2\r\n", "*2[:1 |1[+a +b] :2]"},
	{"two attributes", "|0\r\n|0\r\n_\r\n", "|0[] |0[] _"},
	{"only first reply", "+OK\r\n:1\r\n", "+OK"},
}

func TestParseValid(t *testing.T) {
	for _, tc := range parseOK {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			vals, n, err := Parse(nil, in, Limits{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, render(vals))
			frame := in[:n]
			if tc.name == "only first reply" {
				assert.Equal(t, 5, n)
			} else {
				assert.Equal(t, len(in), n)
			}
			// Round trip: the encoder reproduces the frame.
			assert.Equal(t, string(frame), string(AppendValues(nil, vals)))
			// Every strict prefix is incomplete.
			for i := range n {
				_, m, err := Parse(nil, in[:i], Limits{})
				require.ErrorIs(t, err, ErrIncomplete, "prefix %q", in[:i])
				require.Zero(t, m)
			}
		})
	}
}

func TestParseScalarFields(t *testing.T) {
	one := func(t *testing.T, in string) Value {
		t.Helper()
		vals, _, err := Parse(nil, []byte(in), Limits{})
		require.NoError(t, err)
		require.Len(t, vals, 1)
		return vals[0]
	}
	assert.Equal(t, 1.5, one(t, ",1.5\r\n").Float)
	assert.Equal(t, -0.25, one(t, ",-25e-2\r\n").Float)
	assert.True(t, math.IsInf(one(t, ",inf\r\n").Float, 1))
	assert.True(t, math.IsInf(one(t, ",-inf\r\n").Float, -1))
	assert.True(t, math.IsNaN(one(t, ",nan\r\n").Float))
	// Valid doubles beyond float64's range round to ±Inf, as tiny ones to 0.
	assert.True(t, math.IsInf(one(t, ",1E900\r\n").Float, 1))
	assert.True(t, math.IsInf(one(t, ",-1e309\r\n").Float, -1))
	assert.Equal(t, 0.0, one(t, ",1e-400\r\n").Float)
	assert.Equal(t, "1E900", string(one(t, ",1E900\r\n").Bytes), "the text is kept as sent")
	assert.Equal(t, int64(1), one(t, "#t\r\n").Int)
	assert.Equal(t, int64(0), one(t, "#f\r\n").Int)
	assert.True(t, one(t, "_\r\n").Null)
	assert.True(t, one(t, "$-1\r\n").Null)
	assert.Nil(t, one(t, "$-1\r\n").Bytes)
	assert.NotNil(t, one(t, "$0\r\n\r\n").Bytes)
	assert.False(t, one(t, "$0\r\n\r\n").Null)
	m := one(t, "%0\r\n")
	assert.Equal(t, TypeMap, m.Type)

	v := one(t, "=15\r\ntxt:Some string\r\n")
	format, text := v.Verbatim()
	assert.Equal(t, "txt", string(format))
	assert.Equal(t, "Some string", string(text))
	format, text = (&Value{Type: TypeBulk, Bytes: []byte("x")}).Verbatim()
	assert.Nil(t, format)
	assert.Equal(t, "x", string(text))

	b := one(t, "$3\r\nabc\r\n+OK\r\n")
	assert.Equal(t, len(b.Bytes), cap(b.Bytes), "views must not expose the rest of the buffer")
}

func TestParseMapCountsPairs(t *testing.T) {
	vals, _, err := Parse(nil, []byte("%2\r\n+a\r\n:1\r\n+b\r\n*1\r\n:2\r\n"), Limits{})
	require.NoError(t, err)
	require.Len(t, vals, 6)
	assert.Equal(t, int64(2), vals[0].Int)
	assert.Equal(t, 5, vals[0].Size)
	assert.Equal(t, 1, vals[4].Size)
	// next sibling of the map's 4th child
	assert.Equal(t, 6, 4+1+vals[4].Size)
}

func TestParseAppendsToDst(t *testing.T) {
	dst := []Value{{Type: TypeInteger, Int: 7}}
	vals, _, err := Parse(dst, []byte("*1\r\n:1\r\n"), Limits{})
	require.NoError(t, err)
	require.Len(t, vals, 3)
	assert.Equal(t, int64(7), vals[0].Int)
	assert.Equal(t, 1, vals[1].Size)

	vals2, n, err := Parse(vals, []byte("*1\r\n"), Limits{})
	require.ErrorIs(t, err, ErrIncomplete)
	assert.Zero(t, n)
	assert.Len(t, vals2, 3, "dst comes back unchanged in length on error")
}

var parseBad = []struct {
	name, in string
	off      int
	reason   string
}{
	{"unknown type", "?x\r\n", 0, "unknown type byte 0x3f"},
	{"unknown type inline command", "PING\r\n", 0, "unknown type byte 0x50"},
	{"unknown type nul", "\x00", 0, "unknown type byte 0x0"},
	{"simple lone LF", "+a\nb\r\n", 2, "line feed without carriage return"},
	{"simple lone CR", "+a\rb\r\n", 2, "carriage return inside line"},
	{"simple LF only", "+OK\n", 3, "line feed without carriage return"},
	{"int plus", ":+1\r\n", 1, "invalid digit"},
	{"int empty", ":\r\n", 1, "empty number"},
	{"int minus only", ":-\r\n", 2, "empty number"},
	{"int leading zero", ":01\r\n", 1, "leading zero"},
	{"int negative zero", ":-0\r\n", 1, "negative zero"},
	{"int overflow", ":9223372036854775808\r\n", 1, "integer overflows int64"},
	{"int underflow", ":-9223372036854775809\r\n", 1, "integer overflows int64"},
	{"int huge", ":99999999999999999999999\r\n", 1, "integer overflows int64"},
	{"int letter", ":12a\r\n", 3, "invalid digit"},
	{"int space", ": 1\r\n", 1, "invalid digit"},
	{"int CR without LF", ":1\rx", 3, "expected CRLF"},
	{"int LF only", ":1\n", 2, "invalid digit"},
	{"bulk -2", "$-2\r\n", 1, "invalid negative length"},
	{"bulk huge", "$99999999999999999999\r\n", 1, "integer overflows int64"},
	{"bulk over MaxBulk", "$536870913\r\n", 1, "bulk length exceeds MaxBulk"},
	{"bulk bad terminator", "$3\r\nabcde\r\n", 7, "bulk payload not followed by CRLF"},
	{"bulk bad terminator LF", "$3\r\nabc\r\r", 8, "bulk payload not followed by CRLF"},
	{"bulk short early", "$3\r\nabcd", 7, "bulk payload not followed by CRLF"},
	{"bulk error null", "!-1\r\n", 1, "invalid negative length"},
	{"array -2", "*-2\r\n", 1, "invalid negative count"},
	{"map null", "%-1\r\n", 1, "invalid negative count"},
	{"array over MaxElems", "*1048577\r\n", 1, "aggregate count exceeds MaxElems"},
	{"array bad child", "*2\r\n:1\r\n?\r\n", 8, "unknown type byte 0x3f"},
	{"null junk", "_x\r\n", 1, "expected CRLF"},
	{"null LF only", "_\n", 1, "expected CRLF"},
	{"bool bad", "#x\r\n", 1, "boolean neither 't' nor 'f'"},
	{"bool upper", "#T\r\n", 1, "boolean neither 't' nor 'f'"},
	{"bool long", "#tt\r\n", 2, "expected CRLF"},
	{"double empty", ",\r\n", 1, "invalid double"},
	{"double hex", ",0x10\r\n", 1, "invalid double"},
	{"double Infinity", ",Infinity\r\n", 1, "invalid double"},
	{"double underscore", ",1_0\r\n", 1, "invalid double"},
	{"double dot only", ",1.\r\n", 1, "invalid double"},
	{"double leading dot", ",.5\r\n", 1, "invalid double"},
	{"double bad exp", ",1e\r\n", 1, "invalid double"},
	{"double plus nan", ",+nan\r\n", 1, "invalid double"},
	{"big number empty", "(\r\n", 1, "invalid big number"},
	{"big number letters", "(12x\r\n", 1, "invalid big number"},
	{"verbatim short", "=3\r\ntxt\r\n", 1, "verbatim string shorter than its format"},
	{"verbatim no colon", "=5\r\ntxt_a\r\n", 7, "verbatim string without ':' after its format"},
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range parseBad {
		t.Run(tc.name, func(t *testing.T) {
			vals, n, err := Parse(nil, []byte(tc.in), Limits{})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrProtocol)
			var pe *ProtocolError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.off, pe.Offset, "offset")
			assert.Equal(t, tc.reason, pe.Reason)
			assert.Equal(t, "resp: protocol error at offset "+itoa(tc.off)+": "+tc.reason, err.Error())
			assert.Zero(t, n)
			assert.Empty(t, vals)
		})
	}
}

func TestParseLimits(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		lim    Limits
		reason string
	}{
		{"MaxBulk", "$5\r\nhello\r\n", Limits{MaxBulk: 4}, "bulk length exceeds MaxBulk"},
		{"MaxBulk verbatim", "=8\r\ntxt:abcd\r\n", Limits{MaxBulk: 7}, "bulk length exceeds MaxBulk"},
		{"MaxElems", "*3\r\n:1\r\n:2\r\n:3\r\n", Limits{MaxElems: 2}, "aggregate count exceeds MaxElems"},
		{"MaxElems map pairs", "%3\r\n", Limits{MaxElems: 2}, "aggregate count exceeds MaxElems"},
		{"MaxDepth", "*1\r\n*1\r\n*0\r\n", Limits{MaxDepth: 2}, "aggregates nested deeper than MaxDepth"},
		{"MaxDepth attribute", "*1\r\n|0\r\n:1\r\n", Limits{MaxDepth: 1}, "aggregates nested deeper than MaxDepth"},
		{"MaxLine", "+hello\r\n", Limits{MaxLine: 4}, "line exceeds MaxLine"},
		{"MaxLine without CRLF", "+hello", Limits{MaxLine: 3}, "line exceeds MaxLine"},
		{"MaxValues", "*3\r\n:1\r\n:2\r\n:3\r\n", Limits{MaxValues: 3}, "too many values in reply"},
		{"MaxReply bulk", "$10\r\n", Limits{MaxReply: 16}, "reply exceeds MaxReply"},
		{"MaxReply lines", "*3\r\n+aaaa\r\n+bbbb\r\n+cccc\r\n", Limits{MaxReply: 20}, "reply exceeds MaxReply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse(nil, []byte(tc.in), tc.lim)
			var pe *ProtocolError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.reason, pe.Reason)
		})
	}
	// At the limit is fine.
	ok := []struct {
		in  string
		lim Limits
	}{
		{"$4\r\nabcd\r\n", Limits{MaxBulk: 4}},
		{"*2\r\n:1\r\n:2\r\n", Limits{MaxElems: 2}},
		{"*1\r\n*0\r\n", Limits{MaxDepth: 2}},
		{"+abcd\r\n", Limits{MaxLine: 4}},
		{"*2\r\n:1\r\n:2\r\n", Limits{MaxValues: 3}},
		{"$10\r\n0123456789\r\n", Limits{MaxReply: 17}},
	}
	for _, tc := range ok {
		_, _, err := Parse(nil, []byte(tc.in), tc.lim)
		assert.NoError(t, err, "%q %+v", tc.in, tc.lim)
	}
}

func TestParseHugeDeclaredLengths(t *testing.T) {
	// Declared sizes within the limits but with no bytes behind them are
	// just incomplete.
	for _, in := range []string{"$536870912\r\n", "*1048576\r\n", "%1048576\r\n:1\r\n", "*1\r\n$100000\r\nabc"} {
		_, n, err := Parse(nil, []byte(in), Limits{})
		assert.ErrorIs(t, err, ErrIncomplete, in)
		assert.Zero(t, n)
	}
}

func TestParseDeepNesting(t *testing.T) {
	deep := strings.Repeat("*1\r\n", 10000) + ":1\r\n"
	_, _, err := Parse(nil, []byte(deep), Limits{})
	require.ErrorIs(t, err, ErrProtocol)
	vals, _, err := Parse(nil, []byte(deep), Limits{MaxDepth: 10000})
	require.NoError(t, err)
	require.Len(t, vals, 10001)
	assert.Equal(t, 10000, vals[0].Size)
}

func TestParseLongLineInPieces(t *testing.T) {
	// The Reader resumes a long line without rescanning: exercised through
	// the parser state directly.
	line := "+" + strings.Repeat("a", 10000) + "\r\n"
	var p parser
	lim := Limits{}.withDefaults()
	stack := p.start(nil)
	var err error
	for i := 1; i < len(line); i += 97 {
		stack, _, err = p.run([]byte(line[:i]), &lim, stack)
		require.ErrorIs(t, err, ErrIncomplete)
	}
	_, _, err = p.run([]byte(line), &lim, stack)
	require.NoError(t, err)
	assert.Equal(t, len(line), p.pos)
	assert.Equal(t, strings.Repeat("a", 10000), string(p.vals[0].Bytes))
}

func TestValueErrors(t *testing.T) {
	vals, _, err := Parse(nil, []byte("-NOSCRIPT No matching script. Please use EVAL.\r\n"), Limits{})
	require.NoError(t, err)
	v := &vals[0]
	assert.True(t, v.IsError())
	assert.Equal(t, "NOSCRIPT", string(v.ErrorPrefix()))
	e := v.Err()
	var se *ServerError
	require.ErrorAs(t, e, &se)
	assert.Equal(t, "NOSCRIPT", se.Prefix)
	assert.Equal(t, "NOSCRIPT No matching script. Please use EVAL.", se.Error())

	vals, _, err = Parse(nil, []byte("!9\r\nERR oops!\r\n"), Limits{})
	require.NoError(t, err)
	assert.True(t, vals[0].IsError())
	assert.Equal(t, "ERR", string(vals[0].ErrorPrefix()))
	assert.Equal(t, "ERR oops!", vals[0].Err().Error())

	vals, _, err = Parse(nil, []byte("-LOADING\r\n"), Limits{})
	require.NoError(t, err)
	assert.Equal(t, "LOADING", string(vals[0].ErrorPrefix()))

	ok := &Value{Type: TypeSimpleString, Bytes: []byte("OK")}
	assert.False(t, ok.IsError())
	assert.Nil(t, ok.ErrorPrefix())
	assert.NoError(t, ok.Err())
}

func TestProtocolErrorIs(t *testing.T) {
	var err error = &ProtocolError{Offset: 3, Reason: "x"}
	assert.True(t, errors.Is(err, ErrProtocol))
	assert.False(t, errors.Is(err, ErrIncomplete))
	assert.False(t, errors.Is(ErrIncomplete, ErrProtocol))
}

func TestTypeString(t *testing.T) {
	assert.Equal(t, "bulk string", TypeBulk.String())
	assert.Equal(t, "attribute", TypeAttribute.String())
	assert.Equal(t, "unknown", Type('?').String())
	for _, ty := range []Type{TypeArray, TypeMap, TypeSet, TypePush, TypeAttribute} {
		assert.True(t, ty.IsAggregate())
	}
	assert.False(t, TypeBulk.IsAggregate())
}
