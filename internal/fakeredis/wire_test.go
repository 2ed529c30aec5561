package fakeredis

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testConn is a raw RESP connection for tests: it sends commands and reads
// whole reply frames as bytes, so replies can be compared byte for byte.
type testConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

// dial connects to addr; the connection is closed when the test ends.
func dial(t testing.TB, addr string) *testConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &testConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// encodeCommand encodes args as a RESP array of bulk strings.
func encodeCommand(dst []byte, args ...string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// write sends raw bytes.
func (c *testConn) write(b []byte) {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, err := c.nc.Write(b)
	require.NoError(c.t, err)
}

// send sends one command without reading its reply.
func (c *testConn) send(args ...string) { c.t.Helper(); c.write(encodeCommand(nil, args...)) }

// read reads one reply frame within 10 seconds and returns its bytes.
func (c *testConn) read() string {
	c.t.Helper()
	b, err := c.readWithin(10 * time.Second)
	require.NoError(c.t, err)
	return b
}

// readWithin reads one reply frame, failing after d.
func (c *testConn) readWithin(d time.Duration) (string, error) { return c.readFrames(1, d) }

// readFrames reads n frames, failing after d, and returns them as one
// string.
func (c *testConn) readFrames(n int, d time.Duration) (string, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	var b []byte
	var err error
	for range n {
		if b, err = readFrame(b, c.br); err != nil {
			break
		}
	}
	return string(b), err
}

// do sends one command and returns its reply frame.
func (c *testConn) do(args ...string) string {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

// readAll reads until EOF (or an error) and returns what it read.
func (c *testConn) readAll() (string, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return "", err
	}
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.br.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return string(got), err
		}
	}
}

var errFrame = errors.New("malformed frame")

// readFrame appends one whole RESP2 or RESP3 frame, nested ones included,
// to dst. It trusts lengths: it reads only from the servers under test.
func readFrame(dst []byte, br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return dst, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return dst, errFrame
	}
	dst = append(dst, line...)
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return dst, nil
	}
	n, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil {
		return dst, errFrame
	}
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return dst, nil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(br, body); err != nil {
			return dst, err
		}
		return append(dst, body...), nil
	case '%', '|':
		n *= 2
	case '*', '~', '>':
	default:
		return dst, errFrame
	}
	for i := 0; i < n; i++ {
		if dst, err = readFrame(dst, br); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// bulk returns the RESP2 bulk-string frame of s.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
