package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// floorFrames are replies of every kind the floor parses, with what they
// parse to.
var floorFrames = []struct {
	wire string
	want floorReply
}{
	{"+OK\r\n", floorReply{kind: '+', data: []byte("OK")}},
	{"$-1\r\n", floorReply{kind: '$', null: true}},
	{":1\r\n", floorReply{kind: ':', data: []byte("1")}},
	{":-42\r\n", floorReply{kind: ':', data: []byte("-42")}},
	{"-NOSCRIPT No matching script. Please use EVAL.\r\n", floorReply{kind: '-', data: []byte("NOSCRIPT No matching script. Please use EVAL.")}},
	{"$32\r\n0123456789abcdef0123456789abcdef\r\n", floorReply{kind: '$', data: []byte("0123456789abcdef0123456789abcdef")}},
	{"$0\r\n\r\n", floorReply{kind: '$', data: []byte{}}},
	{"$4\r\na\r\nb\r\n", floorReply{kind: '$', data: []byte("a\r\nb")}},
	{"+\r\n", floorReply{kind: '+', data: []byte{}}},
}

// TestFloorReplyPrefixes: every strict prefix of a reply is incomplete,
// never a reply or an error; the whole parses to the reply, its length
// exactly.
func TestFloorReplyPrefixes(t *testing.T) {
	for _, f := range floorFrames {
		for i := range len(f.wire) {
			_, _, err := parseFloorReply([]byte(f.wire[:i]))
			require.ErrorIs(t, err, errFloorIncomplete, "%q[:%d]", f.wire, i)
		}
		r, n, err := parseFloorReply([]byte(f.wire + "+next\r\n"))
		require.NoError(t, err, f.wire)
		assert.Equal(t, len(f.wire), n, f.wire)
		assert.Equal(t, f.want, r, f.wire)
	}
}

// TestFloorReplyByteByByte: a stream of replies fed one byte at a time into
// a buffer parsed as floorConn.parse does (parse every complete reply,
// keep the rest) yields every reply, in order.
func TestFloorReplyByteByByte(t *testing.T) {
	var stream string
	for _, f := range floorFrames {
		stream += f.wire
	}
	var buf []byte
	var got []floorReply
	for i := range len(stream) {
		buf = append(buf, stream[i])
		for len(buf) > 0 {
			r, n, err := parseFloorReply(buf)
			if err == errFloorIncomplete {
				break
			}
			require.NoError(t, err, "at byte %d", i)
			r.data = append([]byte(nil), r.data...) // a view into buf
			if r.data == nil && !r.null {
				r.data = []byte{}
			}
			got = append(got, r)
			buf = buf[n:]
		}
	}
	require.Empty(t, buf)
	require.Len(t, got, len(floorFrames))
	for i, f := range floorFrames {
		assert.Equal(t, f.want, got[i], f.wire)
	}
}

// TestFloorReplyHostile: what the floor refuses, complete or not.
func TestFloorReplyHostile(t *testing.T) {
	for _, wire := range []string{
		"$-2\r\n",                     // the only negative length is -1
		"$1025\r\n",                   // longer than any reply the floor gets
		"$99999999999999999999\r\n",   // would overflow
		":1234567890123456789\r\n",    // 19 digits: refused, not wrapped
		":12a\r\n", ":\r\n", ":-\r\n", // not integers
		"$2\r\nabXY",            // bulk body not followed by CRLF
		"*1\r\n:1\r\n", "_\r\n", // arrays and RESP3: not the floor's
		"+OK\n", "\r\n", "\n", // no CR, no type byte
		"+" + strings.Repeat("x", 2000), // a line longer than floorMaxLine, unfinished
	} {
		_, _, err := parseFloorReply([]byte(wire))
		assert.ErrorIs(t, err, errFloorProtocol, "%q", wire)
	}
}

// TestFloorCommands: the encoders write what redis-cli would send.
func TestFloorCommands(t *testing.T) {
	tok := []byte("0123456789abcdef0123456789abcdef")
	assert.Equal(t, "*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$32\r\n"+string(tok)+"\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n10000\r\n",
		string(appendFloorSet(nil, []byte("k"), tok, 10*time.Second)))
	sha := floorScriptSHA()
	require.Len(t, sha, 40)
	assert.Equal(t, "*5\r\n$7\r\nEVALSHA\r\n$40\r\n"+sha+"\r\n$1\r\n1\r\n$2\r\nkk\r\n$32\r\n"+string(tok)+"\r\n",
		string(appendFloorUnlock([]byte("x"), sha, []byte("kk"), tok))[1:])

	tokens, err := newFloorTokens()
	require.NoError(t, err)
	var a, b [floorTokenLen]byte
	tokens.put(&a, tokens.next(1))
	tokens.put(&b, tokens.next(1))
	assert.NotEqual(t, a, b)
	assert.Equal(t, a[:16], b[:16], "one prefix per floor")
	assert.Equal(t, "0000000000000000", string(a[16:]))
	assert.Equal(t, "0000000000000001", string(b[16:]))
}

// TestFloorTargets: Volley's distance to the floor is a target, met or not
// from the figures.
func TestFloorTargets(t *testing.T) {
	rep := &Report{Latency: []LatencyResult{
		{Name: nameVolley, Latency: Latency{P50: 0.105, P99: 0.5}},
		{Name: nameFloor, Latency: Latency{P50: 0.1, P99: 0.2}},
	}}
	got := map[string]Target{}
	for _, tg := range evaluateTargets(rep) {
		got[tg.Goal] = tg
	}
	p50 := got["Lock+Unlock latency, 1 goroutine, p50 <= 1.1x floor p50"]
	p99 := got["Lock+Unlock latency, 1 goroutine, p99 <= 1.2x floor p99"]
	assert.True(t, p50.Measured && p50.Met, p50.Figure)
	assert.True(t, p99.Measured && !p99.Met, p99.Figure)
	assert.Equal(t, "0.500ms vs 0.200ms = 2.50x", p99.Figure)

	rep.Latency = rep.Latency[:1] // no floor: not measured
	for _, tg := range evaluateTargets(rep) {
		if strings.Contains(tg.Goal, "x floor") {
			assert.False(t, tg.Measured, tg.Goal)
		}
	}
}
