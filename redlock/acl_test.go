package redlock

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/scripts"
)

// minimalACL is the ACL user that docs/deployments.md documents ("The ACL a
// deployment needs"), for locks on keys under app:lock:, with waiting and
// fencing: every command Volley sends, and no other. TestMinimalACL
// shows it is enough; without "+publish" or the channel rule, waiters
// would still get the lock, but by RetryDelay instead of a wake-up.
var minimalACL = []string{
	"ACL", "SETUSER", "volley", "on", ">volley-pw", "resetkeys", "resetchannels", "-@all",
	// The handshake: AUTH (RESP2) or HELLO (RESP3), SCRIPT LOAD, INFO.
	"+auth", "+hello", "+script|load", "+info",
	// Lock, Extend, Unlock, and what their scripts call.
	"+set", "+eval", "+evalsha", "+get", "+del", "+pexpire", "+pttl",
	"~app:lock:*",
	// Semaphores: their scripts look for free permits.
	"+exists",
	// Read-write locks: the readers' sorted set, scored by TIME.
	"+zadd", "+zrem", "+zscore", "+zrange", "+zremrangebyscore", "+zpopmin", "+time",
	// Waiting: the release publishes, waiters subscribe.
	"+spublish", "+ssubscribe", "+sunsubscribe", "&volley:released:app:lock:*",
	// Waiting: a wait that ran out looks at the key and its name.
	"+mget",
	// Fencing: its counter and bookkeeping keys.
	"+hget", "+hset", "+time", "~volley:fence", "~volley:fence:*",
}

// TestMinimalACL runs the happy path of every feature as the documented
// least-privileged user, on RESP2 and RESP3.
func TestMinimalACL(t *testing.T) {
	servers := masters(t, 3)
	for _, s := range servers {
		require.NoError(t, s.Command(minimalACL...))
	}
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+proto)), func(t *testing.T) {
			cfg := Config{Fencing: true, Conn: Connection{Username: "volley", Password: "volley-pw", Protocol: proto}}
			a := client(t, servers, cfg)
			var failed atomic.Int32
			b := client(t, servers, waiterConfig(cfg, &failed))
			key := "app:lock:" + t.Name()

			l, err := a.Lock(bg, key, 10*time.Second)
			require.NoError(t, err)
			assert.NotZero(t, l.Fence())
			require.NoError(t, l.Extend(bg, 10*time.Second))
			requireWokenByRelease(t, l, b, key, &failed)

			require.NoError(t, a.Do(bg, key, 150*time.Millisecond, func(ctx context.Context) error {
				select {
				case <-time.After(300 * time.Millisecond): // two renewals
					return nil
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}))
			states, err := a.Inspect(bg, key)
			require.NoError(t, err)
			assert.Len(t, states, 3)

			// A semaphore's permits, and the release's wake-up.
			sa, err := a.Semaphore(key+":sem", 1)
			require.NoError(t, err)
			sb, err := b.Semaphore(key+":sem", 1)
			require.NoError(t, err)
			p, err := sa.Acquire(bg, 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, p.Extend(bg, 10*time.Second))
			requireWoken(t, &failed, 1, func() error {
				p, err := sb.Acquire(bg, time.Second)
				if err == nil {
					err = p.Release(bg)
				}
				return err
			}, func() error { return p.Release(bg) }, "the semaphore's waiter was woken by the release")

			// A read-write lock: readers, then a writer woken by the
			// reader's release.
			ra, err := a.RWMutex(key + ":rw")
			require.NoError(t, err)
			rb, err := b.RWMutex(key + ":rw")
			require.NoError(t, err)
			r, err := ra.RLock(bg, 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, r.Extend(bg, 10*time.Second))
			requireWoken(t, &failed, 1, func() error {
				l, err := rb.Lock(bg, time.Second)
				if err == nil {
					err = l.Unlock(bg)
				}
				return err
			}, func() error { return r.Unlock(bg) }, "the writer was woken by the reader's release")
		})
	}
}

