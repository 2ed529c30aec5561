package conn

import "errors"

var (
	// ErrClosed is returned for requests on, or pending at, a closed Conn.
	ErrClosed = errors.New("conn: closed")
	// ErrReadTimeout is the cause when the oldest pending request went
	// unanswered for longer than Options.ReadTimeout: the master is hung,
	// unreachable, or answering slower than requests arrive.
	ErrReadTimeout = errors.New("conn: master too slow: oldest request unanswered past ReadTimeout")
	// ErrTooManyPending is returned at once when Options.MaxPending requests
	// are already waiting for replies.
	ErrTooManyPending = errors.New("conn: too many pending requests")
	// ErrUnexpectedReply is the cause when the master sent a reply that no
	// request was waiting for.
	ErrUnexpectedReply = errors.New("conn: reply without a pending request")
	// ErrReplyMismatch is the cause when a request's Check refused its
	// reply: the replies were out of step with the requests, and the
	// socket was closed before any later reply was handed out.
	ErrReplyMismatch = errors.New("conn: reply does not fit its request: replies out of step")
)

// Op names the step an Error happened in. The set is closed: these
// constants are every value an Error carries.
type Op string

// Ops that end the socket. The error is sticky: every request pending on
// the socket fails with it, and new requests fail with it at once until a
// reconnect succeeds.
const (
	OpDial      Op = "dial"      // the connection could not be opened (also: not connected yet)
	OpTLS       Op = "tls"       // the TLS handshake failed
	OpHandshake Op = "handshake" // HELLO, AUTH, CLIENT SETNAME, SELECT or INFO failed
	OpRead      Op = "read"      // reading or decoding a reply failed
	OpWrite     Op = "write"     // writing a command failed
	OpTimeout   Op = "timeout"   // the oldest pending request waited past ReadTimeout
	OpClosed    Op = "closed"    // Close was called
)

// Ops that concern one request only: the connection is unharmed and
// usable (see Error.ConnUsable).
const (
	OpWait  Op = "wait"  // the caller's context ended while it waited
	OpLimit Op = "limit" // MaxPending requests were already waiting
)

// Error is a failed request on the connection to one master. It names the
// master and the step (Op), and wraps the cause. It never contains a
// password. A failure that looks like a TLS mismatch (OpTLS on a server
// that does not answer TLS; OpHandshake when a server without Options.TLS
// closes the connection at the first command) says in its text which
// scheme the server likely needs.
//
// Most Ops are failures of the connection itself and sticky (see the Op
// constants); OpWait and OpLimit concern one request only and leave the
// connection usable, which ConnUsable reports. A server's error reply
// (-ERR, -NOSCRIPT, ...) is not an Error: it is an ordinary reply.
type Error struct {
	Addr string // the master's address
	Op   Op     // the step that failed
	Err  error  // the cause
}

func (e *Error) Error() string {
	return "conn: " + e.Addr + ": " + string(e.Op) + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ConnUsable reports whether the connection is still usable after e: true
// for a caller's own cancellation (OpWait) and for the MaxPending limit
// (OpLimit), false for every failure of the connection itself.
func (e *Error) ConnUsable() bool { return e.Op == OpWait || e.Op == OpLimit }

// Hints that an Error's cause carries when the failure looks like a TLS
// mismatch: TLS on a port without it, or none on a TLS port.
const (
	hintNotTLS = "is the server without TLS on this port? then use redis://, not rediss://, and no TLS config"
	hintTLS    = "the server closed the connection at the first command: is it a TLS port? then use rediss:// or a TLS config"
)
