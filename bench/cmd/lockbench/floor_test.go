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
		{Name: nameVolley, Latency: Latency{P50: 0.104, P99: 0.5}},
		{Name: nameFloor, Latency: Latency{P50: 0.1, P99: 0.2}},
	}}
	got := map[string]Target{}
	for _, tg := range evaluateTargets(rep) {
		got[tg.Goal] = tg
	}
	p50 := got["Lock+Unlock latency, 1 goroutine, p50 <= 1.05x floor p50"]
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

// TestFloorBlockingTargets: the goals against floor-blocking are met or
// not from the figures of the same load, and a figure that was not
// measured (the masters' CPU, a row without timed operations) leaves its
// goal unmeasured, never met.
func TestFloorBlockingTargets(t *testing.T) {
	row := func(name string, g int, ops, cpu, masters, p99, calls float64) ThroughputResult {
		return ThroughputResult{Name: name, Goroutines: g, OpsPerSec: ops,
			Cost:    OpCost{CPUUs: cpu, MasterCPUUs: masters, IOCalls: calls},
			Latency: Latency{N: 100, P99: p99}}
	}
	rep := &Report{Throughput: []ThroughputResult{
		row(nameVolley, 16, 20000, 21, 10, 1, 3),
		row(nameFloorBlocking, 16, 20000, 20, 10, 1, 3),
		row(nameVolley, 64, 45000, 12, 11, 2, 1),
		row(nameFloorBlocking, 64, 50000, 8, 10, 2, 1),
		row(nameVolley, 256, 70000, 5, -1, 7, 0.5),
		row(nameFloorBlocking, 256, 80000, 4, 10, 5, 0.4),
	}}
	got := map[string]Target{}
	for _, tg := range evaluateTargets(rep) {
		got[tg.Goal] = tg
	}
	for goal, want := range map[string]struct {
		measured, met bool
		figure        string
	}{
		"client CPU per Lock+Unlock G=16 <= 1.05x floor-blocking":   {true, true, "21.00 vs 20.00 us = 1.05x"},
		"client CPU per Lock+Unlock G=64 <= 1.15x floor-blocking":   {true, false, "12.00 vs 8.00 us = 1.50x"},
		"client CPU per Lock+Unlock G=256 <= 1.25x floor-blocking":  {true, true, "5.00 vs 4.00 us = 1.25x"},
		"throughput G=64 >= 0.9x floor-blocking":                    {true, true, "45000 vs 50000 ops/s = 0.90x"},
		"throughput G=256 >= 0.9x floor-blocking":                   {true, false, "70000 vs 80000 ops/s = 0.88x"},
		"latency p99 at G=256 <= 1.2x floor-blocking":               {true, false, "7.000ms vs 5.000ms = 1.40x"},
		"masters' CPU per Lock+Unlock G=64 <= 1.2x floor-blocking":  {true, true, "11.00 vs 10.00 us = 1.10x"},
		"masters' CPU per Lock+Unlock G=256 <= 1.2x floor-blocking": {false, false, "not measured"},
		"reads+writes per Lock+Unlock G=256 <= floor-blocking":      {true, false, "0.50 vs 0.40 calls = 1.25x"},
	} {
		tg, ok := got[goal]
		require.True(t, ok, "no goal %q", goal)
		assert.Equal(t, want.measured, tg.Measured, goal)
		assert.Equal(t, want.met, tg.Met, goal)
		assert.Equal(t, want.figure, tg.Figure, goal)
	}

	// Volley's row without timed operations: its p99 is not a figure.
	rep.throughput(nameVolley, 256).Latency.N = 0
	for _, tg := range evaluateTargets(rep) {
		if tg.Goal == "latency p99 at G=256 <= 1.2x floor-blocking" {
			assert.False(t, tg.Measured, tg.Figure)
		}
	}
}