// waiterConfig is cfg for a Client whose Lock waits for the release of a
// lock held for 10 s (see requireWokenByRelease): its failed attempts
// counted in failed, and a RetryDelay of 10 s, so that a waiter the
// release does not wake waits 5-10 s before it tries again.
func waiterConfig(cfg Config, failed *atomic.Int32) Config {
	cfg.RetryDelay = 10 * time.Second
	cfg.Hooks.Event = func(ev Event, _ string) {
		if ev == EventFailed {
			failed.Add(1)
		}
	}
	return cfg
}

// requireWokenByRelease has b, made with waiterConfig, Lock key while l
// holds it, releases l once b waits, and requires that b got the lock
// within 3 s (see requireWoken).
func requireWokenByRelease(t *testing.T, l Lock, b *Client, key string, failed *atomic.Int32) {
	t.Helper()
	requireWoken(t, failed, 1, func() error {
		l2, err := b.Lock(bg, key, time.Second)
		if err == nil {
			err = l2.Unlock(bg)
		}
		return err
	}, func() error { return l.Unlock(bg) }, "the waiter was woken by the release (SSUBSCRIBE and SPUBLISH allowed)")
}

// requireWoken runs waiters copies of take (each takes and gives back a
// hold in a Client made with waiterConfig, whose failed attempts failed
// counts), runs release once each has failed its attempts before and
// after it subscribed, and requires that every take succeeded within 3 s
// of release: woken by the release's message, not by the 5-10 s retry
// delay or a TTL.
func requireWoken(t *testing.T, failed *atomic.Int32, waiters int, take, release func() error, what string) {
	t.Helper()
	failed.Store(0)
	got := make(chan error, waiters)
	for range waiters {
		go func() { got <- take() }()
	}
	require.Eventually(t, func() bool { return failed.Load() >= int32(2*waiters) }, 5*time.Second, time.Millisecond)
	released := time.Now()
	require.NoError(t, release())
	for range waiters {
		require.NoError(t, <-got)
	}
	assert.Less(t, time.Since(released), 3*time.Second, what)
}

