package resp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkReader returns its data max bytes at a time, or, with rng set, a
// random 1..max bytes at a time; then err (io.EOF if nil).
type chunkReader struct {
	data []byte
	max  int
	rng  *rand.Rand
	err  error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := c.max
	if c.rng != nil {
		n = 1 + c.rng.IntN(c.max)
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// genReply appends a random valid reply of every type to dst.
func genReply(dst []byte, rng *rand.Rand, depth int) []byte {
	k := rng.IntN(18)
	if depth > 3 && k >= 13 {
		k = rng.IntN(13)
	}
	word := func() string {
		return strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(12))
	}
	switch k {
	case 0:
		return appendSimpleString(dst, word())
	case 1:
		return AppendError(dst, "ERR "+word())
	case 2:
		return AppendInteger(dst, rng.Int64()-rng.Int64())
	case 3:
		return AppendBulkString(dst, word()+"\r\n"+word())
	case 4:
		return AppendNullBulk(dst)
	case 5:
		return AppendNull(dst)
	case 6:
		return appendBoolean(dst, rng.IntN(2) == 0)
	case 7:
		return AppendDouble(dst, rng.NormFloat64()*1e6)
	case 8:
		return appendBigNumber(dst, "-12345678901234567890123456789")
	case 9:
		return appendBulkError(dst, "SYNTAX "+word())
	case 10:
		return AppendVerbatim(dst, "txt", word())
	case 11:
		return AppendBulk(dst, bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(5000)))
	case 12:
		return appendNullArray(dst)
	}
	n := rng.IntN(5)
	switch k {
	case 13:
		dst = AppendArrayHeader(dst, n)
	case 14:
		dst = AppendMapHeader(dst, n)
		n *= 2
	case 15:
		dst = appendSetHeader(dst, n)
	case 16:
		dst = AppendPushHeader(dst, n)
	case 17:
		dst = appendAttributeHeader(dst, 1)
		dst = genReply(dst, rng, depth+1)
		dst = genReply(dst, rng, depth+1)
		return genReply(dst, rng, depth+1)
	}
	for range n {
		dst = genReply(dst, rng, depth+1)
	}
	return dst
}

// parseAll splits a stream into rendered replies with Parse.
func parseAll(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for len(b) > 0 {
		vals, n, err := Parse(nil, b, Limits{})
		require.NoError(t, err)
		out = append(out, render(vals))
		b = b[n:]
	}
	return out
}

func readAll(t *testing.T, r *Reader) []string {
	t.Helper()
	var out []string
	for {
		vals, err := r.ReadReply()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, render(vals))
	}
}

func TestReaderRandomChunks(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var stream []byte
	for _, tc := range parseOK {
		if tc.name != "only first reply" {
			stream = append(stream, tc.in...)
		}
	}
	for range 300 {
		stream = genReply(stream, rng, 0)
	}
	want := parseAll(t, stream)
	// One read.
	r := NewReader(bytes.NewReader(stream), len(stream)+1, Limits{})
	require.Equal(t, want, readAll(t, r))
	for _, k := range []int{1, 2, 3, 7, 64, 4096} {
		for _, size := range []int{0, 1, 16, 100} {
			r := NewReader(&chunkReader{data: stream, max: k, rng: rng}, size, Limits{})
			require.Equal(t, want, readAll(t, r), "chunks of 1..%d, size %d, seed %d", k, size, seed)
			assert.Zero(t, r.Buffered())
		}
	}
}

