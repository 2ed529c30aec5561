package fuzz

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/volleylock/volley/resp"
)

// respSmallLimits makes the limit checks reachable by small inputs.
var respSmallLimits = resp.Limits{MaxBulk: 16, MaxElems: 4, MaxDepth: 3, MaxLine: 16, MaxValues: 20, MaxReply: 64}

// respSeeds adds the replies captured from redis-server and a few
// hand-written edge cases to the corpus.
func respSeeds(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("..", "resp", "testdata", "*.resp"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in resp/testdata: %v", err)
	}
	var seeds [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, s := range []string{
		"+OK\r\n", "$-1\r\n", "*-1\r\n", "_\r\n", ":-9223372036854775808\r\n",
		",inf\r\n", ",-1.5e-10\r\n", "#f\r\n", "(123\r\n", "!3\r\nERR\r\n",
		"=5\r\ntxt:a\r\n", "%1\r\n+k\r\n:1\r\n", "~1\r\n_\r\n", ">1\r\n+x\r\n",
		"|1\r\n+a\r\n+b\r\n:1\r\n", "*2\r\n|0\r\n:1\r\n*0\r\n",
		"$536870912\r\n", ":99999999999999999999\r\n", "+a\rb\r\n",
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// respCheckTree verifies that Size and Int describe a consistent tree.
func respCheckTree(t *testing.T, vals []resp.Value) {
	t.Helper()
	var walk func(i int) int
	walk = func(i int) int {
		v := &vals[i]
		if !v.Type.IsAggregate() || v.Null {
			if v.Size != 0 {
				t.Fatalf("scalar %d has Size %d", i, v.Size)
			}
			return i + 1
		}
		end := i + 1 + v.Size
		if v.Size < 0 || end > len(vals) {
			t.Fatalf("value %d: Size %d out of range", i, v.Size)
		}
		kids := 0
		for j := i + 1; j < end; {
			if vals[j].Type != resp.TypeAttribute {
				kids++
			}
			j = walk(j)
			if j > end {
				t.Fatalf("child of %d overruns its subtree", i)
			}
		}
		want := v.Int
		if v.Type == resp.TypeMap || v.Type == resp.TypeAttribute {
			want *= 2
		}
		if int64(kids) != want {
			t.Fatalf("value %d: %d children, want %d", i, kids, want)
		}
		return end
	}
	i := 0
	for i < len(vals) {
		last := vals[i].Type != resp.TypeAttribute
		i = walk(i)
		if last && i != len(vals) {
			t.Fatalf("values after the reply's value: %d of %d", i, len(vals))
		}
	}
}

func respCheckErr(t *testing.T, err error, inLen int) {
	t.Helper()
	if err == resp.ErrIncomplete {
		return
	}
	var pe *resp.ProtocolError
	if !errors.As(err, &pe) || !errors.Is(err, resp.ErrProtocol) {
		t.Fatalf("unexpected error type %T: %v", err, err)
	}
	if pe.Offset < 0 || pe.Offset > inLen {
		t.Fatalf("offset %d outside the input of %d bytes", pe.Offset, inLen)
	}
}

// FuzzParse: Parse never panics, reports n within bounds, returns a
// consistent tree, and only the two documented kinds of error.
func FuzzParse(f *testing.F) {
	for _, s := range respSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lim := range []resp.Limits{{}, respSmallLimits} {
			vals, n, err := resp.Parse(nil, data, lim)
			if err != nil {
				respCheckErr(t, err, len(data))
				if n != 0 || len(vals) != 0 {
					t.Fatalf("error %v with n=%d, %d values", err, n, len(vals))
				}
				continue
			}
			if n <= 0 || n > len(data) || len(vals) == 0 {
				t.Fatalf("n=%d of %d bytes, %d values", n, len(data), len(vals))
			}
			respCheckTree(t, vals)
			for i := range vals {
				_ = vals[i].Err()
				_, _ = vals[i].Verbatim()
			}
		}
	})
}

// FuzzPrefixIncomplete: every strict prefix of a reply Parse accepts is
// ErrIncomplete, never a value nor a protocol error.
func FuzzPrefixIncomplete(f *testing.F) {
	for _, s := range respSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lim := range []resp.Limits{{}, respSmallLimits} {
			_, n, err := resp.Parse(nil, data, lim)
			if err != nil {
				continue
			}
			for i := range min(n, 4096) {
				_, m, err := resp.Parse(nil, data[:i], lim)
				if err != resp.ErrIncomplete || m != 0 {
					t.Fatalf("prefix of %d/%d bytes: n=%d err=%v", i, n, m, err)
				}
			}
		}
	})
}