// TestACLWithoutACommandFailsClearly: the broken variant of the ACL test.
// New refuses a user that may not run EVALSHA (which it checks), or the
// handshake's INFO, naming the command.
func TestACLWithoutACommandFailsClearly(t *testing.T) {
	servers := masters(t, 3)
	for _, s := range servers {
		var rules []string
		for _, r := range minimalACL {
			if r != "+evalsha" {
				rules = append(rules, r)
			}
		}
		require.NoError(t, s.Command(rules...))
		require.NoError(t, s.Command("ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "+@all", "-info"))
	}
	_, err := New(bg, Config{Addrs: redistest.Addrs(servers), Conn: Connection{Username: "volley", Password: "volley-pw"}})
	require.ErrorIs(t, err, ErrMasterUnusable, "New must refuse a user that may not run EVALSHA")
	assert.Contains(t, err.Error(), "EVALSHA")

	_, err = New(bg, Config{Addrs: redistest.Addrs(servers), Conn: Connection{Username: "noinfo", Password: "pw"}})
	require.ErrorIs(t, err, ErrMasterUnusable)
	assert.Contains(t, err.Error(), "NOPERM")
}

// aclUser returns minimalACL for user name, less the rules in drop.
func aclUser(name string, drop ...string) []string {
	rules := []string{"ACL", "SETUSER", name}
	for _, r := range minimalACL[3:] {
		if !slices.Contains(drop, r) {
			rules = append(rules, r)
		}
	}
	return rules
}

// TestACLOptionalCommandsDegrade: what a managed service may refuse, and
// what it costs (the README's "The ACL a deployment needs"): without
// SCRIPT LOAD, each script is sent whole with EVAL the first time a
// master answers NOSCRIPT, and locks work; without pub/sub, a waiter gets
// the lock after RetryDelay instead of a wake-up; without MGET, waits
// that run out attempt instead of looking; with Conn.ClientName
// and no CLIENT, New fails naming the command. Both servers run it (make
// test's Valkey pass).
func TestACLOptionalCommandsDegrade(t *testing.T) {
	servers := masters(t, 3)
	for _, s := range servers {
		require.NoError(t, s.Command(aclUser("noload", "+script|load")...))
		require.NoError(t, s.Command(aclUser("nopubsub", "+spublish", "+ssubscribe", "+sunsubscribe", "&volley:released:app:lock:*")...))
		require.NoError(t, s.Command(aclUser("noname")...))
		require.NoError(t, s.Command(aclUser("nopop", "+zpopmin")...))
		require.NoError(t, s.Command(aclUser("nomget", "+mget")...))
	}
	conn := func(user string) Connection { return Connection{Username: user, Password: "volley-pw"} }

	t.Run("no SCRIPT LOAD", func(t *testing.T) {
		c := client(t, servers, Config{Fencing: true, Conn: conn("noload")})
		for _, s := range servers {
			require.NoError(t, s.Command("SCRIPT", "FLUSH"))
		}
		l, err := c.Lock(bg, "app:lock:noload", time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Extend(bg, time.Second))
		require.NoError(t, l.Unlock(bg))
	})
	t.Run("no pub/sub", func(t *testing.T) {
		a := client(t, servers, Config{Conn: conn("nopubsub")})
		var failed atomic.Int32
		b := client(t, servers, Config{Conn: conn("nopubsub"), RetryDelay: 200 * time.Millisecond,
			Hooks: Hooks{Event: func(ev Event, _ string) {
				if ev == EventFailed {
					failed.Add(1)
				}
			}}})
		l, err := a.Lock(bg, "app:lock:nopubsub", 10*time.Second)
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			l2, err := b.Lock(bg, "app:lock:nopubsub", time.Second)
			if err == nil {
				err = l2.Unlock(bg)
			}
			got <- err
		}()
		// Released once b waits: its second attempt (after its refused
		// SSUBSCRIBE) failed too.
		require.Eventually(t, func() bool { return failed.Load() >= 2 }, 5*time.Second, time.Millisecond)
		require.NoError(t, l.Unlock(bg))
		require.NoError(t, <-got, "a waiter without pub/sub must still get the lock, by RetryDelay")
	})
	t.Run("no ZPOPMIN", func(t *testing.T) {
		// The release cannot name the Client to wake: it names nobody,
		// and every waiting Client's waiter attempts, at once, not after
		// its (long) RetryDelay.
		a := client(t, servers, Config{Conn: conn("nopop")})
		b := client(t, servers, Config{Conn: conn("nopop"), RetryDelay: 20 * time.Second})
		l, err := a.Lock(bg, "app:lock:nopop", 10*time.Second)
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			l2, err := b.Lock(bg, "app:lock:nopop", time.Second)
			if err == nil {
				err = l2.Unlock(bg)
			}
			got <- err
		}()
		require.Eventually(t, func() bool {
			vals, err := redistest.Do(servers[0].Addr(), "ZCARD", "app:lock:nopop"+scripts.WaitersSuffix)
			return err == nil && vals[0].Int == 1
		}, 5*time.Second, time.Millisecond, "the waiter never enrolled")
		require.NoError(t, l.Unlock(bg))
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("a release that could not name a Client woke nobody")
		}
	})
	t.Run("no MGET", func(t *testing.T) {
		// A wait that runs out cannot look (see peek.go): the Client
		// stops looking and attempts instead, as before looks.
		a := client(t, servers, Config{Conn: conn("nomget")})
		var failed atomic.Int32
		cfg := waiterConfig(Config{Conn: conn("nomget")}, &failed)
		cfg.RetryDelay = 40 * time.Millisecond
		b := client(t, servers, cfg)
		l, err := a.Lock(bg, "app:lock:nomget", 10*time.Second)
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			l2, err := b.Lock(bg, "app:lock:nomget", time.Second)
			if err == nil {
				err = l2.Unlock(bg)
			}
			got <- err
		}()
		require.Eventually(t, func() bool { return failed.Load() >= 5 }, 5*time.Second, time.Millisecond,
			"the waiter's waits that ran out did not attempt")
		assert.True(t, b.looksRefused.Load())
		require.NoError(t, l.Unlock(bg))
		require.NoError(t, <-got)
	})
	t.Run("a client name without CLIENT", func(t *testing.T) {
		cc := conn("noname")
		cc.ClientName = "volley-test"
		_, err := New(bg, Config{Addrs: redistest.Addrs(servers), Conn: cc})
		require.ErrorIs(t, err, ErrMasterUnusable)
		assert.Contains(t, err.Error(), "CLIENT SETNAME")
	})
}