func TestReaderEOF(t *testing.T) {
	r := NewReader(strings.NewReader(""), 0, Limits{})
	_, err := r.ReadReply()
	assert.Equal(t, io.EOF, err)

	r = NewReader(strings.NewReader("+OK\r\n"), 0, Limits{})
	vals, err := r.ReadReply()
	require.NoError(t, err)
	assert.Equal(t, "+OK", render(vals))
	_, err = r.ReadReply()
	assert.Equal(t, io.EOF, err)
	_, err = r.ReadReply()
	assert.Equal(t, io.EOF, err)

	for _, in := range []string{"+OK", "+OK\r", "$5\r\nhel", "*2\r\n:1\r\n", "$536870912\r\n"} {
		r := NewReader(strings.NewReader(in), 0, Limits{})
		_, err := r.ReadReply()
		assert.Equal(t, io.ErrUnexpectedEOF, err, "%q", in)
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(&chunkReader{data: []byte("+OK\r\n:1"), max: 100, err: boom}, 0, Limits{})
	vals, err := r.ReadReply()
	require.NoError(t, err)
	assert.Equal(t, "+OK", render(vals))
	_, err = r.ReadReply()
	assert.Equal(t, boom, err)
	assert.Equal(t, 2, r.Buffered(), "bytes read before the error are kept")
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderNoProgress(t *testing.T) {
	r := NewReader(emptyReader{}, 0, Limits{})
	_, err := r.ReadReply()
	assert.Equal(t, io.ErrNoProgress, err)
}

type badCountReader struct{}

func (badCountReader) Read(p []byte) (int, error) { return len(p) + 1, nil }

func TestReaderBadCount(t *testing.T) {
	r := NewReader(badCountReader{}, 0, Limits{})
	_, err := r.ReadReply()
	assert.Error(t, err)
}

func TestReaderProtocolErrorSticky(t *testing.T) {
	r := NewReader(strings.NewReader("+OK\r\n:1\r\n?bad\r\n+OK\r\n"), 0, Limits{})
	for range 2 {
		_, err := r.ReadReply()
		require.NoError(t, err)
	}
	_, err := r.ReadReply()
	var pe *ProtocolError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 9, pe.Offset, "offset counts from the start of the stream")
	_, err2 := r.ReadReply()
	assert.Same(t, err, err2)

	r.Reset(strings.NewReader("+OK\r\n"))
	vals, err := r.ReadReply()
	require.NoError(t, err)
	assert.Equal(t, "+OK", render(vals))
}

func TestReaderHostileLength(t *testing.T) {
	// A huge declared bulk followed by a trickle must not reserve the
	// declared size: the buffer tracks the bytes that arrived.
	in := "$536870912\r\n" + strings.Repeat("x", 100000)
	r := NewReader(&chunkReader{data: []byte(in), max: 1000}, 0, Limits{})
	_, err := r.ReadReply()
	assert.Equal(t, io.ErrUnexpectedEOF, err)
	assert.LessOrEqual(t, len(r.buf), 2*len(in))

	r = NewReader(strings.NewReader("$536870913\r\n"), 0, Limits{})
	_, err = r.ReadReply()
	assert.ErrorIs(t, err, ErrProtocol)

	r = NewReader(strings.NewReader("*1\r\n$100\r\n"+strings.Repeat("y", 50)), 0, Limits{MaxReply: 64})
	_, err = r.ReadReply()
	assert.ErrorIs(t, err, ErrProtocol)
}

func TestReaderBufferPolicy(t *testing.T) {
	big := AppendBulk(nil, bytes.Repeat([]byte("z"), 1<<20))
	var stream []byte
	stream = append(stream, big...)
	stream = appendSimpleString(stream, "OK")
	stream = AppendInteger(stream, 1)
	r := NewReader(&chunkReader{data: stream, max: 8192}, 1024, Limits{})
	vals, err := r.ReadReply()
	require.NoError(t, err)
	assert.Len(t, vals[0].Bytes, 1<<20)
	assert.GreaterOrEqual(t, len(r.buf), 1<<20)
	vals, err = r.ReadReply()
	require.NoError(t, err)
	assert.Equal(t, "+OK", render(vals))
	assert.Equal(t, 1024, len(r.buf), "the oversized buffer is dropped at the next reply")
	vals, err = r.ReadReply()
	require.NoError(t, err)
	assert.Equal(t, ":1", render(vals))

	// Many values: the Value slice is dropped too.
	many := AppendArrayHeader(nil, 10000)
	for range 10000 {
		many = AppendInteger(many, 7)
	}
	many = AppendNull(many)
	r = NewReader(bytes.NewReader(many), 0, Limits{})
	vals, err = r.ReadReply()
	require.NoError(t, err)
	assert.Len(t, vals, 10001)
	_, err = r.ReadReply()
	require.NoError(t, err)
	assert.LessOrEqual(t, cap(r.p.vals), keepVals)
}

func TestReaderViewsValidUntilNextCall(t *testing.T) {
	r := NewReader(strings.NewReader("$3\r\nabc\r\n$3\r\ndef\r\n"), 4, Limits{})
	a, err := r.ReadReply()
	require.NoError(t, err)
	assert.Equal(t, "abc", string(a[0].Bytes))
	assert.Equal(t, len(a[0].Bytes), cap(a[0].Bytes))
	b, err := r.ReadReply()
	require.NoError(t, err)
	assert.Equal(t, "def", string(b[0].Bytes))
}

func TestReaderBuffered(t *testing.T) {
	r := NewReader(strings.NewReader("+OK\r\n:1\r\n"), 0, Limits{})
	_, err := r.ReadReply()
	require.NoError(t, err)
	assert.Equal(t, 4, r.Buffered())
	r.Reset(strings.NewReader(""))
	assert.Zero(t, r.Buffered())
	_, err = r.ReadReply()
	assert.Equal(t, io.EOF, err)
}

func TestReaderEOFAfterInvalidBytes(t *testing.T) {
	// The payload's terminator is wrong, and the stream ends before the
	// length the header asked for: the error is the protocol error, as
	// Parse reports on the same bytes.
	r := NewReader(strings.NewReader("%0\r\n!1\r\n00"), 0, Limits{})
	_, err := r.ReadReply()
	require.NoError(t, err)
	_, err = r.ReadReply()
	var pe *ProtocolError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 9, pe.Offset)
}
