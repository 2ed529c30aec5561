package redistest

import (
	"bufio"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// roundTrip sends one command and returns the first reply line, plus the
// payload of a bulk reply, with CRLF stripped.
func roundTrip(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	_, err = c.Write([]byte(b.String()))
	require.NoError(t, err)
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") && line != "$-1" {
		body, err := r.ReadString('\n')
		require.NoError(t, err)
		return strings.TrimRight(body, "\r\n")
	}
	return line
}

func runID(t *testing.T, s *Server) string {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"))
	require.NoError(t, err)
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if strings.HasPrefix(line, "run_id:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "run_id:"))
		}
	}
}

func TestStartAnswersAndStops(t *testing.T) {
	servers := StartN(t, 3, Options{})
	seen := map[string]bool{}
	for _, s := range servers {
		require.Equal(t, "+PONG", roundTrip(t, s.Addr(), "PING"))
		require.False(t, seen[s.Addr()], "two servers on one address")
		seen[s.Addr()] = true
	}
	s := servers[0]
	dir := s.Dir()
	s.Stop()
	_, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
	require.Error(t, err, "a stopped server still accepts connections")
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist)
	s.Stop() // twice is fine
}

func TestKillAndRestart(t *testing.T) {
	s := Start(t, Options{})
	before := runID(t, s)
	require.Equal(t, "+OK", roundTrip(t, s.Addr(), "SET", "k", "v"))

	s.Kill()
	_, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
	require.Error(t, err, "a killed server still accepts connections")

	require.NoError(t, s.Restart(false))
	require.Equal(t, "$-1", roundTrip(t, s.Addr(), "GET", "k"), "restart without data kept a key")
	require.NotEqual(t, before, runID(t, s), "a restarted server keeps its run_id")

	require.Equal(t, "+OK", roundTrip(t, s.Addr(), "SET", "k", "v2"))
	require.NoError(t, s.Restart(true))
	require.Equal(t, "v2", roundTrip(t, s.Addr(), "GET", "k"), "restart with data lost a key")
}

func TestFlush(t *testing.T) {
	s := Start(t, Options{})
	require.Equal(t, "+OK", roundTrip(t, s.Addr(), "SET", "k", "v"))
	require.NoError(t, s.Flush())
	require.Equal(t, ":0", roundTrip(t, s.Addr(), "EXISTS", "k"))
}

func TestCommandError(t *testing.T) {
	s := Start(t, Options{Args: []string{"--requirepass", "pw"}})
	err := s.Command("FLUSHALL")
	require.ErrorContains(t, err, "NOAUTH")
}

func TestMissingBinaryFailsClearly(t *testing.T) {
	_, err := StartServer(Options{Binary: "/nonexistent/redis-server"})
	require.ErrorIs(t, err, ErrNoRedisServer)
	require.Contains(t, err.Error(), "apt-get install -y redis-server")
	_, err = StartCluster(ClusterOptions{Server: Options{Binary: "/nonexistent/redis-server"}})
	require.ErrorIs(t, err, ErrNoRedisServer)
	_, err = StartSentinelGroup(SentinelOptions{Server: Options{Binary: "/nonexistent/redis-server"}})
	require.ErrorIs(t, err, ErrNoRedisServer)
}

// A server whose port another server already holds is not taken for
// ours (it cannot bind; the other answers): two Servers would otherwise
// be one process, a master counted twice in a quorum. StartServer then
// tries another port.
func TestStartRefusesAnotherServersPort(t *testing.T) {
	a := Start(t, Options{})
	bin, err := findBinary("")
	require.NoError(t, err)
	b := &Server{bin: bin, dir: t.TempDir(), port: a.port}
	err = b.start()
	require.Error(t, err)
	require.Contains(t, err.Error(), "another server's")
}

// serverName returns "redis" or "valkey", the server s runs, and fails
// the test if it is not the one VOLLEY_EXPECT_SERVER names (when set), so
// that a pass meant for one server cannot quietly test the other.
func serverName(t *testing.T, s *Server) string {
	t.Helper()
	info, err := doText(s.Addr(), "INFO", "server")
	require.NoError(t, err)
	name := "redis"
	if infoField(info, "server_name") == "valkey" {
		name = "valkey"
	}
	if want := os.Getenv("VOLLEY_EXPECT_SERVER"); want != "" {
		require.Equal(t, want, name, "the tests ran against the wrong server")
	}
	return name
}

func TestServerIdentity(t *testing.T) {
	s := Start(t, Options{})
	t.Logf("server: %s", serverName(t, s))
}
