package pipe

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// limitSendBuffer fixes the send buffer of c's detached socket at n
// bytes (the kernel doubles it), which also stops the kernel from
// growing it: a test that needs a write the socket does not take whole
// then gets one with a few hundred kilobytes, whatever the machine's
// tcp_wmem lets an autotuned buffer reach (4 MB by default).
func limitSendBuffer(t *testing.T, c *Conn, n int) {
	t.Helper()
	c.mu.Lock()
	s := c.sock
	c.mu.Unlock()
	require.NotNil(t, s, "connected")
	require.NotNil(t, s.det, "the socket is detached")
	require.NoError(t, syscall.SetsockoptInt(s.det.fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, n))
}
