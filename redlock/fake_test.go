package redlock

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
)

// fakeMasters starts n fake masters whose clocks say they have been up an
// hour, so the restart guard lets them vote.
func fakeMasters(t *testing.T, n int) ([]*fakeredis.Server, []string) {
	t.Helper()
	servers := make([]*fakeredis.Server, n)
	addrs := make([]string, n)
	for i := range servers {
		clock := fakeredis.NewManualClock(time.Now())
		servers[i] = fakeredis.StartT(t, fakeredis.Options{Clock: clock})
		clock.Advance(time.Hour)
		addrs[i] = servers[i].Addr()
	}
	return servers, addrs
}

func fakeClient(t *testing.T, addrs []string, cfg Config) *Client {
	t.Helper()
	cfg.Addrs = addrs
	cfg.Conn.ReconnectMin, cfg.Conn.ReconnectMax = time.Millisecond, 5*time.Millisecond
	c, err := New(bg, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// fakeHolds waits until every fake master holds key with tok: a Lock
// returns once a quorum took it, its SETs to the last masters still on
// their way.
func fakeHolds(t *testing.T, servers []*fakeredis.Server, key string, tok token) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if val, _, ok := s.Lookup(key); !ok || val != string(tok[:]) {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "%s is not held with the token on every master", key)
}

// A lock costs the quorum's latency, not the slowest master's.
func TestSlowMasterDoesNotSlowLock(t *testing.T) {
	servers, addrs := fakeMasters(t, 5)
	c := fakeClient(t, addrs, Config{MasterTimeout: 10 * time.Second})
	// Waiting for the slow master would cost 3s per operation, 18s for
	// the six below; the bound is one such wait, a margin that holds on a
	// loaded machine (#26).
	servers[4].SetFault("*", fakeredis.Fault{Latency: 3 * time.Second})
	start := time.Now()
	for range 3 {
		l, err := c.TryLock(bg, "k", 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(bg))
	}
	assert.Less(t, time.Since(start), 3*time.Second, "the locks waited for the slow master")
}

func TestGarbageFromOneMaster(t *testing.T) {
	servers, addrs := fakeMasters(t, 5)
	c := fakeClient(t, addrs, Config{})
	servers[0].SetFault("SET", fakeredis.Fault{Raw: []byte("?garbage\r\n")})
	l, err := c.TryLock(bg, "k", 10*time.Second)
	require.NoError(t, err, "one lying master must not stop a lock")
	require.NoError(t, l.Unlock(bg))
}

func TestNoScriptFallsBackToEval(t *testing.T) {
	servers, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{})
	l, err := c.TryLock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	for _, s := range servers {
		s.SetFault("EVALSHA", fakeredis.Fault{NoScript: true, Times: 1})
	}
	require.NoError(t, l.Extend(bg, 10*time.Second))
	// Unlock's EVALSHA: masters that lost their scripts release too, even
	// the one answering after the decision, whose NOSCRIPT nobody reads:
	// the connection sends the EVAL itself (conn.Request.ReplayUntil).
	// Without that the key stayed there for its TTL.
	for _, s := range servers {
		s.SetFault("EVALSHA", fakeredis.Fault{NoScript: true, Times: 1})
	}
	require.NoError(t, l.Unlock(bg))
	// Unlock returns at quorum; the last release may still be on its way.
	for _, s := range servers {
		require.Eventually(t, func() bool { return s.Keys() == 0 }, 5*time.Second, time.Millisecond,
			"unlock left the key on %s", s.Addr())
	}
}

func TestHungMajorityBoundedByMasterTimeout(t *testing.T) {
	servers, addrs := fakeMasters(t, 5)
	c := fakeClient(t, addrs, Config{MasterTimeout: 100 * time.Millisecond})
	for _, s := range servers[:3] {
		s.SetFault("*", fakeredis.Fault{Hang: true})
	}
	start := time.Now()
	_, err := c.TryLock(bg, "k", 10*time.Second)
	elapsed := time.Since(start)
	require.ErrorIs(t, err, ErrNoQuorum, "three of five masters timed out: an outage")
	var le *Error
	require.ErrorAs(t, err, &le)
	assert.Equal(t, OutcomeTimeout, le.Masters[0].Outcome)
	assert.GreaterOrEqual(t, elapsed, 100*time.Millisecond)
	assert.Less(t, elapsed, 2*time.Second, "a hung majority must cost MasterTimeout, not more")
	// The two healthy masters got the release: nothing of ours is left there.
	require.Eventually(t, func() bool { return servers[3].Keys() == 0 && servers[4].Keys() == 0 }, 5*time.Second, time.Millisecond)
}

