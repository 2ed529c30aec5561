package pipe

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
	// ErrTLSMismatch is the cause when a connect proved that the server
	// speaks the other protocol on its port: without Options.TLS, it
	// closed the connection at the first command and then answered a TLS
	// handshake (OpHandshake); with Options.TLS, its TLS handshake went
	// unanswered or failed and it answered a PING sent without TLS
	// (OpTLS). The error's text says which scheme to use. The Conn keeps
	// reconnecting, as after any failure, but no reconnect succeeds until
	// the server or the Options change.
	ErrTLSMismatch = errors.New("conn: TLS mismatch")
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
// scheme the server likely needs; when the server then answered in the
// other protocol, its cause is ErrTLSMismatch.
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
// mismatch: TLS on a port without it, or none on a TLS port. When a probe
// proves it (see mismatch.go), the cause is ErrTLSMismatch with
// mismatchPlain or mismatchTLS instead.
const (
	hintNotTLS = "is the server without TLS on this port? then use redis://, not rediss://, and no TLS config"
	hintTLS    = "the server closed the connection at the first command: is it a TLS port? then use rediss:// or a TLS config"

	mismatchPlain = "the server speaks RESP without TLS on this port (it answered a PING sent in clear): use redis://, not rediss://, and no TLS config"
	mismatchTLS   = "the server speaks TLS on this port (it closed the connection at the first command, and answered a TLS handshake): use rediss:// or a TLS config"
)

// errHintTLS marks a handshake whose first reply failed as it does on a
// TLS port (see isTLSPort); its text is hintTLS.
var errHintTLS = errors.New(hintTLS)
