package main

import (
	"bytes"
	"errors"
)

// The floor's RESP2 reply parser: the five replies its commands get
// (simple string, error, integer, bulk string, null bulk string), parsed in
// place over a connection's read buffer. Every length on the wire is
// checked: -1 is the only negative bulk length, and lines and bulk strings
// longer than the floor's commands ever get are protocol errors, so that a
// complete reply always fits the read buffer (floorReadBuf).

var (
	// errFloorIncomplete: the bytes hold only a prefix of a reply; read
	// more and parse again from the same offset.
	errFloorIncomplete = errors.New("lockbench: floor: incomplete reply")
	// errFloorProtocol: the bytes are not a reply the floor accepts; the
	// connection is unusable.
	errFloorProtocol = errors.New("lockbench: floor: protocol error")
)

const (
	// floorMaxLine bounds a simple string, error or integer line, and a
	// bulk string's body, in bytes (a token is 32, an error line < 200).
	floorMaxLine = 1024
	// floorReadBuf is a connection's read buffer: room for the longest
	// reply (a bulk string of floorMaxLine bytes) and more.
	floorReadBuf = 4096
)

// floorReply is one reply: its type byte ('+', '-', ':' or '$'), its
// payload (the line after the type byte, or the bulk string's body) and,
// for a null bulk string, null. Data aliases the parsed bytes: it is valid
// until the caller's buffer changes.
type floorReply struct {
	kind byte
	data []byte
	null bool
}

// floorWant is the reply that counts as a success for a command: its type
// byte and payload.
type floorWant struct {
	kind byte
	data string
}

var (
	floorOK  = floorWant{'+', "OK"} // SET NX: acquired
	floorOne = floorWant{':', "1"}  // the release script: deleted
	// floorDone is either, for a batch that mixes SETs and releases: a SET
	// never answers :1, nor the release +OK.
	floorDone = floorWant{}
)

// matches reports whether r is the wanted reply.
func (w floorWant) matches(r floorReply) bool {
	if w == floorDone {
		return floorOK.matches(r) || floorOne.matches(r)
	}
	return r.kind == w.kind && !r.null && string(r.data) == w.data
}

// parseFloorReply parses the reply at the start of b and returns it and
// its length in bytes, errFloorIncomplete when b holds only a prefix of a
// reply (an empty b included), or errFloorProtocol.
func parseFloorReply(b []byte) (floorReply, int, error) {
	line, n, err := floorLine(b)
	if err != nil {
		return floorReply{}, 0, err
	}
	r := floorReply{kind: line[0], data: line[1:]}
	switch r.kind {
	case '+', '-':
		return r, n, nil
	case ':':
		if _, ok := floorInt(r.data); !ok {
			return floorReply{}, 0, errFloorProtocol
		}
		return r, n, nil
	case '$':
		size, ok := floorInt(r.data)
		switch {
		case !ok || size < -1 || size > floorMaxLine:
			return floorReply{}, 0, errFloorProtocol
		case size == -1:
			return floorReply{kind: '$', null: true}, n, nil
		}
		end := n + int(size)
		if len(b) < end+2 {
			return floorReply{}, 0, errFloorIncomplete
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return floorReply{}, 0, errFloorProtocol
		}
		r.data = b[n:end]
		return r, end + 2, nil
	}
	return floorReply{}, 0, errFloorProtocol
}

// floorLine returns the first line of b without its CRLF, and the line's
// length with it. The line holds at least the type byte.
func floorLine(b []byte) ([]byte, int, error) {
	i := bytes.IndexByte(b, '\n')
	switch {
	case i < 0 && len(b) > floorMaxLine+1:
		return nil, 0, errFloorProtocol
	case i < 0:
		return nil, 0, errFloorIncomplete
	case i < 2 || b[i-1] != '\r' || i > floorMaxLine+1:
		return nil, 0, errFloorProtocol
	}
	return b[:i-1], i + 1, nil
}

// floorInt parses a decimal integer with an optional minus sign and at
// most 18 digits, so that it cannot overflow an int64.
func floorInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}
