package conn

import "github.com/volleylock/volley/internal/pipe"

// Request is one command and, once completed, its reply: the
// zero-allocation API. Requests are reusable and pooled: get one with
// NewRequest, fill Cmd, Send it, wait for it, read the reply, then Send
// it again or Release it. Its fields and methods:
//
//	Cmd []byte             // the encoded command, e.g. resp.AppendCommand(r.Cmd[:0], "GET", "k")
//	Tag int                // free for the caller (e.g. the index of the master it went to)
//	ReplayUntil time.Time  // see below
//
//	func (r *Request) Reply() []resp.Value // the reply, flattened in pre-order (see resp.Value)
//	func (r *Request) Err() error          // the connection error it failed with, or nil
//	func (r *Request) Abandon() bool       // give up on a pending Request
//	func (r *Request) Release()            // return a completed or unsent Request to the pool
//
// Reply's slice and its bytes belong to r: valid until r is sent again or
// released. A reply that is a server error (-ERR ...) is a reply, not an
// Err.
//
// Ownership: between Send and its completion the Conn owns the Request;
// the caller must not touch it. After completion (the Request arrived on
// the notify channel, or Wait returned nil) the caller owns it again. A
// caller that stops waiting calls Abandon: when it reports true the Conn
// owns r, reads its reply when it comes (so that the order of replies
// holds) and recycles it, and the caller must never use r again; false
// says r already completed and is, or is about to be, on its notify
// channel, still the caller's. Releasing a pending Request panics.
//
// ReplayUntil, when not zero, asks the Conn not to forget the command if a
// reset drops it before its reply comes: queued, written but unanswered,
// or sent while the Conn was down. The Conn keeps a copy and sends it
// again after the next connect, unless that comes at or after
// ReplayUntil; the Request itself still fails as usual. Only for commands
// that may run twice with the same effect (a release checked against a
// token): a replayed command may also have run before the reset. A
// -NOSCRIPT answer to such a Request's EVALSHA of one of Options.Scripts
// is answered with the EVAL form until ReplayUntil (see Options.Scripts).
type Request = pipe.Request

// NewRequest returns an idle Request from the pool. It allocates only when
// the pool is empty.
func NewRequest() *Request { return pipe.NewRequest() }