func TestRestartGuardOnFakeMasters(t *testing.T) {
	servers, addrs := fakeMasters(t, 3)
	a := fakeClient(t, addrs, Config{MaxTTL: 10 * time.Second})
	b := fakeClient(t, addrs, Config{MaxTTL: 10 * time.Second})
	_, err := a.TryLock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	servers[0].Restart() // forgets the key, uptime back to 0
	servers[1].Restart()
	require.Eventually(t, func() bool {
		m := b.Masters()
		return m[0].Err == nil && m[1].Err == nil && m[0].Info.Generation == 2 && m[1].Info.Generation == 2
	}, 5*time.Second, time.Millisecond)
	_, err = b.TryLock(bg, "k", 10*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "two holders: the guard let restarted masters vote")
	guardedMaster(t, err)
}

// A master whose replies have been coming after MasterTimeout is not
// awaited when the outcome hangs on it: the attempt fails at once with
// OutcomeSlow for it, instead of holding its votes on the other masters
// for a whole MasterTimeout. Unless fewer than a quorum would be left: then
// every master is awaited as usual.
func TestSlowMasterIsNotAwaited(t *testing.T) {
	const masterTimeout = 100 * time.Millisecond
	servers, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{MasterTimeout: masterTimeout})
	other := fakeClient(t, addrs[1:2], Config{})
	_, err := other.TryLock(bg, "k", 10*time.Second) // "k" taken on master 1 only
	require.NoError(t, err)

	// Slow replies (within ReadTimeout: the connection stays up), noticed
	// from the first lock's straggling reply.
	servers[2].SetFault("*", fakeredis.Fault{Latency: 3 * masterTimeout / 2})
	l, err := c.TryLock(bg, "a", 10*time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.masters[2].conn().ReplyLatency() > masterTimeout },
		5*time.Second, time.Millisecond)

	// Master 0 says OK, master 1 taken: the outcome hangs on master 2.
	_, err = c.TryLock(bg, "k", 10*time.Second)
	var le *Error
	require.ErrorAs(t, err, &le)
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.Equal(t, []Outcome{OutcomeOK, OutcomeTaken, OutcomeSlow},
		[]Outcome{le.Masters[0].Outcome, le.Masters[1].Outcome, le.Masters[2].Outcome})

	// A lock decided by the others does not care: it succeeds.
	require.NoError(t, l.Unlock(bg))

	// Two slow masters of three: a quorum is slow, so the burst waits
	// for them (see patience), and none is left out as slow.
	servers[1].SetFault("*", fakeredis.Fault{Latency: 3 * masterTimeout / 2})
	_, err = c.TryLock(bg, "b", 10*time.Second) // times out on masters 1 and 2, which answer late
	require.ErrorIs(t, err, ErrNoQuorum, "two of three timed out")
	require.Eventually(t, func() bool { return c.masters[1].conn().ReplyLatency() > masterTimeout },
		5*time.Second, time.Millisecond)
	// The fake masters answer in order, each reply its latency after the
	// one before: let the failed attempt's release go first.
	time.Sleep(4 * masterTimeout)
	l, err = c.TryLock(bg, "c", 10*time.Second)
	require.NoError(t, err, "a slow quorum is waited for")
	require.NoError(t, l.Unlock(bg))
}

// A quorum of masters that answer later than MasterTimeout (a busy
// machine: they do answer) is waited for, up to twice its latency: Extend
// and Unlock succeed, and so does a Lock, instead of failing with
// timeouts. A master that never answered since its latency was measured
// (a silent one) does not stretch the wait.
func TestSlowQuorumIsAwaited(t *testing.T) {
	err := slowQuorumExtendAndUnlock(t)
	require.NoError(t, err, "a slow quorum is waited for")
}

// TestSlowQuorumTimesOutWithoutPatience is the broken variant of
// TestSlowQuorumIsAwaited: waiting MasterTimeout alone, the same Extend
// fails on every master with a timeout.
func TestSlowQuorumTimesOutWithoutPatience(t *testing.T) {
	noPatience = true
	t.Cleanup(func() { noPatience = false })
	err := slowQuorumExtendAndUnlock(t)
	require.ErrorIs(t, err, ErrExtendFailed)
}

// slowQuorumExtendAndUnlock takes a lock on three fake masters (MasterTimeout
// 50 ms), makes every master answer 120 ms late, waits until the Client
// has seen it, and returns the error of an Extend, then Unlocks (which must
// succeed when the Extend did) and Locks again.
func slowQuorumExtendAndUnlock(t *testing.T) error {
	t.Helper()
	const masterTimeout = 50 * time.Millisecond
	servers, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{MasterTimeout: masterTimeout})
	l, err := c.TryLock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	for _, s := range servers {
		s.SetFault("*", fakeredis.Fault{Latency: 120 * time.Millisecond})
	}
	_ = l.Extend(bg, 10*time.Second) // fails: the Client learns the latencies from its late replies
	require.Eventually(t, func() bool {
		for _, m := range c.masters {
			if m.conn().ReplyLatency() <= masterTimeout {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond)
	start := time.Now()
	err = l.Extend(bg, 10*time.Second)
	t.Logf("Extend: %v after %v", err, time.Since(start))
	if err != nil {
		return err
	}
	require.NoError(t, l.Unlock(bg))
	l, err = c.Lock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg))
	return nil
}