// TestNoPermissionStopsAtOnce: a user whose ACL denies the lock's key on
// every master gets ErrNoPermission from the first attempt, naming the
// servers' NOPERM replies, not ErrNotAcquired after every try (32 tries,
// about 4 s, before); so do a semaphore and a read-write lock. Denied on
// a minority only, the lock is still taken.
func TestNoPermissionStopsAtOnce(t *testing.T) {
	servers := masters(t, 3)
	for _, s := range servers {
		require.NoError(t, s.Command(minimalACL...))
	}
	c := client(t, servers, Config{Conn: Connection{Username: "volley", Password: "volley-pw"}})
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	sem, err := c.Semaphore("other:sem", 2)
	require.NoError(t, err)
	rw, err := c.RWMutex("other:rw")
	require.NoError(t, err)
	for name, call := range map[string]func() error{
		"Lock":              func() error { _, err := c.Lock(ctx, "other:key", time.Second); return err },
		"TryLock":           func() error { _, err := c.TryLock(ctx, "other:key", time.Second); return err },
		"LockMulti":         func() error { _, err := c.LockMulti(ctx, []string{"app:lock:a", "other:key"}, time.Second); return err },
		"Semaphore":         func() error { _, err := sem.Acquire(ctx, time.Second); return err },
		"RWMutex.Lock":      func() error { _, err := rw.Lock(ctx, time.Second); return err },
		"RWMutex.RLock":     func() error { _, err := rw.RLock(ctx, time.Second); return err },
		"Do (through Lock)": func() error { return c.Do(ctx, "other:key", time.Second, func(context.Context) error { return nil }) },
	} {
		err := call()
		require.ErrorIs(t, err, ErrNoPermission, name)
		require.NotErrorIs(t, err, ErrNotAcquired, name)
		var e *Error
		require.ErrorAs(t, err, &e, name)
		assert.Equal(t, 1, e.Attempts, "%s: stopped at the first attempt", name)
		assert.Contains(t, err.Error(), "NOPERM", name)
		assert.Contains(t, err.Error(), "docs/deployments.md", name)
		assert.NotContains(t, err.Error(), "volley-pw", name)
		t.Logf("%s: %v", name, err)
	}
	require.NoError(t, ctx.Err(), "every call stopped at once")

	// Denied on one master of three: a quorum is left, and it locks.
	for _, s := range servers[1:] {
		require.NoError(t, s.Command("ACL", "SETUSER", "volley", "~other:*"))
	}
	l, err := c.Lock(ctx, "other:key", time.Second)
	require.NoError(t, err, "denied on a minority only")
	require.NoError(t, l.Unlock(bg))
}

// deploymentACLLines returns the ACL SETUSER lines of docs/deployments.md
// ("The ACL a deployment needs"): the standalone user's and the cluster
// user's, told apart by the cluster's hash tags.
func deploymentACLLines(t *testing.T) (standalone, cluster string) {
	t.Helper()
	doc, err := os.ReadFile("../docs/deployments.md")
	require.NoError(t, err)
	lines := regexp.MustCompile("(?m)^ACL SETUSER .*$").FindAllString(string(doc), -1)
	require.Len(t, lines, 2, "docs/deployments.md: one line for standalone masters and Sentinel, one for a cluster")
	for _, l := range lines {
		if strings.Contains(l, "{vl*}") {
			cluster = l
		} else {
			standalone = l
		}
	}
	require.NotEmpty(t, standalone)
	require.NotEmpty(t, cluster)
	return standalone, cluster
}

