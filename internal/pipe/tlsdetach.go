package pipe

import (
	"net"
	"sync"
)

// tlsAdapter is the connection under a TLS socket's tls.Conn, so that a
// TLS socket can leave the runtime's poller as a plain one does (see
// detached): the dialled connection while the TLS and Redis handshakes
// run, then, once the socket is detached (det set, before anyone reads or
// writes it again), the detached descriptor.
//
// Detached, Read returns errWouldBlock when nothing has come: a
// temporary net.Error, which crypto/tls returns without keeping it
// (it keeps the bytes of a partial record for the next Read, as it does
// after a read deadline). Write never waits and never fails for want of
// room, since crypto/tls keeps any write error for good: what the
// socket's buffer does not take waits in pending, in order, and every
// later write goes behind it, until flush writes it. Whoever writes the
// socket (the one that set socket.writing) flushes what its write left,
// or hands that to the writer goroutine (socket.flush). A write that
// crypto/tls makes on its own while reading (an alert, a KeyUpdate's
// answer) may also leave some, which the next write's flush takes along.
type tlsAdapter struct {
	net.Conn
	det     *detached
	mu      sync.Mutex // guards pending; held by flush while it waits for room
	pending []byte
}

func (a *tlsAdapter) Read(p []byte) (int, error) {
	if a.det == nil {
		return a.Conn.Read(p)
	}
	return a.det.Read(p)
}

func (a *tlsAdapter) Write(p []byte) (int, error) {
	if a.det == nil {
		return a.Conn.Write(p)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	if len(a.pending) == 0 {
		var err error
		if n, err = a.det.writeSome(p); err != nil {
			return n, err
		}
	}
	a.pending = append(a.pending, p[n:]...)
	return len(p), nil
}

// hasPending reports whether some ciphertext waits for flush.
func (a *tlsAdapter) hasPending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) > 0
}

// flush writes the ciphertext that waits, waiting for room in the
// socket's buffer (a shutdown ends the wait with an error).
func (a *tlsAdapter) flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pending) == 0 {
		return nil
	}
	_, err := a.det.Write(a.pending)
	if cap(a.pending) > maxKeptBuffer {
		a.pending = nil
	}
	a.pending = a.pending[:0]
	return err
}