// A context cancelled with a cause of its own: the error matches both
// context.Canceled and the cause, for every operation that waits on it.
func TestCancelWithCause(t *testing.T) {
	servers, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{MasterTimeout: 5 * time.Second})
	l, err := c.TryLock(bg, "held", 10*time.Second)
	require.NoError(t, err)
	l2, err := c.TryLock(bg, "held2", 10*time.Second)
	require.NoError(t, err)
	for _, s := range servers {
		s.SetFault("*", fakeredis.Fault{Hang: true})
	}
	mine := errors.New("shutting down")
	cancelSoon := func() context.Context {
		ctx, cancel := context.WithCancelCause(bg)
		time.AfterFunc(20*time.Millisecond, func() { cancel(mine) })
		return ctx
	}
	_, err = c.TryLock(cancelSoon(), "k", 10*time.Second)
	assert.ErrorIs(t, err, context.Canceled, "lock")
	assert.ErrorIs(t, err, mine, "lock")
	err = l.Extend(cancelSoon(), 10*time.Second)
	assert.ErrorIs(t, err, context.Canceled, "extend")
	assert.ErrorIs(t, err, mine, "extend")
	err = l.Unlock(cancelSoon())
	assert.ErrorIs(t, err, context.Canceled, "unlock")
	assert.ErrorIs(t, err, mine, "unlock")

	// Already ended before the call.
	ctx, cancel := context.WithCancelCause(bg)
	cancel(mine)
	_, err = c.Lock(ctx, "k", 10*time.Second)
	assert.ErrorIs(t, err, context.Canceled, "lock, ended before")
	assert.ErrorIs(t, err, mine, "lock, ended before")
	before := l2.Until()
	err = l2.Extend(ctx, 10*time.Second)
	assert.ErrorIs(t, err, context.Canceled, "extend, ended before")
	assert.ErrorIs(t, err, mine, "extend, ended before")
	assert.Equal(t, before, l2.Until(), "the previous validity stands")
}

// New waits for the masters' first connects only as long as ctx lets it.
func TestNewHonoursContext(t *testing.T) {
	hang := func(ctx context.Context, _, _ string) (net.Conn, error) { <-ctx.Done(); return nil, ctx.Err() }
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := New(ctx, Config{Addrs: []string{"127.0.0.1:1"}, Conn: Connection{Dialer: hang}})
	assert.Nil(t, c)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second, "New waited out the dial timeout")
}

// Hooks.Call sees every call start and end, with its error and each
// master's part; Hooks.Held sees each lock end once, with how long it was
// held.
func TestCallAndHeldHooks(t *testing.T) {
	_, addrs := fakeMasters(t, 3)
	type call struct {
		op       Op
		key      string
		err      error
		attempts int
		outcomes []Outcome
	}
	var mu sync.Mutex
	var calls []call
	var held []time.Duration
	hooks := Hooks{
		Call: func(ctx context.Context, op Op, key string) (context.Context, func(CallEnd)) {
			return ctx, func(e CallEnd) {
				c := call{op: op, key: key, err: e.Err, attempts: e.Attempts}
				for _, n := range e.Masters {
					c.outcomes = append(c.outcomes, n.Outcome)
				}
				assert.Positive(t, e.Took)
				mu.Lock()
				calls = append(calls, c)
				mu.Unlock()
			}
		},
		Held: func(key string, d time.Duration) {
			mu.Lock()
			held = append(held, d)
			mu.Unlock()
		},
	}
	c := fakeClient(t, addrs, Config{Hooks: hooks, Tries: 2, RetryDelay: time.Millisecond})
	l, err := c.Lock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	_, err = c.Lock(bg, "k", 10*time.Second) // taken: two attempts
	require.ErrorIs(t, err, ErrNotAcquired)
	require.NoError(t, l.Extend(bg, 10*time.Second))
	require.NoError(t, l.Unlock(bg))
	require.ErrorIs(t, l.Unlock(bg), ErrNotHeld) // already released: Held not told again

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 5)
	assert.Equal(t, call{OpLock, "k", nil, 1, nil}, call{calls[0].op, calls[0].key, calls[0].err, calls[0].attempts, nil})
	assert.Subset(t, []Outcome{OutcomeOK, OutcomeNone}, calls[0].outcomes) // returns at quorum
	assert.Equal(t, OpLock, calls[1].op)
	assert.ErrorIs(t, calls[1].err, ErrNotAcquired)
	assert.Equal(t, 2, calls[1].attempts)
	assert.Equal(t, OpExtend, calls[2].op)
	assert.NoError(t, calls[2].err)
	assert.Equal(t, OpUnlock, calls[3].op)
	assert.NoError(t, calls[3].err)
	assert.Equal(t, OpUnlock, calls[4].op)
	assert.ErrorIs(t, calls[4].err, ErrNotHeld)

	require.Len(t, held, 1, "Held once per lock")
	assert.Positive(t, held[0])
}
