package fakeredis

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// matrixServers returns the servers to compare the fake with: the one
// the other tests use ($REDIS_SERVER, else redis-server from PATH),
// valkey-server from PATH when there is one, and every server that make
// servers installed in the module's .servers folder.
func matrixServers(t *testing.T) []string {
	bins := []string{""}
	if bin, err := exec.LookPath("valkey-server"); err == nil {
		bins = append(bins, bin)
	}
	dir, err := os.Getwd()
	require.NoError(t, err)
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			return bins
		}
	}
	found, _ := filepath.Glob(filepath.Join(dir, ".servers", "*", "bin", "*-server"))
	return append(bins, found...)
}

// nativeScript exercises the native compare-and-set commands: SET's
// IFEQ, DELIFEQ and DELEX, each where the server has it and where it does
// not (an unknown command, a syntax error). Known differences, not
// compared: Redis 8.4's SET IFNE, IFDEQ and IFDNE and DELEX's IFDEQ and
// IFDNE (digests), which the fake does not emulate (it answers SET's as a
// syntax error, DELEX's as an invalid condition), and a repeated IFEQ,
// which Redis 8.6.3 takes and answers nil even when the value matches,
// and the fake refuses as a syntax error, as Valkey does.
func nativeScript() []step {
	steps := []step{
		cmd("SET", "k", "v"),
		cmd("SET", "k", "v2", "IFEQ", "v", "PX", "100000"),
		cmd("GET", "k"),
		cmd("SET", "k", "v3", "IFEQ", "wrong", "PX", "100000"),
		cmd("GET", "k"),
		cmd("SET", "missing", "x", "IFEQ", "y", "PX", "100000"),
		cmd("EXISTS", "missing"),
		cmd("set", "k", "v4", "ifeq", "v2", "nx"),
		cmd("set", "k", "v4", "ifeq", "v2", "xx"),
		cmd("set", "k", "v5", "nx", "ifeq", "v4"),
		cmd("set", "k", "v5", "xx", "ifeq", "v4"),
		cmd("GET", "k"),
		cmd("SET", "k", "v6", "IFEQ", "v5", "GET"),
		cmd("SET", "k", "v7", "IFEQ", "nope", "GET"),
		cmd("SET", "missing", "v", "IFEQ", "v", "GET"),
		cmd("SET", "k", "v", "IFEQ"),
		cmd("SET", "k", "v", "IFEQ", "v6", "PX", "0"),
		cmd("SET", "k", "v", "IFEQ", "v6", "PX", "-5"),
		cmd("SET", "k", "v", "IFEQ", "v6", "KEEPTTL"),
		// The TTL left of PX 100000 as one class, not a number: the two
		// servers read their clocks at different moments (under a CPU
		// hog, 1 ms apart). A server without IFEQ set none: -1, alike.
		{args: []string{"PTTL", "k"}, mask: maskTTLNear(100000)},
		cmd("SET", "k", "w", "IFEQ", "v", "EX", "100"),
		cmd("DELIFEQ", "k", "nope"),
		cmd("DELIFEQ", "k", "w"),
		cmd("DELIFEQ", "k", "w"),
		cmd("delifeq", "missing", "v"),
		cmd("DELIFEQ", "k"),
		cmd("DELIFEQ", "k", "a", "b"),
		cmd("SET", "k", "v"),
		cmd("DELEX", "k", "IFEQ", "w"),
		cmd("DELEX", "k", "IFEQ", "v"),
		cmd("DELEX", "k", "IFEQ", "v"),
		cmd("delex", "missing", "ifeq", "v"),
		cmd("SET", "k", "v"),
		cmd("DELEX", "k", "IFNE", "v"),
		cmd("DELEX", "k", "foo", "v"),
		cmd("DELEX", "k", "IFEQ"),
		cmd("DELEX", "k", "IFEQ", "v", "extra"),
		cmd("DELEX", "k", "IFNE", "w"),
		cmd("SET", "k", "v"),
		cmd("DELEX", "k"),
		cmd("DELEX", "k"),
		cmd("HSET", "h", "a", "1"),
		cmd("SET", "h", "x", "IFEQ", "y"),
		cmd("DELIFEQ", "h", "y"),
		cmd("DELEX", "h", "IFEQ", "y"),
		cmd("DELEX", "h"),
	}
	// RESP3: a nil answer is its own type there.
	steps = append(steps, shaped(func(*testing.T, string) {}, "HELLO", "3"))
	return append(steps,
		cmd("SET", "k", "v"),
		cmd("SET", "k", "v", "IFEQ", "nope", "PX", "100000"),
		cmd("SET", "k", "v1", "IFEQ", "v", "PX", "100000"),
		cmd("DELIFEQ", "k", "v1"),
		cmd("DELEX", "k", "IFEQ", "v1"),
	)
}

// TestDifferentialNative runs nativeScript on every server of the matrix
// (see matrixServers) and on a fake with that server's identity, and
// requires byte-identical replies; the fake's INFO and HELLO say the same
// name and version as the server's.
func TestDifferentialNative(t *testing.T) {
	for _, bin := range matrixServers(t) {
		real := redistest.Start(t, redistest.Options{Binary: bin})
		vals, err := redistest.Do(real.Addr(), "INFO", "server")
		require.NoError(t, err)
		kind, version := redistest.Identity(string(vals[0].Bytes))
		t.Run(kind+"-"+version, func(t *testing.T) {
			fake := StartT(t, Options{Server: kind, Version: version})
			fvals, err := redistest.Do(fake.Addr(), "INFO", "server")
			require.NoError(t, err)
			fkind, fversion := redistest.Identity(string(fvals[0].Bytes))
			require.Equal(t, kind+" "+version, fkind+" "+fversion, "the fake's identity")
			if kind == "valkey" {
				require.Contains(t, string(fvals[0].Bytes), "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n")
			}
			fc, rc := dial(t, fake.Addr()), dial(t, real.Addr())
			runDifferential(t, fc, rc, nativeScript())
			for _, c := range []*testConn{fc, rc} {
				c.send("HELLO")
			}
			got, err := fc.readFrames(1, 5*time.Second)
			require.NoError(t, err)
			want, err := rc.readFrames(1, 5*time.Second)
			require.NoError(t, err)
			for _, field := range []string{"server", "version"} {
				require.Equal(t, helloField(want, field), helloField(got, field), "HELLO's %s", field)
			}
		})
	}
}

// helloField returns the value after field in a HELLO reply's RESP3 map.
func helloField(reply, field string) string {
	_, rest, ok := strings.Cut(reply, "$"+strconv.Itoa(len(field))+"\r\n"+field+"\r\n")
	if !ok {
		return ""
	}
	_, rest, _ = strings.Cut(rest, "\r\n")
	v, _, _ := strings.Cut(rest, "\r\n")
	return v
}

// maskTTLNear rewrites an integer reply within a tenth below ms (a TTL
// set to ms a moment ago) to one placeholder, and leaves others as they
// are, so that two servers' replies compare alike however far apart
// their clocks were read.
func maskTTLNear(ms int64) func(t *testing.T, reply string) string {
	return func(t *testing.T, reply string) string {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n"), 10, 64)
		if err == nil && ms-ms/10 <= n && n <= ms {
			return ":TTL~" + strconv.FormatInt(ms, 10) + "\r\n"
		}
		return reply
	}
}