// pasteACL sends line to the server at addr as typed at a redis-cli
// prompt (redis-cli reads it from stdin and splits it as its prompt
// does), and requires OK. Without a redis-cli (or valkey-cli), it splits
// the line on spaces, as redis-cli does a line without quotes.
func pasteACL(t *testing.T, s *redistest.Server, line string) {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		cli, err = exec.LookPath("valkey-cli")
	}
	if err != nil {
		require.NotContains(t, line, `"`)
		require.NotContains(t, line, "'")
		require.NoError(t, s.Command(strings.Fields(line)...))
		return
	}
	host, port, ok := strings.Cut(s.Addr(), ":")
	require.True(t, ok, s.Addr())
	cmd := exec.Command(cli, "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader(line + "\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s: %s", cli, out)
	require.Equal(t, "OK", strings.TrimSpace(string(out)), "%s answered the pasted line", cli)
}

// aclSet is an ACL command's rules, sorted and without duplicates, the
// password set to PASSWORD (the docs' placeholder).
func aclSet(rules []string) []string {
	var set []string
	for _, r := range rules {
		if strings.HasPrefix(r, ">") {
			r = ">PASSWORD"
		}
		set = append(set, r)
	}
	slices.Sort(set)
	return slices.Compact(set)
}

// TestDeploymentACLLines: each ACL line of docs/deployments.md, pasted
// into redis-cli as printed, makes a user that can lock: on standalone
// masters, on every node of a cluster, and on the primary and replica of
// a Sentinel group, also after a failover. The lines are the users that
// TestMinimalACL and TestClusterMinimalACL run every feature as.
func TestDeploymentACLLines(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	standalone, cluster := deploymentACLLines(t)
	assert.Equal(t, aclSet(minimalACL), aclSet(strings.Fields(standalone)), "the standalone line is TestMinimalACL's user")
	assert.Equal(t, aclSet(clusterACL()), aclSet(strings.Fields(cluster)), "the cluster line is TestClusterMinimalACL's user")
	user := Connection{Username: "volley", Password: "PASSWORD"}
	lockAs := func(t *testing.T, c *Client) {
		t.Helper()
		l, err := c.Lock(bg, "app:lock:pasted", time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Extend(bg, time.Second))
		require.NoError(t, l.Unlock(bg))
	}

	t.Run("standalone", func(t *testing.T) {
		servers := masters(t, 3)
		for _, s := range servers {
			pasteACL(t, s, standalone)
		}
		// MasterTimeout as the Sentinel part's: the subject is the ACL,
		// and under make test-stress a reply can take more than 50ms.
		lockAs(t, client(t, servers, Config{Conn: user, MasterTimeout: 250 * time.Millisecond}))
		lockAs(t, client(t, servers, Config{Conn: user, Fencing: true, MasterTimeout: 250 * time.Millisecond}))
	})
	t.Run("cluster", func(t *testing.T) {
		cl := redistest.StartClusterT(t, redistest.ClusterOptions{})
		for _, n := range cl.Nodes() {
			pasteACL(t, n, cluster)
		}
		lockAs(t, clusterClient(t, cl, Config{Conn: user}))
	})
	t.Run("sentinel", func(t *testing.T) {
		g := redistest.StartSentinelGroupT(t, redistest.SentinelOptions{Sentinels: 1, Quorum: 1})
		pasteACL(t, g.Primary(), standalone)
		for _, r := range g.Replicas() {
			pasteACL(t, r, standalone)
		}
		cfg := Config{Addrs: []string{sentinelAddr(g)}, Conn: user, DisableRestartGuard: true,
			MaxTTL: 2 * time.Second, FailoverGrace: 100 * time.Millisecond, MasterTimeout: 250 * time.Millisecond}
		cfg.Conn.ReconnectMin, cfg.Conn.ReconnectMax = time.Millisecond, 20*time.Millisecond
		c, err := New(bg, cfg)
		require.NoError(t, err)
		defer c.Close()
		lockAs(t, c)
		require.NoError(t, g.Failover())
		promoted := g.Primary().Addr()
		require.Eventually(t, func() bool { return c.Masters()[0].Addr == promoted }, 10*time.Second, 10*time.Millisecond, "the Client follows the failover")
		lockAs(t, c)
	})
}
