package main

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// The floor's commands, RESP2 arrays of bulk strings appended to a
// caller's buffer (no allocation once the buffer has grown to fit), and
// its lock tokens.

// appendFloorSet appends SET key token NX PX ttl (in milliseconds).
func appendFloorSet(dst, key, token []byte, ttl time.Duration) []byte {
	dst = append(dst, "*6\r\n$3\r\nSET\r\n"...)
	dst = appendFloorBulk(dst, key)
	dst = appendFloorBulk(dst, token)
	dst = append(dst, "$2\r\nNX\r\n$2\r\nPX\r\n"...)
	var num [20]byte
	return appendFloorBulk(dst, strconv.AppendInt(num[:0], ttl.Milliseconds(), 10))
}

// appendFloorUnlock appends EVALSHA sha 1 key token: the release script
// (floorUnlockScript, loaded under sha).
func appendFloorUnlock(dst []byte, sha string, key, token []byte) []byte {
	dst = append(dst, "*5\r\n$7\r\nEVALSHA\r\n$"...)
	dst = strconv.AppendInt(dst, int64(len(sha)), 10)
	dst = append(dst, "\r\n"...)
	dst = append(dst, sha...)
	dst = append(dst, "\r\n$1\r\n1\r\n"...)
	dst = appendFloorBulk(dst, key)
	return appendFloorBulk(dst, token)
}

// appendFloorScriptLoad appends SCRIPT LOAD floorUnlockScript.
func appendFloorScriptLoad(dst []byte) []byte {
	dst = append(dst, "*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n$"...)
	dst = strconv.AppendInt(dst, int64(len(floorUnlockScript)), 10)
	dst = append(dst, "\r\n"...)
	dst = append(dst, floorUnlockScript...)
	return append(dst, "\r\n"...)
}

// floorScriptSHA is the SHA1 of floorUnlockScript in lowercase hex, what
// SCRIPT LOAD answers and EVALSHA takes.
func floorScriptSHA() string {
	sum := sha1.Sum([]byte(floorUnlockScript))
	return hex.EncodeToString(sum[:])
}

// appendFloorBulk appends b as a RESP bulk string.
func appendFloorBulk(dst, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, "\r\n"...)
	dst = append(dst, b...)
	return append(dst, "\r\n"...)
}

// floorTokenLen is the length of a token: 32 hex digits.
const floorTokenLen = 32

// floorTokens numbers the lock tokens of one floor: 16 hex digits of a
// prefix drawn from crypto/rand when it is made, then 16 of a counter. Two
// tokens of one floorTokens never repeat (short of 2^64 of them); tokens of
// two floors, in one process or two, differ unless their 64-bit random
// prefixes collide. It is safe for concurrent use.
type floorTokens struct {
	prefix [16]byte
	n      atomic.Uint64
}

func newFloorTokens() (*floorTokens, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, fmt.Errorf("lockbench: floor: token prefix: %w", err)
	}
	t := &floorTokens{}
	hex.Encode(t.prefix[:], r[:])
	return t, nil
}

// next reserves k consecutive token numbers and returns the first.
func (t *floorTokens) next(k int) uint64 { return t.n.Add(uint64(k)) - uint64(k) }

// put writes token number n into dst.
func (t *floorTokens) put(dst *[floorTokenLen]byte, n uint64) {
	const digits = "0123456789abcdef"
	copy(dst[:16], t.prefix[:])
	for i := floorTokenLen - 1; i >= 16; i-- {
		dst[i] = digits[n&15]
		n >>= 4
	}
}
