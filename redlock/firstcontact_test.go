package redlock

import (
	"context"
	"errors"
	"github.com/volleylock/volley/internal/scripts"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/faultproxy"
	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/internal/redistest"
)

// commandsProcessed returns s's total_commands_processed (INFO stats).
func commandsProcessed(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	cn, err := pipe.Dial(bg, pipe.Options{Addr: s.Addr()})
	require.NoError(t, err)
	defer cn.Close()
	vals, err := cn.Do(bg, "INFO", "stats")
	require.NoError(t, err)
	for _, line := range strings.Split(string(vals[0].Bytes), "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO stats: no total_commands_processed")
	return 0
}

// lockCost runs one Lock and returns how many attempts it made, the most
// commands any of servers ran meanwhile, and its error. Commands are
// counted by the masters (INFO stats, whose own INFO and connection count too: 2 per
// reading), so nothing in the client can hide one.
func lockCost(t *testing.T, c *Client, servers []*redistest.Server, ctx context.Context, ttl time.Duration) (attempts int, commands int64, err error) {
	t.Helper()
	before := make([]int64, len(servers))
	for i, s := range servers {
		before[i] = commandsProcessed(t, s)
	}
	c.cfg.Hooks.Call = func(ctx context.Context, op Op, key string) (context.Context, func(CallEnd)) {
		if op != OpLock {
			return ctx, nil
		}
		return ctx, func(e CallEnd) { attempts = e.Attempts }
	}
	defer func() { c.cfg.Hooks.Call = nil }()
	l, err := c.Lock(ctx, "first-contact", ttl)
	if err == nil {
		require.NoError(t, l.Unlock(bg))
	}
	for i, s := range servers {
		commands = max(commands, commandsProcessed(t, s)-before[i])
	}
	return attempts, commands, err
}

// The commands a Lock may send each master in these tests, whatever
// happens: the attempts Tries allows, each with its release, the pub/sub
// connection's handshake and SSUBSCRIBE, the Unlock, and INFO stats' own
// two. Before #31 a Lock on just-started masters sent tens of thousands.
const maxFirstContactCommands = 40

// TestLockOnFreshMastersWaitsForTheGuard: the quick start on masters that
// just started. The restart guard holds them out; a Lock waits for the
// moment it ends (known from their uptime) rather than attempting
// meanwhile, and then takes the lock. Its own failed attempts' releases
// (which publish: the guarded masters took its SET) do not wake it.
func TestLockOnFreshMastersWaitsForTheGuard(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	servers := masters(t, 3)
	c := newClient(t, servers, Config{MaxTTL: 2 * time.Second, Tries: 3})
	for _, m := range c.Masters() {
		require.False(t, m.Guard.IsZero(), "fresh masters must be guarded")
	}
	start := time.Now()
	attempts, commands, err := lockCost(t, c, servers, bg, time.Second)
	t.Logf("acquired after %v: %d attempts, at most %d commands on a master", time.Since(start).Round(time.Millisecond), attempts, commands)
	require.NoError(t, err, "the guard ends within 3s: Lock must wait for it")
	assert.LessOrEqual(t, attempts, 3, "Tries bounds the attempts")
	assert.LessOrEqual(t, commands, int64(maxFirstContactCommands), "commands per master")
	// The guard ends on each master by its own uptime (whole seconds, and
	// fresh servers start at slightly different moments): the lock needs a
	// quorum out of it, not every master (make test-stress saw the third
	// still guarded).
	free := 0
	for _, m := range c.Masters() {
		if m.Guard.IsZero() {
			free++
		}
	}
	assert.GreaterOrEqual(t, free, c.Quorum(), "acquired while a quorum was guarded")
}

// TestLockFailsAtOnceWhenTheGuardOutlastsCtx: a Lock whose ctx ends before
// the guard does fails at once with ErrNotAcquired naming the guard, not
// with ctx's error after spinning until it ends.
func TestLockFailsAtOnceWhenTheGuardOutlastsCtx(t *testing.T) {
	servers := masters(t, 3)
	c := newClient(t, servers, Config{MaxTTL: 20 * time.Second})
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	attempts, commands, err := lockCost(t, c, servers, ctx, time.Second)
	t.Logf("%d attempts, at most %d commands on a master: %v", attempts, commands, err)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.NoError(t, ctx.Err(), "Lock waited for a ctx that ends before the guard")
	assert.Contains(t, err.Error(), "restart guard")
	guardedMaster(t, err)
	assert.LessOrEqual(t, attempts, 2)
	assert.LessOrEqual(t, commands, int64(maxFirstContactCommands))
}

