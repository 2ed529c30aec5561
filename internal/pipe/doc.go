// Package pipe is the connection code under the public conn package and
// the redlock package: conn's Conn is a thin face over this Conn, and its
// Options, Request, Error and ServerInfo are this package's (Options field
// for field, the rest as aliases). What only the redlock package needs, the
// fan-out (Group, Batch and their claim on the sockets), SendWith,
// SendForget, SetCheck and ArrivedAt, is here and not in conn, so that
// conn's exports are what a user of one connection needs.
//
// A Conn is a pipelined, multiplexed connection to one Redis master:
// one socket carries the commands of every goroutine that uses it, the
// commands pending at the same moment leave in one write, and replies are
// matched to requests in FIFO order.
//
// # Two APIs
//
// Do is the convenient one: Do(ctx, "SET", "k", "v") returns the reply as
// values the caller owns. It allocates.
//
// Send with a pooled Request is the zero-allocation one, for hot paths (a
// lock client, a benchmark harness): the caller encodes the command into Request.Cmd (with
// the resp package's Append functions), Sends it, waits for the Request on a
// channel of its choosing, reads Request.Reply, and reuses the Request.
// A caller that stops waiting (its context ended) calls Request.Abandon: the
// reply is still read when it comes, so the order of replies holds, and the
// Request is recycled by the Conn.
//
// A Batch does that bookkeeping for a fan-out: requests to several Conns
// at once, one per slot, read as they complete, the rest abandoned in one
// call, and the Requests reused by the next round.
//
// # Failure
//
// The first I/O or protocol error is sticky: the socket is closed, every
// pending request fails with an *Error that names the master, and new
// requests fail at once with that error until a background reconnect (with
// jittered exponential backoff) succeeds. A lock never queues behind a dead
// master. A master whose oldest pending request has waited longer than
// Options.ReadTimeout is behind: new requests wait in the Conn's queue
// until it catches up, and those their callers abandon meanwhile are never
// sent. One that has besides answered nothing for ReadTimeout is hung,
// paused or cut off,
// and fails the same way as an I/O error: its backlog dies with the
// socket, and a fresh one is dialed after a random wait of at most
// ReconnectMin. A request marked for replay (Request.ReplayUntil) that a
// reset drops is sent again after the reconnect. Error.ConnUsable
// tells these sticky failures from a caller's own cancellation and the
// MaxPending limit. A server error reply (-ERR, -NOSCRIPT) is an ordinary
// reply, not a failure.
//
// Replies are matched to requests by order alone, so a reply that parses
// but is not what was asked (a corrupted length made it swallow the next
// reply, or leave part of itself behind) would put every later reply out
// of step. A request whose check (SetCheck) says so fails the socket the same way,
// with ErrReplyMismatch, before any later reply reaches a request.
//
// On every connect the Conn runs the handshake (HELLO or AUTH, CLIENT
// SETNAME, SELECT, as configured) and reads INFO server; Info returns the
// master's server, version, run_id and uptime (a client can notice a
// restart, or choose commands by version).
//
// # Reading replies
//
// Each socket has a reader goroutine that reads its replies and hands each
// to its request's channel. On Linux, a caller alone on several Conns can
// do without that hand-over: a Batch of a Group claims them and reads its
// own replies in one epoll set (the redlock package does this for a burst
// to N masters; see ExampleGroup). For that, plain TCP and Unix sockets,
// and the TCP connections under TLS ones (see tlsAdapter), are taken out
// of the Go runtime's network poller after their handshake, which would
// otherwise wake a thread for every reply whoever reads it; their reader
// goroutines then wait on an epoll set of their own that reports input
// only while they read. Replies that nobody waits for any more (those
// after a decision) are read by the next claim, or by the reader once
// they were sent a bound ago that the Group's creator chooses. Custom
// dialers' and pub/sub connections stay in the runtime's poller;
// elsewhere than Linux nothing is detached and Claim always declines.
//
// # Driven rounds
//
// Callers that fan out at the same time (the redlock package under load)
// hand their rounds to their Group's driver goroutine instead (see
// Batch.Drive and driver.go): it writes the rounds queued by then in one
// write per Conn, takes the claim from the reader goroutines while it has
// rounds in flight, gives each reply to its round's Hear where it reads
// it, and wakes each caller once, at its decision or deadline. A
// command that a detached socket can take at once goes as a ticket,
// with no Request: an entry that names its round and slot (see
// ticket.go). The Conns keep their queue, checks, replay and reconnects;
// where a ticket cannot go (the socket is busy, behind or down), the
// driver makes Requests of the round's commands, and a socket that is
// not detached is written and read by its own goroutines, its answers
// going to Hear all the same. A round's slot may carry a second command written
// right behind it whose answer nobody reads (Batch.QueueWith, as
// SendWith), and Hear may queue a slot again (a form the server refused,
// sent again in another), which the driver writes in the same round.
//
// # Concurrency
//
// A Conn is safe for concurrent use by any number of goroutines. It owns one
// goroutine for its whole life (connect, liveness check, reconnect) and two
// per socket (reader, writer); Close stops all of them before it returns.
// A Group owns its driver goroutine, started at its first driven round
// and stopped by Close. A Request is owned by one goroutine at a time, as
// its documentation says. A Batch is used by one goroutine at a time; one
// Batch at a time, or the driver, holds a claim (see Batch.Claim).
package pipe
