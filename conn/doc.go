// Package conn is a pipelined, multiplexed connection to one Redis master:
// one socket carries the commands of every goroutine that uses it, the
// commands pending at the same moment leave in one write, and replies are
// matched to requests in FIFO order. The redlock package runs on the same
// connection code.
//
// # Two APIs
//
// Do is the convenient one: Do(ctx, "SET", "k", "v") returns the reply as
// values the caller owns. It allocates.
//
// Send with a pooled Request is the zero-allocation one, for hot paths (a
// benchmark harness, a client of your own): the caller encodes the command
// into Request.Cmd (with the resp package's Append functions), Sends it,
// waits for the Request on a channel of its choosing (or with Wait), reads
// Request.Reply, and reuses the Request. A caller that stops waiting (its
// context ended) calls Request.Abandon: the reply is still read when it
// comes, so the order of replies holds, and the Request is recycled by the
// Conn.
//
// # Failure
//
// The first I/O or protocol error is sticky: the socket is closed, every
// pending request fails with an *Error that names the master, and new
// requests fail at once with that error until a background reconnect (with
// jittered exponential backoff) succeeds. A caller never queues behind a
// dead master. A master whose oldest pending request has waited longer
// than Options.ReadTimeout is behind: new requests wait in the Conn's
// queue until it catches up, and those their callers abandon meanwhile
// are never sent. One that has besides answered nothing for ReadTimeout is
// hung, paused or cut off, and fails the same way as an I/O error: its
// backlog dies with the socket, and a fresh one is dialed after a random
// wait of at most ReconnectMin. A request marked for replay
// (Request.ReplayUntil) that a reset drops is sent again after the
// reconnect. Error.ConnUsable tells these sticky failures from a caller's
// own cancellation and the MaxPending limit. A server error reply (-ERR,
// -NOSCRIPT) is an ordinary reply, not a failure.
//
// On every connect the Conn runs the handshake (HELLO or AUTH, CLIENT
// SETNAME, SELECT, Options.Setup, as configured) and reads INFO server;
// Info returns the master's server, version, run_id and uptime (a client
// can notice a restart, or choose commands by version).
//
// # Reading replies
//
// Each socket has a reader goroutine that reads its replies and hands each
// to its request's channel. On Linux, TCP and Unix sockets, TLS or not,
// are taken out of the Go runtime's network poller after their handshake,
// and their reader goroutines wait on an epoll set of their own; custom
// dialers' and pub/sub connections stay in the runtime's poller.
//
// # Concurrency
//
// A Conn is safe for concurrent use by any number of goroutines. It owns one
// goroutine for its whole life (connect, liveness check, reconnect) and two
// per socket (reader, writer); Close stops all of them before it returns.
// A Request is owned by one goroutine at a time, as its documentation says.
package conn
