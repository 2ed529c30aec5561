package conn

import "errors"

var (
	// ErrClosed is returned for requests on, or pending at, a closed Conn.
	ErrClosed = errors.New("conn: closed")
	// ErrReadTimeout is the cause when the master left the oldest pending
	// request unanswered for longer than Options.ReadTimeout.
	ErrReadTimeout = errors.New("conn: master stopped answering (read timeout)")
	// ErrTooManyPending is returned at once when Options.MaxPending requests
	// are already waiting for replies.
	ErrTooManyPending = errors.New("conn: too many pending requests")
	// ErrUnexpectedReply is the cause when the master sent a reply that no
	// request was waiting for.
	ErrUnexpectedReply = errors.New("conn: reply without a pending request")
)

// Error is a failure of the connection to one master: dialing, the
// handshake, reading, writing, or the liveness check. It names the master
// and the operation, and wraps the cause. It never contains a password.
//
// A connection error is sticky: the socket is closed, every pending request
// fails with it, and new requests fail with it at once until a reconnect
// succeeds. A server's error reply (-ERR, -NOSCRIPT, ...) is not an Error: it
// is an ordinary reply.
type Error struct {
	Addr string // the master's address
	Op   string // "dial", "handshake", "read", "write", "timeout", "closed"
	Err  error  // the cause
}

func (e *Error) Error() string { return "conn: " + e.Addr + ": " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
