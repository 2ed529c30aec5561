package conn

import "github.com/volleylock/volley/internal/pipe"

// The errors a request can fail with, as causes of an *Error (match them
// with errors.Is).
var (
	// ErrClosed is returned for requests on, or pending at, a closed Conn.
	ErrClosed = pipe.ErrClosed
	// ErrReadTimeout is the cause when the oldest pending request went
	// unanswered for longer than Options.ReadTimeout: the master is hung,
	// unreachable, or answering slower than requests arrive.
	ErrReadTimeout = pipe.ErrReadTimeout
	// ErrTooManyPending is returned at once when Options.MaxPending requests
	// are already waiting for replies.
	ErrTooManyPending = pipe.ErrTooManyPending
	// ErrUnexpectedReply is the cause when the master sent a reply that no
	// request was waiting for.
	ErrUnexpectedReply = pipe.ErrUnexpectedReply
	// ErrReplyMismatch is the cause when a reply could not be the answer to
	// its request (the redlock package vets its own replies so): the
	// replies were out of step with the requests, and the socket was
	// closed before any later reply was handed out.
	ErrReplyMismatch = pipe.ErrReplyMismatch
	// ErrTLSMismatch is the cause when a connect proved that the server
	// speaks the other protocol on its port: without Options.TLS, it
	// closed the connection at the first command and then answered a TLS
	// handshake (OpHandshake); with Options.TLS, its TLS handshake went
	// unanswered or failed and it answered a PING sent without TLS
	// (OpTLS). The error's text says which scheme to use. The Conn keeps
	// reconnecting, as after any failure, but no reconnect succeeds until
	// the server or the Options change.
	ErrTLSMismatch = pipe.ErrTLSMismatch
)

// Op names the step an Error happened in. The set is closed: the
// constants below are every value an Error carries.
type Op = pipe.Op

// Ops that end the socket. The error is sticky: every request pending on
// the socket fails with it, and new requests fail with it at once until a
// reconnect succeeds.
const (
	OpDial      = pipe.OpDial      // the connection could not be opened (also: not connected yet)
	OpTLS       = pipe.OpTLS       // the TLS handshake failed
	OpHandshake = pipe.OpHandshake // HELLO, AUTH, CLIENT SETNAME, SELECT or INFO failed
	OpRead      = pipe.OpRead      // reading or decoding a reply failed
	OpWrite     = pipe.OpWrite     // writing a command failed
	OpTimeout   = pipe.OpTimeout   // the oldest pending request waited past ReadTimeout
	OpClosed    = pipe.OpClosed    // Close was called
)

// Ops that concern one request only: the connection is unharmed and
// usable (see Error.ConnUsable).
const (
	OpWait  = pipe.OpWait  // the caller's context ended while it waited
	OpLimit = pipe.OpLimit // MaxPending requests were already waiting
)

// Error is a failed request on the connection to one master:
//
//	type Error struct {
//		Addr string // the master's address
//		Op   Op     // the step that failed
//		Err  error  // the cause
//	}
//
// It names the master and the step, and wraps the cause (Unwrap). It never
// contains a password. A failure that looks like a TLS mismatch (OpTLS on
// a server that does not answer TLS; OpHandshake when a server without
// Options.TLS closes the connection at the first command) says in its
// text which scheme the server likely needs; when the server then
// answered in the other protocol, its cause is ErrTLSMismatch.
//
// Most Ops are failures of the connection itself and sticky (see the Op
// constants); OpWait and OpLimit concern one request only and leave the
// connection usable, which its method ConnUsable reports. A server's error
// reply (-ERR, -NOSCRIPT, ...) is not an Error: it is an ordinary reply.
// The redlock package's errors wrap the same type.
type Error = pipe.Error
