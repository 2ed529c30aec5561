package bench

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/tidwall/redcon"
	"github.com/volleylock/volley/resp"
)

// The replies a Redlock client reads: SET NX's +OK and null, the release
// script's :1, EVALSHA's NOSCRIPT error, and a nested array for the
// aggregate path.
var codecCases = []struct {
	name string
	wire string
}{
	{"OK", "+OK\r\n"},
	{"NullBulk", "$-1\r\n"},
	{"Integer", ":1\r\n"},
	{"NOSCRIPT", "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
	{"NestedArray", "*3\r\n*2\r\n$3\r\nfoo\r\n:42\r\n*2\r\n$5\r\nhello\r\n+OK\r\n$6\r\nfoobar\r\n"},
}

// loopReader returns its frame over and over, as a socket full of
// identical replies would.
type loopReader struct {
	frame []byte
	off   int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.frame[l.off:])
		n += c
		l.off = (l.off + c) % len(l.frame)
	}
	return n, nil
}

// loopConn is a net.Conn whose reads are a loopReader and whose writes
// vanish: redigo's Conn reads from it.
type loopConn struct{ loopReader }

func (*loopConn) Write(p []byte) (int, error)      { return len(p), nil }
func (*loopConn) Close() error                     { return nil }
func (*loopConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (*loopConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (*loopConn) SetDeadline(time.Time) error      { return nil }
func (*loopConn) SetReadDeadline(time.Time) error  { return nil }
func (*loopConn) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkDecode decodes one reply per operation.
//
//   - volley-Parse: resp.Parse over a byte slice, a full flat tree of
//     Values (zero-copy), into a reused slice.
//   - volley-Reader: resp.Reader.ReadReply over a stream of the reply,
//     buffer refills included.
//   - redcon-ReadNextRESP: redcon's slice parser; it walks an array to find
//     its end but builds no tree (children need RESP.ForEach), and it
//     cannot tell an incomplete reply from an invalid one.
//   - rueidis-readNextMessage, goredis-ReadReply: the stream decoders of
//     rueidis and go-redis, each over a bufio.Reader as their clients use
//     them, reached by linkname (peers_linkname_test.go).
//   - redigo-Receive: redigo's Conn.Receive over an in-memory net.Conn:
//     its bufio reader plus conversion to interface{} values (allocating),
//     as a redigo user gets them.
//
// The stream decoders (volley-Reader, rueidis, go-redis, redigo) refill
// their buffers from the same loopReader; the slice decoders (volley-Parse,
// redcon) read a byte slice.
func BenchmarkDecode(b *testing.B) {
	for _, tc := range codecCases {
		wire := []byte(tc.wire)
		b.Run(tc.name+"/volley-Parse", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			vals := make([]resp.Value, 0, 16)
			for b.Loop() {
				var err error
				vals, _, err = resp.Parse(vals[:0], wire, resp.Limits{})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/volley-Reader", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			rd := resp.NewReader(&loopReader{frame: wire}, 0, resp.Limits{})
			for b.Loop() {
				if _, err := rd.ReadReply(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/redcon-ReadNextRESP", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				if n, _ := redcon.ReadNextRESP(wire); n != len(wire) {
					b.Fatalf("read %d of %d bytes", n, len(wire))
				}
			}
		})
		b.Run(tc.name+"/rueidis-readNextMessage", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			br := bufio.NewReader(&loopReader{frame: wire})
			for b.Loop() {
				if _, err := rueidisReadNextMessage(br); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/goredis-ReadReply", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			r := goredisNewReader(&loopReader{frame: wire})
			for b.Loop() {
				if _, err := goredisReadReply(r); err != nil && !isGoredisServerError(err) {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/redigo-Receive", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			c := redigo.NewConn(&loopConn{loopReader{frame: wire}}, 0, 0)
			defer c.Close()
			for b.Loop() {
				if _, err := c.Receive(); err != nil && !isServerError(err) {
					b.Fatal(err)
				}
			}
		})
	}
}

// isGoredisServerError reports whether err is go-redis's error for an
// error reply (proto.RedisError, a string type), as opposed to a failure.
func isGoredisServerError(err error) bool {
	return reflect.TypeOf(err).Kind() == reflect.String
}

func isServerError(err error) bool {
	_, ok := err.(redigo.Error)
	return ok
}

// TestDecodersAgree checks that every decoder of BenchmarkDecode reads each
// case whole, so that the benchmark compares like with like.
func TestDecodersAgree(t *testing.T) {
	for _, tc := range codecCases {
		wire := []byte(tc.wire)
		_, n, err := resp.Parse(nil, wire, resp.Limits{})
		if err != nil || n != len(wire) {
			t.Errorf("%s: resp.Parse: n=%d err=%v", tc.name, n, err)
		}
		if n, _ := redcon.ReadNextRESP(wire); n != len(wire) {
			t.Errorf("%s: redcon: n=%d", tc.name, n)
		}
		// Two replies back to back: the Reader must return the first whole.
		rd := resp.NewReader(io.MultiReader(bytes.NewReader(wire), bytes.NewReader(wire)), 0, resp.Limits{})
		for i := 0; i < 2; i++ {
			if _, err := rd.ReadReply(); err != nil {
				t.Errorf("%s: Reader reply %d: %v", tc.name, i, err)
			}
		}
		c := redigo.NewConn(&loopConn{loopReader{frame: wire}}, 0, 0)
		if _, err := c.Receive(); err != nil && !isServerError(err) {
			t.Errorf("%s: redigo: %v", tc.name, err)
		}
		// The peers reached by linkname: each must consume exactly one
		// reply, so the second read starts at the second copy.
		twice := bytes.Repeat(wire, 2)
		br := bufio.NewReader(bytes.NewReader(twice))
		for i := 0; i < 2; i++ {
			m, err := rueidisReadNextMessage(br)
			if err != nil {
				t.Errorf("%s: rueidis reply %d: %v", tc.name, i, err)
			}
			if tc.name == "NOSCRIPT" && m.Error() == nil {
				t.Errorf("%s: rueidis did not see an error reply", tc.name)
			}
		}
		if br.Buffered() != 0 {
			t.Errorf("%s: rueidis left %d bytes", tc.name, br.Buffered())
		}
		gr := goredisNewReader(bytes.NewReader(twice))
		for i := 0; i < 2; i++ {
			v, err := goredisReadReply(gr)
			if err != nil && !isGoredisServerError(err) {
				t.Errorf("%s: go-redis reply %d: %v", tc.name, i, err)
			}
			if tc.name == "NOSCRIPT" && err == nil {
				t.Errorf("%s: go-redis did not see an error reply (%v)", tc.name, v)
			}
		}
		if _, err := goredisReadReply(gr); err != io.EOF {
			t.Errorf("%s: go-redis after two replies: %v, want EOF", tc.name, err)
		}
	}
}
