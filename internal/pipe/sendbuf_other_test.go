//go:build !linux

package pipe

import "testing"

// limitSendBuffer does nothing where sockets are not detached (see the
// Linux one): there the Conn's writer goroutine writes, and waits.
func limitSendBuffer(*testing.T, *Conn, int) {}
