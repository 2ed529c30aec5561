package redlock

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/leakcheck"
	"github.com/volleylock/volley/internal/redistest"
)

// TestMain runs the package's tests, checking for leaked goroutines. With
// VOLLEY_DRIVEN=1 in the environment every round the Group's driver may
// serve goes to it (alwaysDriven), as it goes when other callers keep the
// sockets busy, and none takes a lone caller's claim: make test's Valkey
// pass runs so, the other passes as rounds fall.
func TestMain(m *testing.M) {
	drivenByDefault = os.Getenv("VOLLEY_DRIVEN") == "1"
	alwaysDriven = drivenByDefault
	leakcheck.Main(m)
}

// drivenByDefault is alwaysDriven's value for the run (see TestMain): a
// test that sets alwaysDriven puts it back to this.
var drivenByDefault bool

// setDriven sets alwaysDriven for the rest of t, then puts it back.
func setDriven(t *testing.T, driven bool) {
	t.Helper()
	alwaysDriven = driven
	t.Cleanup(func() { alwaysDriven = drivenByDefault })
}

// Parallel tests. The package's tests mostly wait on their servers (a
// whole run used a quarter of its wall time in CPU), so a test that waits
// for seconds (a failover, a restart guard's window, renewals) calls
// t.Parallel when it starts servers of its own and sets no package hook
// (selfWake, noAsking, unvouchedCluster and the other variables that
// build broken variants), nor calls debug.SetGCPercent or t.Setenv. Go
// runs the parallel tests after every sequential one has ended, its hooks
// restored, and -parallel (GOMAXPROCS by default) of them at a time.

// masters starts n real redis-server masters for the test.
func masters(t *testing.T, n int) []*redistest.Server {
	t.Helper()
	return redistest.StartN(t, n, redistest.Options{})
}

// client returns a Client on servers. Fresh masters would be held out by
// the restart guard for MaxTTL, so it is off unless cfg turns it on (the
// guard's own tests set MaxTTL and leave DisableRestartGuard false by
// calling guardedClient).
func client(t *testing.T, servers []*redistest.Server, cfg Config) *Client {
	t.Helper()
	cfg.DisableRestartGuard = true
	return newClient(t, servers, cfg)
}

func newClient(t *testing.T, servers []*redistest.Server, cfg Config) *Client {
	t.Helper()
	cfg.Addrs = redistest.Addrs(servers)
	if cfg.Conn.ReconnectMax == 0 {
		cfg.Conn.ReconnectMin, cfg.Conn.ReconnectMax = time.Millisecond, 20*time.Millisecond
	}
	c, err := New(bg, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

var bg = context.Background()

func redistestStartN(tb testing.TB, n int) []string {
	tb.Helper()
	return redistest.Addrs(redistest.StartN(tb, n, redistest.Options{}))
}

// warm returns once every master of c has answered a request sent after
// its connect-time work: under -race a fresh Client's master may still
// be behind on that, and a lock's command to it then waits in its queue
// and is dropped once the lock is decided without it (see
// pipe.Conn.late): the lock holds fewer copies than masters (seen in
// TestNativeCommands, about one run in 40). Tests that count copies or
// commands call it first.
func warm(t *testing.T, c *Client) {
	t.Helper()
	inspectAll(t, func(ctx context.Context) ([]KeyState, error) { return c.Inspect(ctx, "warm-up") }, nil)
}

// ownEverywhere waits until l's key holds l's token on every master,
// extending l (by ttl) where a copy is missing: Lock returns at a quorum,
// and on a loaded machine a lagging master's SET may come late or never
// be sent (make test-stress saw both). Tests that count on every copy
// call it first.
func ownEverywhere(t *testing.T, l *Lock, ttl time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		states, err := l.Inspect(bg)
		if err != nil || slices.ContainsFunc(states, func(s KeyState) bool { return !s.Ours }) {
			_ = l.Extend(bg, ttl)
			return false
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "%s held on every master", l.Key())
}

// inspectAll calls inspect until every master answered and every state
// is as want says (when want is not nil), and returns those states: on a
// loaded machine a master may miss MasterTimeout, and its KeyState then
// says only that (Err set); and an operation returns at its quorum, so a
// master may see a straggler of another Client's (another connection's)
// operation only after the inspection. It fails the test when inspect
// errs, or when 5 s pass without such an answer, asserting want on the
// last one.
func inspectAll(t *testing.T, inspect func(context.Context) ([]KeyState, error), want func(KeyState) bool) []KeyState {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		states, err := inspect(bg)
		require.NoError(t, err)
		i := slices.IndexFunc(states, func(s KeyState) bool { return s.Err != nil || want != nil && !want(s) })
		if i < 0 {
			return states
		}
		if time.Now().After(deadline) {
			require.NoError(t, states[i].Err, "%s on %s: no answer for 5s", states[i].Key, states[i].Addr)
			return states // the caller's assertions say what is wrong
		}
		time.Sleep(10 * time.Millisecond)
	}
}