// FuzzRoundTrip: for every reply Parse accepts (the canonical ones),
// encode(decode(x)) == x, and decoding the encoding gives the same Values.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range respSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		vals, n, err := resp.Parse(nil, data, resp.Limits{})
		if err != nil {
			return
		}
		enc := resp.AppendValues(nil, vals)
		if !bytes.Equal(enc, data[:n]) {
			t.Fatalf("round trip:\n in %q\nout %q", data[:n], enc)
		}
		again, m, err := resp.Parse(nil, enc, resp.Limits{})
		if err != nil || m != len(enc) {
			t.Fatalf("re-parse: n=%d err=%v", m, err)
		}
		respSameValues(t, vals, again)
	})
}

func respSameValues(t *testing.T, a, b []resp.Value) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d values vs %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Null != y.Null || x.Int != y.Int || x.Size != y.Size ||
			math.Float64bits(x.Float) != math.Float64bits(y.Float) && !(math.IsNaN(x.Float) && math.IsNaN(y.Float)) ||
			!bytes.Equal(x.Bytes, y.Bytes) || (x.Bytes == nil) != (y.Bytes == nil) {
			t.Fatalf("value %d differs: %+v vs %+v", i, x, y)
		}
	}
}

// respChunks returns its data in random pieces of 1..max bytes.
type respChunks struct {
	data []byte
	max  int
	rng  *rand.Rand
}

func (c *respChunks) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(1+c.rng.IntN(c.max), len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FuzzReaderAgrees: the streaming Reader, fed in random chunks through a
// small buffer, returns the same replies and the same final error as Parse
// applied to the whole stream.
func FuzzReaderAgrees(f *testing.F) {
	seeds := respSeeds(f)
	for i, s := range seeds {
		f.Add(s, uint64(i), uint8(i))
		f.Add(bytes.Repeat(s, 3), uint64(i), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, k uint8) {
		for _, lim := range []resp.Limits{{}, respSmallLimits} {
			rng := rand.New(rand.NewPCG(seed, uint64(k)))
			r := resp.NewReader(&respChunks{data: data, max: 1 + int(k), rng: rng}, 1+int(k%32), lim)
			rest, off := data, 0
			for {
				want, n, perr := resp.Parse(nil, rest, lim)
				got, rerr := r.ReadReply()
				if perr == nil {
					if rerr != nil {
						t.Fatalf("at %d: Parse ok, Reader %v", off, rerr)
					}
					respSameValues(t, want, got)
					rest, off = rest[n:], off+n
					if r.Buffered() > len(rest) {
						t.Fatalf("Buffered %d > %d bytes left", r.Buffered(), len(rest))
					}
					continue
				}
				switch {
				case perr == resp.ErrIncomplete && len(rest) == 0:
					if rerr != io.EOF {
						t.Fatalf("at clean end: Reader %v", rerr)
					}
				case perr == resp.ErrIncomplete:
					if rerr != io.ErrUnexpectedEOF {
						t.Fatalf("at %d: Parse incomplete, Reader %v", off, rerr)
					}
				default:
					var pe, re *resp.ProtocolError
					if !errors.As(perr, &pe) || !errors.As(rerr, &re) ||
						re.Offset != off+pe.Offset || re.Reason != pe.Reason {
						t.Fatalf("at %d: Parse %v, Reader %v", off, perr, rerr)
					}
				}
				break
			}
		}
	})
}
