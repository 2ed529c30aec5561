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

// serverName returns the server s runs, its kind and version ("redis
// 7.0.15", "valkey 9.1.2"), and fails
// the test if it is not the one VOLLEY_EXPECT_SERVER and
// VOLLEY_EXPECT_VERSION name (when set), so that a pass meant for one
// server cannot quietly test another.
func serverName(t *testing.T, s *Server) string {
	t.Helper()
	info, err := doText(s.Addr(), "INFO", "server")
	require.NoError(t, err)
	kind, version := Identity(info)
	ExpectIdentity(t, kind, version)
	return kind + " " + version
}

func TestServerIdentity(t *testing.T) {
	s := Start(t, Options{})
	t.Logf("server: %s", serverName(t, s))
}

// TestIdentity: the kind and version from INFO server replies of Redis 7,
// Redis 8 (no server_name) and Valkey (redis_version frozen at 7.2.4).
func TestIdentity(t *testing.T) {
	for _, tc := range []struct {
		info, kind, version string
	}{
		{"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n", "redis", "7.0.15"},
		{"# Server\r\nredis_version:8.6.3\r\nredis_git_sha1:00000000\r\n", "redis", "8.6.3"},
		{"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n", "valkey", "9.1.2"},
	} {
		kind, version := Identity(tc.info)
		require.Equal(t, tc.kind, kind)
		require.Equal(t, tc.version, version)
	}
}

func TestVersionIs(t *testing.T) {
	for _, tc := range []struct {
		version, want string
		ok            bool
	}{
		{"8.6.3", "8.6.3", true},
		{"8.6.3", "8.6", true},
		{"8.6.3", "8", true},
		{"8.60.0", "8.6", false},
		{"8.0.2", "8.0.6", false},
		{"7.2.4", "9.1", false},
		{"", "8", false},
	} {
		require.Equal(t, tc.ok, versionIs(tc.version, tc.want), "%q against %q", tc.version, tc.want)
	}
}
