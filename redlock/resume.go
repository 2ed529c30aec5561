package redlock

import (
	"errors"
	"time"
)

// ErrBadToken is returned by Resume for a token that Lock.Token cannot
// have returned. The error does not contain the token.
var ErrBadToken = errors.New("redlock: malformed lock token: want the 32 lowercase hex digits of Lock.Token")

// Token returns the lock's token: the value it holds the key with on the
// masters, 32 lowercase hex digits, unique to this acquisition (a lock
// handed over within a Client, see Unlock, gets a new one). With Resume,
// another process can extend and release the lock; anyone with the token
// can, so keep it as secret as a password. Volley never puts it in an
// error or a log line. The zero Lock's token is "".
func (l *Lock) Token() string {
	if l.c == nil {
		return ""
	}
	return string(l.tok[:])
}

// Resume returns a Lock of key held with the token tok (from Lock.Token,
// in this process or another), so that this Client can Extend and Unlock
// it: the masters check the token as they do for a lock this Client took,
// so a wrong or stale token extends and releases nothing (ErrNotHeld). Resume
// itself sends nothing and does not check that the lock is still held
// (Inspect does).
//
// until is the end of the lock's validity as its holder knew it, a
// wall-clock time: time.Now().Add(l.Validity()) in the holder's process.
// The clocks of the two machines must agree to within the margin you can
// afford; zero (unknown) leaves the Lock without validity: Unlock works,
// Extend returns ErrNotHeld. The Lock's TTL is 0 until an Extend sets it.
//
// A resumed Lock holds one key (a LockMulti's lock cannot be resumed)
// and carries no fencing token (Fence returns 0): pass the holder's Fence
// along with the token if the resource needs it. Resume returns
// ErrBadToken for a malformed token and ErrClosed after Close.
func (c *Client) Resume(key, tok string, until time.Time) (Lock, error) {
	if c.closed.Load() {
		return Lock{}, ErrClosed
	}
	var t token
	if !parseToken(&t, tok) {
		return Lock{}, ErrBadToken
	}
	if err := c.checkFenceKeys(key, nil); err != nil {
		return Lock{}, err
	}
	l := Lock{c: c, key: key, hold: hold{tok: t}}
	if !until.IsZero() {
		// On this process's monotonic clock, as every Lock's Until.
		l.until = time.Now().Add(time.Until(until.Round(0)))
	}
	return l, nil
}

// parseToken sets t from s, the form newToken makes (lowercase hex), and
// reports whether s had that form.
func parseToken(t *token, s string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < '0' || b > '9') && (b < 'a' || b > 'f') {
			return false
		}
	}
	copy(t[:], s)
	return true
}