// TestLockAttemptsAreBoundedByTries: attempts that fail while their SET
// may be on a quorum publish their release, for other Clients' waiters
// that may have seen them as the holder. A Lock's own release must not
// wake it: each wait then ends by RetryDelay, and Tries bounds the
// attempts exactly. Two cases: a TTL whose validity is spent before the
// answers come (a quorum said yes: no split vote either), and two of three
// masters paused (their answers unknown: an outage, ErrNoQuorum, which a
// Lock waits out apart from the room). The broken variant (selfWake) must
// be caught: it attempts again at each release of its own. It is checked
// where the releases publish on every master (another Client's mark says
// someone waits): answers 150ms late for a
// 250ms TTL with a drift allowance of half of it, so that the validity is
// spent before they come but the key lives until its release. (With a
// 10ms TTL and answers 20ms late, the key may expire before its release
// runs, and then nothing is published to wake anyone.)
func TestLockAttemptsAreBoundedByTries(t *testing.T) {
	servers := masters(t, 3)
	const tries = 3
	// spent returns a Client whose masters' answers come late (behind a
	// proxy each) and a TTL for which every attempt's validity is spent
	// by then.
	spent := func(t *testing.T, late, masterTimeout, retryDelay time.Duration, drift float64) *Client {
		cfg := Config{Tries: tries, RetryDelay: retryDelay, DisableRestartGuard: true, MasterTimeout: masterTimeout, DriftFactor: drift}
		for _, s := range servers {
			p, err := faultproxy.Start(s.Addr())
			require.NoError(t, err)
			t.Cleanup(func() { p.Close() })
			p.SetLatency(0, late)
			cfg.Addrs = append(cfg.Addrs, p.Addr())
		}
		c, err := New(bg, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("validity spent", func(t *testing.T) {
		// Answers that come 20ms late, for a 10ms TTL (7.9ms of
		// validity): every attempt fails with a quorum of yes votes. (A
		// TTL that leaves no validity at all is refused: ErrConfig.)
		c := spent(t, 20*time.Millisecond, 0, 100*time.Millisecond, 0)
		attempts, commands, err := lockCost(t, c, servers, bg, 10*time.Millisecond)
		require.ErrorIs(t, err, ErrNotAcquired)
		assert.Equal(t, tries, attempts)
		assert.LessOrEqual(t, commands, int64(maxFirstContactCommands))
	})
	// 250ms - 122.5ms of drift - 2ms: 125.5ms of validity, spent when
	// the answers come, 100ms before the key expires. The releases'
	// messages come 150ms late too, within the wait.
	publishing := func(t *testing.T) (attempts int, commands int64) {
		// Another Client waits for the key (its mark, see
		// scripts.ListenSuffix): a release publishes only when someone
		// waits.
		for _, s := range servers {
			_, err := redistest.Do(s.Addr(), "SET", "first-contact"+scripts.ListenSuffix, "1", "PX", "60000")
			require.NoError(t, err)
		}
		c := spent(t, 150*time.Millisecond, 500*time.Millisecond, time.Second, 0.49)
		attempts, commands, err := lockCost(t, c, servers, bg, 250*time.Millisecond)
		require.ErrorIs(t, err, ErrNotAcquired)
		return attempts, commands
	}
	t.Run("validity spent, releases published", func(t *testing.T) {
		attempts, commands := publishing(t)
		assert.Equal(t, tries, attempts, "a Lock woken by its own releases")
		assert.LessOrEqual(t, commands, int64(maxFirstContactCommands))
	})
	t.Run("broken variant: self-wake", func(t *testing.T) {
		selfWake = true
		defer func() { selfWake = false }()
		attempts, _ := publishing(t)
		assert.Greater(t, attempts, tries, "the check did not catch a Lock woken by its own releases")
	})
	for _, s := range servers[1:] {
		require.NoError(t, s.Pause())
		defer s.Resume()
	}
	t.Run("two masters paused", func(t *testing.T) {
		c := client(t, servers, Config{Tries: tries, MasterTimeout: 50 * time.Millisecond, RetryDelay: 400 * time.Millisecond})
		// Only the running master can count its commands.
		attempts, commands, err := lockCost(t, c, servers[:1], bg, 10*time.Second)
		require.ErrorIs(t, err, ErrNoQuorum)
		t.Logf("%d attempts, %d commands on the running master", attempts, commands)
		assert.Equal(t, tries, attempts, "a Lock made more attempts than Tries")
		assert.LessOrEqual(t, commands, int64(maxFirstContactCommands))
	})
}

// TestCancelledLockKeepsWhatItLearned: when ctx ends a Lock, its error says
// what each master last answered (here: the restart guard), not
// "cancelled" over it.
func TestCancelledLockKeepsWhatItLearned(t *testing.T) {
	servers := masters(t, 3)
	c := newClient(t, servers, Config{MaxTTL: 20 * time.Second})
	ctx, cancel := context.WithCancel(bg)
	c.cfg.Hooks.Event = func(ev Event, key string) {
		if ev == EventFailed {
			cancel() // ctx ends right after the first decided attempt
		}
	}
	_, err := c.Lock(ctx, "k", time.Second)
	require.ErrorIs(t, err, context.Canceled)
	var le *Error
	require.True(t, errors.As(err, &le))
	for _, n := range le.Masters {
		assert.NotEqual(t, OutcomeCancelled, n.Outcome, "%v", err)
	}
}
