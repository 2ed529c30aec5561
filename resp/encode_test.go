package resp

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEncoders(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"array header", AppendArrayHeader(nil, 3), "*3\r\n"},
		{"array header zero", AppendArrayHeader(nil, 0), "*0\r\n"},
		{"array header negative", AppendArrayHeader(nil, -1), "*-1\r\n"},
		{"null array", appendNullArray(nil), "*-1\r\n"},
		{"map header", AppendMapHeader(nil, 2), "%2\r\n"},
		{"set header", appendSetHeader(nil, 12), "~12\r\n"},
		{"push header", AppendPushHeader(nil, 3), ">3\r\n"},
		{"attribute header", appendAttributeHeader(nil, 1), "|1\r\n"},
		{"bulk", AppendBulk(nil, []byte("hello")), "$5\r\nhello\r\n"},
		{"bulk nil", AppendBulk(nil, nil), "$0\r\n\r\n"},
		{"bulk binary", AppendBulk(nil, []byte("a\r\nb")), "$4\r\na\r\nb\r\n"},
		{"bulk string", AppendBulkString(nil, "k"), "$1\r\nk\r\n"},
		{"bulk string empty", AppendBulkString(nil, ""), "$0\r\n\r\n"},
		{"bulk int", AppendBulkInt(nil, 30000), "$5\r\n30000\r\n"},
		{"bulk int zero", AppendBulkInt(nil, 0), "$1\r\n0\r\n"},
		{"bulk int negative", AppendBulkInt(nil, -42), "$3\r\n-42\r\n"},
		{"bulk int max", AppendBulkInt(nil, math.MaxInt64), "$19\r\n9223372036854775807\r\n"},
		{"bulk int min", AppendBulkInt(nil, math.MinInt64), "$20\r\n-9223372036854775808\r\n"},
		{"command", AppendCommand(nil, "SET", "k", "v"), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"},
		{"command empty", AppendCommand(nil), "*0\r\n"},
		{"simple", appendSimpleString(nil, "OK"), "+OK\r\n"},
		{"error", AppendError(nil, "ERR bad"), "-ERR bad\r\n"},
		{"bulk error", appendBulkError(nil, "SYNTAX x"), "!8\r\nSYNTAX x\r\n"},
		{"integer", AppendInteger(nil, 1), ":1\r\n"},
		{"integer negative", AppendInteger(nil, -2), ":-2\r\n"},
		{"integer min", AppendInteger(nil, math.MinInt64), ":-9223372036854775808\r\n"},
		{"null bulk", AppendNullBulk(nil), "$-1\r\n"},
		{"null", AppendNull(nil), "_\r\n"},
		{"true", appendBoolean(nil, true), "#t\r\n"},
		{"false", appendBoolean(nil, false), "#f\r\n"},
		{"double", AppendDouble(nil, 1.5), ",1.5\r\n"},
		{"double int", AppendDouble(nil, 10), ",10\r\n"},
		{"double big", AppendDouble(nil, 1e300), ",1e+300\r\n"},
		{"double inf", AppendDouble(nil, math.Inf(1)), ",inf\r\n"},
		{"double -inf", AppendDouble(nil, math.Inf(-1)), ",-inf\r\n"},
		{"double nan", AppendDouble(nil, math.NaN()), ",nan\r\n"},
		{"big number", appendBigNumber(nil, "-123456789012345678901234567890"), "(-123456789012345678901234567890\r\n"},
		{"verbatim", AppendVerbatim(nil, "txt", "Some string"), "=15\r\ntxt:Some string\r\n"},
		{"appends", AppendInteger([]byte("+OK\r\n"), 5), "+OK\r\n:5\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, string(tc.got))
			// Everything the encoders write, the parser accepts, whole.
			_, n, err := Parse(nil, tc.got, Limits{})
			if strings.HasSuffix(tc.name, "header") {
				// A header with a nonzero count waits for its elements.
				require.ErrorIs(t, err, ErrIncomplete)
				return
			}
			require.NoError(t, err)
			if tc.name != "appends" {
				assert.Equal(t, len(tc.got), n)
			}
		})
	}
}

func TestDecimalLen(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 99, 100, -1, -9, -10, 1e18, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		assert.Equal(t, len(AppendInteger(nil, n))-3, decimalLen(n), "%d", n)
	}
}

func TestDoubleRoundTrip(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1.5, -2.25, 1e-300, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, 3.141592653589793, 1.0 / 3} {
		vals, _, err := Parse(nil, AppendDouble(nil, f), Limits{})
		require.NoError(t, err)
		assert.Equal(t, math.Float64bits(f), math.Float64bits(vals[0].Float), "%v", f)
	}
}

func TestAppendValueFromFields(t *testing.T) {
	vals := []Value{
		{Type: TypeArray, Int: 4, Size: 4},
		{Type: TypeDouble, Float: 2.5},
		{Type: TypeBoolean, Int: 1},
		{Type: TypeBulk, Null: true},
		{Type: TypeInteger, Int: -3},
		{Type: 'Q'}, // unknown: nothing
	}
	assert.Equal(t, "*4\r\n,2.5\r\n#t\r\n$-1\r\n:-3\r\n", string(AppendValues(nil, vals)))
	assert.Equal(t, "*-1\r\n", string(appendValue(nil, &Value{Type: TypeArray, Null: true})))
}
