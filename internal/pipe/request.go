package pipe

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/resp"
)

// Request states. A Request moves idle -> pending (Send) -> done (reply or
// failure delivered) -> pending (Send again) ..., or pending -> abandoned
// (the caller gave up) -> recycled by whoever completes it.
const (
	stateIdle int32 = iota
	statePending
	stateDone
	stateAbandoned
)

// maxKeptBuffer is the largest buffer a recycled Request keeps; bigger ones
// are dropped so that one huge reply does not pin memory in the pool.
const maxKeptBuffer = 64 << 10

// requestPool holds idle Requests. They hold no channel: one made inside a
// testing/synctest bubble must not reach a goroutine outside it, so a
// Request's own channel lives only until it is released.
var requestPool = sync.Pool{New: func() any { return new(Request) }}

// Request is one command and, once completed, its reply. Requests are
// reusable and pooled: get one with NewRequest, fill Cmd, Send it, wait for
// it, read the reply, then Send it again or Release it.
//
// Ownership: between Send and its completion the Conn owns the Request; the
// caller must not touch it. After completion (the Request arrived on the
// notify channel) the caller owns it again. A caller that stops waiting calls
// Abandon: from then on the Request belongs to the Conn, which recycles it
// when its reply arrives, and the caller must never use it again.
type Request struct {
	// Cmd is the encoded command, e.g. resp.AppendCommand(r.Cmd[:0], "GET", "k").
	// It is the caller's to fill while it owns the Request.
	Cmd []byte
	// Tag is free for the caller (e.g. the index of the master it went to).
	Tag int
	// ReplayUntil, when not zero, asks the Conn not to forget the command
	// if a reset drops it before its reply comes: queued, written but
	// unanswered, or sent while the Conn was down (or shed, see Send). The
	// Conn keeps a copy and sends it again, as SendForget does, after the
	// next connect, unless that comes at or after ReplayUntil. The request
	// itself still fails as usual. Only for commands that may run twice
	// with the same effect (a release checked against a token): a replayed
	// command may also have run before the reset. It is the caller's to
	// set with Cmd; recycling clears it.
	//
	// For the same reason a -NOSCRIPT answer to such a request's EVALSHA
	// of one of Options.Scripts is answered with the EVAL form until
	// ReplayUntil, also when nobody reads its answer any more (a release
	// answered after the caller's decision, or sent with SendForget, to a
	// master whose script cache was flushed): see Options.Scripts.
	ReplayUntil time.Time

	check    func(reply []resp.Value) bool // see SetCheck
	state    atomic.Int32
	replayBy int64         // ReplayUntil as a monoNow reading, 0 for none; set by Send
	sent     int64         // when Send accepted it (a monoNow reading): the lag check measures its age
	arrived  int64         // when its reply arrived (a monoNow reading); 0 until then, and for a failure
	notify   chan *Request // where completion is announced
	own      chan *Request // the Request's own notify channel, capacity 1; made by Send when needed
	forget   bool          // sent by SendForget: no one is notified of its completion
	batch    *Batch        // the Batch that sent it, told of its completion; nil for others
	driven   bool          // sent in a driven round of batch: completes through Batch.heard
	gen      uint32        // driven: batch's generation when it was written (see Batch.gen)
	prepares *Request      // the one sent right after it (Batch.SendAfter, QueueAfter): written only if that one is

	err  error        // connection error, nil when a reply arrived
	vals []resp.Value // the reply, flattened; Bytes point into buf
	buf  []byte
}

// NewRequest returns an idle Request from the pool. It allocates only when
// the pool is empty.
func NewRequest() *Request { return requestPool.Get().(*Request) }

// Release returns a completed or never-sent Request to the pool. The caller
// must not use r afterwards. Releasing a pending Request panics: that is a
// bug in the caller (use Abandon).
func (r *Request) Release() {
	if s := r.state.Load(); s == statePending || s == stateAbandoned {
		panic("conn: Release of a Request still owned by a Conn")
	}
	r.recycle()
}

func (r *Request) recycle() {
	if cap(r.Cmd) > maxKeptBuffer {
		r.Cmd = nil
	}
	if cap(r.buf) > maxKeptBuffer {
		r.buf = nil
	}
	r.Cmd, r.buf, r.vals = r.Cmd[:0], r.buf[:0], r.vals[:0]
	r.Tag, r.check, r.err, r.notify, r.own, r.forget, r.batch, r.driven, r.gen, r.prepares = 0, nil, nil, nil, nil, false, nil, false, 0, nil
	r.ReplayUntil, r.replayBy = time.Time{}, 0
	r.state.Store(stateIdle)
	requestPool.Put(r)
}

