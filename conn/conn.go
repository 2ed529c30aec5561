package conn

import (
	"context"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// Conn is a pipelined, multiplexed connection to one master: one socket
// carries the commands of every goroutine that uses it. See the package
// documentation for its life cycle and concurrency. The caller that made
// it owns it and must Close it.
type Conn struct {
	p *pipe.Conn
}

// ServerInfo is what a Conn learned about the master at its latest
// connect, from INFO server:
//
//	type ServerInfo struct {
//		RunID       string        // changes when the master process restarts
//		Uptime      time.Duration // the master's uptime when the Conn connected
//		ConnectedAt time.Time     // when the INFO reply arrived (monotonic clock reading)
//		Generation  uint64        // 1 for the first successful connect, then +1 each reconnect
//		Mode        string        // redis_mode (Valkey: server_mode): "standalone", "cluster" or "sentinel"
//		Role        string        // INFO replication's role: "master", "slave" (a replica), or "" when not said
//		Server      string        // server_name ("valkey"), or "redis" when the server has none
//		Version     string        // valkey_version for Valkey, else redis_version; "" when neither
//	}
//
// Its method VersionAtLeast(major, minor int) bool reports whether Version
// is major.minor or later (a Version that does not start with two numbers
// is earlier than any), and StartedAt() time.Time estimates when the master
// process started: ConnectedAt - Uptime, late by the reply's travel time
// plus up to one second (Redis computes uptime from whole unix seconds).
// A ServerInfo is never changed after the Conn publishes it.
type ServerInfo = pipe.ServerInfo

// New validates opts and returns a Conn that connects in the background: it
// returns at once, and requests fail fast until the first connect succeeds.
// Use WaitReady or Dial to wait for it. The caller owns the Conn and must
// Close it.
func New(opts Options) (*Conn, error) {
	p, err := pipe.New(pipe.Options(opts))
	if err != nil {
		return nil, err
	}
	return &Conn{p: p}, nil
}

// Dial is New followed by WaitReady: it returns a connected Conn, or the
// error of the first connect attempt (and closes the Conn).
func Dial(ctx context.Context, opts Options) (*Conn, error) {
	p, err := pipe.Dial(ctx, pipe.Options(opts))
	if err != nil {
		return nil, err
	}
	return &Conn{p: p}, nil
}

// WaitReady waits until the first connect attempt has ended and returns its
// error (nil when connected), or ctx's error (matching both ctx.Err() and
// context.Cause(ctx) with errors.Is).
func (c *Conn) WaitReady(ctx context.Context) error { return c.p.WaitReady(ctx) }

// Addr returns the master's address as configured.
func (c *Conn) Addr() string { return c.p.Addr() }

// Info returns what the Conn learned at its latest connect, or nil before
// the first one.
func (c *Conn) Info() *ServerInfo { return c.p.Info() }

// ReplyLatency returns how long the latest reply took, from Send to its
// arrival, whether or not its caller still waited for it; zero before the
// first reply of the current socket. A caller that needs an answer within
// a bound can tell from it that the master is answering later than that.
func (c *Conn) ReplyLatency() time.Duration { return c.p.ReplyLatency() }

// Err returns nil while connected, else why not.
func (c *Conn) Err() error { return c.p.Err() }

// Close closes the socket, fails every pending request with ErrClosed, and
// stops every goroutine the Conn started before it returns. It is safe to
// call more than once and concurrently with requests.
func (c *Conn) Close() error { return c.p.Close() }

// Do sends one command and waits for its reply: the convenient, allocating
// API for everything off the hot path. Arguments may be string, []byte, int
// or int64; anything else is an error.
//
// The returned values are the caller's (they do not alias any buffer of the
// Conn). A server error reply is returned both as the value and as a
// *resp.ServerError; a connection failure or ctx's end as an *Error.
func (c *Conn) Do(ctx context.Context, args ...any) ([]resp.Value, error) {
	return c.p.Do(ctx, args...)
}

// Send queues r for the master and returns without waiting for the reply.
// Exactly one completion follows each Send: r arrives on notify (or, when
// notify is nil, on r's own channel, see Wait) once its reply or its
// failure is in; unless the caller abandons r first. A Conn that is down
// fails r at once with the sticky connection error; it never queues
// behind an outage.
//
// notify must have room for every request sent with it and not yet received:
// the Conn never blocks on it. The Conn owns r from Send until r completes
// and Send has returned (a goroutine other than Send's caller may receive r
// from notify before Send returns); the caller must not touch r until then.
//
// When the socket is idle the calling goroutine writes r itself; otherwise
// r joins the batch of the next write, so that under load many callers'
// commands share one syscall. When a reply is owed and none has come for
// ReadTimeout, the master is hung: r fails at once with ErrReadTimeout,
// and the socket is reset and reconnected (see Options.ReadTimeout).
func (c *Conn) Send(r *Request, notify chan *Request) { c.p.Send(r, notify) }

// Wait waits for a Request sent with a nil notify channel. On ctx's end it
// abandons r and returns an *Error with Op OpWait that wraps both ctx.Err()
// and context.Cause(ctx) (errors.Is matches either); r then belongs to the
// Conn and must not be used again. Otherwise it returns r.Err() and the
// caller owns r again.
func (c *Conn) Wait(ctx context.Context, r *Request) error { return c.p.Wait(ctx, r) }
