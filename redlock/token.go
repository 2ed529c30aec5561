package redlock

import (
	crand "crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"math/rand/v2"
	"sync"
)

// tokenBytes is the entropy of a lock token: 128 bits, sent as 32 hex
// characters so that it reads cleanly in redis-cli. Volley never puts a
// token in an error or a log line.
const tokenBytes = 16

// token is one lock request's value: unique across all clients and requests.
type token [2 * tokenBytes]byte

// tokenSources are ChaCha8 generators, each seeded from crypto/rand. ChaCha8
// is a cryptographically secure stream cipher; pooling one per P spares a
// syscall per lock and makes token generation allocation-free.
var tokenSources = sync.Pool{New: func() any {
	var seed [32]byte
	crand.Read(seed[:]) // never fails since Go 1.24
	return rand.NewChaCha8(seed)
}}

func newToken() token {
	src := tokenSources.Get().(*rand.ChaCha8)
	var raw [tokenBytes]byte
	src.Read(raw[:])
	tokenSources.Put(src)
	var t token
	hex.Encode(t[:], raw[:])
	return t
}

// releaseID is what the masters call the holder of t, and its release (see
// releasedChannelPrefix): the first 16 hex digits of the SHA-1 of t.
func (t *token) releaseID() (id [releaseIDLen]byte) {
	sum := sha1.Sum(t[:])
	hex.Encode(id[:], sum[:releaseIDLen/2])
	return id
}

// releaseIDLen is the length of a release's id (see releasedChannelPrefix).
const releaseIDLen = 16