// unwanted reports whether nobody waits for r any more and nothing is
// lost if it is never sent: its caller abandoned it (or its driven round
// ended), it is not a command
// sent for its effect alone (SendForget, SendWith's second), and it did
// not ask for replay.
func (r *Request) unwanted() bool {
	return !r.forget && r.replayBy == 0 && !r.waited()
}

// waited reports whether someone waits for r's answer: it is pending,
// not sent by SendForget nor with another command, and, when driven, its
// round has not ended (see Batch.gen).
func (r *Request) waited() bool {
	return !r.forget && r.state.Load() == statePending && (!r.driven || r.batch.gen.Load() == r.gen)
}

// Abandon gives up on a pending Request. It reports true if the Conn now owns
// r (and will recycle it); false if r had already completed, in which case r
// is, or is about to be, on its notify channel and the caller still owns it.
func (r *Request) Abandon() bool {
	return r.state.CompareAndSwap(statePending, stateAbandoned)
}

// SetCheck has r's reply vetted before r completes: check false says the
// reply cannot be the answer to r.Cmd, so the master's replies are out
// of step with the requests (a corrupted length made one reply swallow
// the next, or leave part of itself for the next request), and every
// later reply on the socket would answer another request. The Conn then
// fails the socket as for a protocol error, before it hands out any
// later reply: r and every pending request fail with an *Error wrapping
// ErrReplyMismatch, and the Conn reconnects. A server error reply should
// pass: it is well formed whatever the command. nil checks nothing.
//
// check runs on the goroutine that reads the socket, possibly after the
// caller abandoned r, so it must decide from reply alone (not from state
// the caller may change), must not block, and must not keep reply. It is
// the caller's to set with Cmd, while it owns r; recycling clears it.
// It is a function, not a method, so that the public conn.Request (an
// alias of Request) does not offer it.
func SetCheck(r *Request, check func(reply []resp.Value) bool) { r.check = check }

// ArrivedAt returns when r's reply was read off the socket (with a
// monotonic clock reading), or the zero Time for a failure: a caller that
// times its requests need not read the clock again. A function for the
// same reason as SetCheck.
func ArrivedAt(r *Request) time.Time {
	if r.arrived == 0 {
		return time.Time{}
	}
	return monoTime(r.arrived)
}

// Err returns the connection error the Request failed with, or nil if a reply
// arrived (which may itself be a server error: see Reply).
func (r *Request) Err() error { return r.err }

// Reply returns the reply, flattened in pre-order (see resp.Value). The slice
// and its bytes belong to r: valid until r is sent again or released.
func (r *Request) Reply() []resp.Value { return r.vals }

// arm makes r pending, sent at at, announcing its completion on notify
// (see Conn.send).
func (r *Request) arm(notify chan *Request, at int64) {
	r.notify = notify
	r.err = nil
	r.sent, r.arrived = at, 0
	r.replayBy = replayDeadline(r.ReplayUntil)
	r.state.Store(statePending)
}

// complete stores a reply (vals, copied) or a failure (err) and announces it.
// It is called by the Conn only, once per Send.
func (r *Request) complete(vals []resp.Value, err error) {
	if r.driven {
		r.batch.heard(r, vals, err)
		return
	}
	if r.state.Load() == stateAbandoned {
		r.recycle()
		return
	}
	forget, notify, batch := r.forget, r.notify, r.batch // r may be reused once it is done
	r.err = err
	r.vals = r.vals[:0]
	if err == nil && !forget {
		r.copyReply(vals)
	}
	if !r.state.CompareAndSwap(statePending, stateDone) {
		// Abandoned while we stored the reply.
		r.recycle()
		return
	}
	if forget {
		return // done before SendForget gave it up: SendForget recycles it
	}
	notify <- r // never blocks: see Send
	if batch != nil {
		batch.completed()
	}
}

// copyReply copies vals into r's own storage with one buffer for all bytes.
func (r *Request) copyReply(vals []resp.Value) {
	total := 0
	for i := range vals {
		total += len(vals[i].Bytes)
	}
	if cap(r.buf) < total {
		r.buf = make([]byte, 0, total)
	}
	buf := r.buf[:0]
	r.vals = append(r.vals[:0], vals...)
	for i := range r.vals {
		if b := r.vals[i].Bytes; b != nil {
			off := len(buf)
			buf = append(buf, b...)
			r.vals[i].Bytes = buf[off:len(buf):len(buf)]
		}
	}
	r.buf = buf
}
