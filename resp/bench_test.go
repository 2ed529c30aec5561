package resp

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

var benchReplies = []struct{ name, in string }{
	{"OK", "+OK\r\n"},
	{"NullBulk", "$-1\r\n"},
	{"Int", ":1\r\n"},
	{"NOSCRIPT", "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
	{"Bulk64", string(AppendBulk(nil, bytes.Repeat([]byte("v"), 64)))},
	{"Bulk16K", string(AppendBulk(nil, bytes.Repeat([]byte("v"), 16<<10)))},
	{"NestedArray", "*4\r\n:1\r\n$3\r\ntwo\r\n*3\r\n:3\r\n$4\r\nfour\r\n*0\r\n+FINE\r\n"},
	{"Map", "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:3\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"},
	{"Double", ",3.141592653589793\r\n"},
}

func BenchmarkParse(b *testing.B) {
	for _, bc := range benchReplies {
		b.Run(bc.name, func(b *testing.B) {
			in := []byte(bc.in)
			dst := make([]Value, 0, 32)
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				var err error
				dst, _, err = Parse(dst[:0], in, Limits{})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadReply reads a stream that repeats one reply, many replies per
// Read as in a pipelined connection.
func BenchmarkReadReply(b *testing.B) {
	for _, bc := range benchReplies {
		b.Run(bc.name, func(b *testing.B) {
			r := NewReader(&benchLoop{data: bytes.Repeat([]byte(bc.in), 64)}, 0, Limits{})
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				if _, err := r.ReadReply(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadReplyChunked reads random mixed replies arriving in small
// random chunks, the worst case for the resumable parser.
func BenchmarkReadReplyChunked(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var stream []byte
	n := 0
	for ; n < 1000; n++ {
		stream = genReply(stream, rng, 0)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	var c chunkReader
	r := NewReader(&c, 0, Limits{})
	for b.Loop() {
		c = chunkReader{data: stream, max: 512, rng: rng}
		r.Reset(&c)
		for range n {
			if _, err := r.ReadReply(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

type benchLoop struct {
	data []byte
	off  int
}

func (l *benchLoop) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

func BenchmarkAppendCommand(b *testing.B) {
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendCommand(dst[:0], "SET", "lock:resource", "0123456789abcdef0123456789abcdef", "NX", "PX", "30000")
	}
	b.SetBytes(int64(len(dst)))
}

func BenchmarkAppendBulkInt(b *testing.B) {
	dst := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendBulkInt(dst[:0], 30000)
	}
	b.SetBytes(int64(len(dst)))
}
