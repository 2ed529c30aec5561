//go:build !race

package resp

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loopReader returns data over and over, so a Reader reading from it reaches
// a steady state.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

func TestAllocsEncoders(t *testing.T) {
	dst := make([]byte, 0, 1024)
	bulk := []byte("some value")
	cases := map[string]func(){
		"AppendArrayHeader":     func() { dst = AppendArrayHeader(dst[:0], 3) },
		"appendNullArray":       func() { dst = appendNullArray(dst[:0]) },
		"AppendMapHeader":       func() { dst = AppendMapHeader(dst[:0], 3) },
		"appendSetHeader":       func() { dst = appendSetHeader(dst[:0], 3) },
		"AppendPushHeader":      func() { dst = AppendPushHeader(dst[:0], 3) },
		"appendAttributeHeader": func() { dst = appendAttributeHeader(dst[:0], 3) },
		"AppendBulk":            func() { dst = AppendBulk(dst[:0], bulk) },
		"AppendBulkString":      func() { dst = AppendBulkString(dst[:0], "value") },
		"AppendBulkInt":         func() { dst = AppendBulkInt(dst[:0], -1234567890) },
		"AppendCommand":         func() { dst = AppendCommand(dst[:0], "SET", "lock", "token", "NX", "PX", "30000") },
		"appendSimpleString":    func() { dst = appendSimpleString(dst[:0], "OK") },
		"AppendError":           func() { dst = AppendError(dst[:0], "ERR x") },
		"appendBulkError":       func() { dst = appendBulkError(dst[:0], "ERR x") },
		"AppendInteger":         func() { dst = AppendInteger(dst[:0], math.MinInt64) },
		"AppendNullBulk":        func() { dst = AppendNullBulk(dst[:0]) },
		"AppendNull":            func() { dst = AppendNull(dst[:0]) },
		"appendBoolean":         func() { dst = appendBoolean(dst[:0], true) },
		"AppendDouble":          func() { dst = AppendDouble(dst[:0], 3.141592653589793) },
		"AppendDouble inf":      func() { dst = AppendDouble(dst[:0], math.Inf(-1)) },
		"appendBigNumber":       func() { dst = appendBigNumber(dst[:0], "12345678901234567890") },
		"AppendVerbatim":        func() { dst = AppendVerbatim(dst[:0], "txt", "hello") },
		"AppendValues": func() {
			dst = AppendValues(dst[:0], []Value{{Type: TypeArray, Int: 1, Size: 1}, {Type: TypeBulk, Bytes: bulk}})
		},
	}
	for name, f := range cases {
		assert.Equal(t, 0.0, testing.AllocsPerRun(100, f), name)
	}
}

// allocReplies covers every type.
var allocReplies = map[string]string{
	"simple":      "+OK\r\n",
	"error":       "-NOSCRIPT No matching script. Please use EVAL.\r\n",
	"integer":     ":-1234567890\r\n",
	"bulk":        "$5\r\nhello\r\n",
	"null bulk":   "$-1\r\n",
	"array":       "*2\r\n$3\r\nGET\r\n*1\r\n:1\r\n",
	"null array":  "*-1\r\n",
	"null":        "_\r\n",
	"boolean":     "#t\r\n",
	"double":      ",3.141592653589793\r\n",
	"double inf":  ",-inf\r\n",
	"big number":  "(3492890328409238509324850943850943825024385\r\n",
	"bulk error":  "!9\r\nERR oops!\r\n",
	"verbatim":    "=15\r\ntxt:Some string\r\n",
	"map":         "%2\r\n+a\r\n:1\r\n+b\r\n,2.5\r\n",
	"set":         "~2\r\n+a\r\n+b\r\n",
	"push":        ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n",
	"attribute":   "|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n",
	"deep nested": "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
}

// allocLimits are the limits the decoders are measured with: the defaults,
// and limits of the caller's own, which the decoder must not copy to the
// heap.
var allocLimits = map[string]Limits{
	"default": {},
	"custom":  {MaxBulk: 1 << 20, MaxElems: 1000, MaxDepth: 30, MaxLine: 1 << 10, MaxValues: 1 << 12, MaxReply: 1 << 22},
}

func TestAllocsParse(t *testing.T) {
	dst := make([]Value, 0, 64)
	for limName, lim := range allocLimits {
		for name, in := range allocReplies {
			b := []byte(in)
			var err error
			allocs := testing.AllocsPerRun(100, func() {
				dst, _, err = Parse(dst[:0], b, lim)
			})
			require.NoError(t, err, name)
			assert.Equal(t, 0.0, allocs, "%s, %s limits", name, limName)
		}
	}
}

// TestAllocsReader measures both of the Reader's paths: the short replies
// take decodeShort when they are whole in the buffer, the general decoder
// when they straddle a Read.
func TestAllocsReader(t *testing.T) {
	for limName, lim := range allocLimits {
		for name, in := range allocReplies {
			// A few replies per Read, and replies that straddle reads.
			r := NewReader(&loopReader{data: []byte(in + in + in)}, 64, lim)
			for range 100 {
				_, err := r.ReadReply()
				require.NoError(t, err, name)
			}
			var err error
			allocs := testing.AllocsPerRun(200, func() {
				_, err = r.ReadReply()
			})
			require.NoError(t, err, name)
			assert.Equal(t, 0.0, allocs, "%s, %s limits", name, limName)
		}
	}
}

func TestAllocsValueMethods(t *testing.T) {
	v := Value{Type: TypeError, Bytes: []byte("WRONGTYPE Operation against a key")}
	vb := Value{Type: TypeVerbatim, Bytes: []byte("txt:hello")}
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() {
		_ = v.IsError()
		_ = v.ErrorPrefix()
		_, _ = vb.Verbatim()
	}))
}

// A double beyond float64's range costs strconv's range error: exactly two
// allocations, as Parse's doc says; one in range costs none.
func TestAllocsDoubles(t *testing.T) {
	for in, want := range map[string]float64{",1.5\r\n": 0, ",1E900\r\n": 2, ",-1e309\r\n": 2} {
		b := []byte(in)
		dst := make([]Value, 0, 4)
		var err error
		allocs := testing.AllocsPerRun(100, func() {
			dst, _, err = Parse(dst[:0], b, Limits{})
		})
		require.NoError(t, err, in)
		assert.Equal(t, want, allocs, "%q", in)
	}
}
