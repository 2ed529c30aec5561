//go:build unix

package redistest

import (
	"bufio"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPauseResume(t *testing.T) {
	s := Start(t, Options{})
	require.NoError(t, s.Pause())
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	require.NoError(t, err, "the kernel still accepts on a paused server's socket")
	defer c.Close()
	_, err = c.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = c.Read(make([]byte, 16))
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "a paused server answered: %v", err)

	require.NoError(t, s.Resume())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line, "the queued PING is answered after Resume")
}

func TestPausedServerStops(t *testing.T) {
	s, err := StartServer(Options{})
	require.NoError(t, err)
	require.NoError(t, s.Pause())
	pid := s.cmd.Process.Pid
	s.Stop()
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "a paused server outlived Stop")
}
