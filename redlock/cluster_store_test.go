package redlock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/slot"
)

// clusterAddr is the Config.Addrs entry of cl, with query (may be "").
func clusterAddr(cl *redistest.Cluster, query string) string {
	return "redis-cluster://" + strings.Join(cl.SeedAddrs(), ",") + query
}

// clusterClient returns a Client over cl; the restart guard is off unless
// cfg sets MaxTTL (a fresh cluster would be held out for MaxTTL), and
// MasterTimeout is 250ms unless cfg sets it (six more processes on a
// loaded machine: TestClusterFailover failed once, under -race, with the
// 50ms default).
func clusterClient(t *testing.T, cl *redistest.Cluster, cfg Config) *Client {
	t.Helper()
	if cfg.MasterTimeout == 0 {
		cfg.MasterTimeout = 250 * time.Millisecond
	}
	if cfg.MaxTTL == 0 {
		cfg.DisableRestartGuard = true
	}
	if len(cfg.Addrs) == 0 {
		cfg.Addrs = []string{clusterAddr(cl, "")}
	}
	cfg.Conn.ReconnectMin, cfg.Conn.ReconnectMax = time.Millisecond, 20*time.Millisecond
	c, err := New(bg, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// copyAt returns where c keeps copy i of key: its server's address and
// the hash tag before the key there.
func copyAt(c *Client, i int, key string) (addr, tag string) {
	p := c.placement(key)
	return c.connFor(i, p).Addr(), c.tagFor(i, p)
}

// unguarded waits until the restart guard holds none of c's masters out
// (fresh servers start at slightly different moments: a Lock can get a
// quorum while one is still held out).
func unguarded(t *testing.T, c *Client) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, m := range c.Masters() {
			if m.Err != nil || m.Guard.After(time.Now()) {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond, "masters still held out by the restart guard")
}

// TestClusterLocks: over a 3-primary cluster the copies are the masters,
// one per primary, each key's copy under the tag of its place in a slot
// of that primary; the locks of two Clients exclude each other, single and
// multi-key (keys that share a hash tag; others are refused), and Do
// renews.
func TestClusterLocks(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{})
	a := clusterClient(t, cl, Config{})
	b := clusterClient(t, cl, Config{RetryDelay: time.Millisecond})
	require.Len(t, a.Masters(), 3)
	assert.Equal(t, 2, a.Quorum())
	primaries := map[string]bool{}
	for i := range a.masters {
		addr, tag := copyAt(a, i, "job")
		owner := cl.Primary(cl.ShardOf(slot.Of(tag))).Addr()
		assert.Equal(t, owner, addr, "copy %d is on the primary that owns its tag's slot", i)
		assert.Equal(t, owner, a.Masters()[i].Addr, "copy %d's range is on one primary", i)
		primaries[owner] = true
	}
	assert.Len(t, primaries, 3, "one copy per primary")

	l, err := a.TryLock(bg, "job", 10*time.Second)
	require.NoError(t, err)
	states := inspectAll(t, l.Inspect, nil)
	for _, st := range states {
		assert.True(t, st.Ours, "%s holds the lock's copy", st.Addr)
	}
	for i := range a.masters {
		addr, tag := copyAt(a, i, "job")
		vals, err := redistest.Do(addr, "PTTL", tag+"job")
		require.NoError(t, err)
		assert.Positive(t, vals[0].Int, "copy %d's key is %sjob", i, tag)
	}
	_, err = b.TryLock(bg, "job", 10*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.NoError(t, l.Extend(bg, 10*time.Second))
	require.NoError(t, l.Unlock(bg))
	l, err = b.TryLock(bg, "job", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg))

	ml, err := a.TryLockMulti(bg, []string{"{o}x", "{o}y"}, 10*time.Second)
	require.NoError(t, err)
	_, err = b.TryLockMulti(bg, []string{"{o}y", "{o}z"}, 10*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)
	_, err = b.TryLock(bg, "{o}y", 10*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a key is the same key alone and in a set")
	require.NoError(t, ml.Unlock(bg))
	_, err = a.TryLockMulti(bg, []string{"x", "y"}, 10*time.Second)
	require.ErrorContains(t, err, "share a hash tag")
	require.ErrorIs(t, err, ErrConfig)

	// Do renews through the shared renewer (a batch script per copy).
	err = a.Do(bg, "renewed", 300*time.Millisecond, func(ctx context.Context) error {
		time.Sleep(700 * time.Millisecond)
		return ctx.Err()
	})
	require.NoError(t, err)

	// A waiting Lock gets the key once it is released (see also
	// TestClusterWakeUps).
	held, err := a.TryLock(bg, "wait", 10*time.Second)
	require.NoError(t, err)
	time.AfterFunc(50*time.Millisecond, func() { held.Unlock(bg) })
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	waiter := clusterClient(t, cl, Config{RetryDelay: 20 * time.Millisecond})
	l, err = waiter.Lock(ctx, "wait", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg))
}

// TestClusterNewRefuses: a cluster entry that is not a cluster, a cluster
// node listed as a standalone master, more copies than primaries, two
// Clients that disagree on the number of copies and a cluster entry
// beside another: each a clear error from New.
func TestClusterNewRefuses(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
	standalone := redistest.Start(t, redistest.Options{})
	clusterClient(t, cl, Config{}) // records 3 copies
	for name, tt := range map[string]struct {
		cfg  Config
		want string
	}{
		"standalone as cluster":  {Config{Addrs: []string{"redis-cluster://" + standalone.Addr()}}, "not a Redis Cluster node"},
		"node as standalone":     {Config{Addrs: []string{cl.SeedAddrs()[0]}}, "redis-cluster://"},
		"copies above primaries": {Config{Addrs: []string{clusterAddr(cl, "?copies=4")}}, "fewer than the 4 copies"},
		"copies disagree":        {Config{Addrs: []string{clusterAddr(cl, "?copies=2")}}, "place 3 copies"},
		"beside another entry":   {Config{Addrs: []string{clusterAddr(cl, ""), standalone.Addr()}}, "only entry"},
	} {
		t.Run(name, func(t *testing.T) {
			tt.cfg.DisableRestartGuard = true
			c, err := New(bg, tt.cfg)
			if err == nil {
				c.Close()
			}
			require.ErrorContains(t, err, tt.want)
			if name != "beside another entry" {
				require.ErrorIs(t, err, ErrMasterUnusable)
			} else {
				require.ErrorIs(t, err, ErrConfig)
			}
		})
	}
}

// TestClusterFailover: a failover moves a copy to the promoted replica.
// The lock stays exclusive throughout; the Client follows the move, holds
// the new primary out for MaxTTL + FailoverGrace, locks with the two other
// copies meanwhile, and counts the moved copy again afterwards.
func TestClusterFailover(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{})
	cfg := Config{MaxTTL: 3 * time.Second, FailoverGrace: 500 * time.Millisecond, RetryDelay: 10 * time.Millisecond}
	a := clusterClient(t, cl, cfg)
	b := clusterClient(t, cl, cfg)
	require.NoError(t, a.WaitQuorum(bg))
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	unguarded(t, a) // the test counts on every master from here
	l, err := a.Lock(ctx, "k", 3*time.Second)
	require.NoError(t, err)

	_, tag := copyAt(a, 0, "k")
	shard := cl.ShardOf(slot.Of(tag))
	old := cl.Primary(shard).Addr()
	require.NoError(t, cl.Failover(shard))
	promoted := cl.Primary(shard).Addr()
	// Copy 0 answers MOVED now (its old primary is a replica); copies 1
	// and 2 keep the lock.
	require.NoError(t, l.Extend(bg, 3*time.Second), "the lock outlived the failover")

	// b's burst: copy 0 answers MOVED (its old primary is a replica now),
	// copies 1 and 2 say taken.
	_, err = b.TryLock(bg, "k", time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.Eventually(t, func() bool { return b.Masters()[0].Addr == promoted }, 5*time.Second, 10*time.Millisecond, "b follows copy 0 from %s to %s", old, promoted)
	guard := b.Masters()[0].Guard
	assert.True(t, guard.After(time.Now()), "the moved copy is held out")

	require.NoError(t, l.Unlock(bg))
	// A Lock, not a TryLock: a's release may reach a copy after b's first
	// attempt does (two connections), under load.
	l, err = b.Lock(ctx, "k", time.Second)
	require.NoError(t, err, "copies 1 and 2 make a quorum while copy 0 is held out")
	assert.True(t, time.Now().Before(guard), "taken while the moved master was held out")
	_, err = a.TryLock(bg, "k", time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.NoError(t, l.Unlock(bg))

	time.Sleep(time.Until(guard) + 50*time.Millisecond)
	l, err = b.TryLock(bg, "k", time.Second)
	require.NoError(t, err)
	states := inspectAll(t, l.Inspect, nil)
	assert.True(t, states[0].Ours, "copy 0 on %s votes again after the guard", promoted)
	assert.Equal(t, promoted, states[0].Addr)
	require.NoError(t, l.Unlock(bg))
}

// TestClusterPrimaryKilled: a primary dies; its replica takes over after
// the node timeout. The lock stays exclusive, is released and taken again
// with the two other copies while the cluster fails over (logged: how long
// after the kill), and the Client follows the promoted replica.
func TestClusterPrimaryKilled(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{})
	// MasterTimeout 1s: a master whose reply came later than that is not
	// awaited by the next burst, and the Unlock below needs both living
	// copies; under make test-stress a reply can take 250ms.
	cfg := Config{MaxTTL: 2 * time.Second, FailoverGrace: time.Second, RetryDelay: 10 * time.Millisecond, MasterTimeout: time.Second}
	a := clusterClient(t, cl, cfg)
	b := clusterClient(t, cl, cfg)
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	unguarded(t, a) // the test counts on every master from here
	l, err := a.Lock(ctx, "k", 2*time.Second)
	require.NoError(t, err)
	// Lock returns at a quorum: the third copy's SET may still be on its
	// way, and would then race b's TryLock below. Wait until it landed.
	for _, s := range inspectAll(t, l.Inspect, func(s KeyState) bool { return s.Ours }) {
		require.True(t, s.Ours, "a holds %s on %s", s.Key, s.Addr)
	}

	_, tag := copyAt(a, 1, "k")
	shard := cl.ShardOf(slot.Of(tag))
	cl.Primary(shard).Kill()
	killed := time.Now()
	_, err = b.TryLock(bg, "k", 2*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a's lock is valid on copies 0 and 2")
	require.NoError(t, l.Unlock(bg))
	l, err = b.Lock(ctx, "k", 2*time.Second)
	require.NoError(t, err)
	granted := time.Since(killed)
	require.NoError(t, l.Unlock(bg))

	require.NoError(t, cl.WaitPromoted(shard))
	t.Logf("primary of copy 1 killed: a lock granted again %v after the kill; the replica promoted %v after it", granted, time.Since(killed))
	l, err = b.Lock(ctx, "k", 2*time.Second) // copy 1's connection fails: the locator looks
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg))
	require.Eventually(t, func() bool { return b.Masters()[1].Addr == cl.Primary(shard).Addr() }, 5*time.Second, 10*time.Millisecond, "b follows copy 1")
}

// TestClusterSlotMigrated: a resharding moves copy 1's slot, with its key,
// to copy 2's primary. The Client follows (MOVED), holds the copy out for
// the guard, and locks on; the held lock's copy moved with the slot.
func TestClusterSlotMigrated(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
	c := clusterClient(t, cl, Config{})
	other := clusterClient(t, cl, Config{})
	l, err := c.TryLock(bg, "k", 10*time.Second)
	require.NoError(t, err)

	_, tag2 := copyAt(c, 2, "k")
	_, tag1 := copyAt(c, 1, "k")
	to := cl.ShardOf(slot.Of(tag2))
	require.NoError(t, cl.MoveSlot(slot.Of(tag1), to))
	_, err = other.TryLock(bg, "k", 10*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.Eventually(t, func() bool { addr, _ := copyAt(other, 1, "k"); return addr == cl.Primary(to).Addr() }, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, other.Masters()[1].Addr, ",", "copy 1's range is on two primaries now")
	require.NoError(t, l.Extend(bg, 10*time.Second)) // copies 0 and 2 (copy 1 answers MOVED)
	require.Eventually(t, func() bool { addr, _ := copyAt(c, 1, "k"); return addr == cl.Primary(to).Addr() }, 5*time.Second, 10*time.Millisecond)
	states := inspectAll(t, l.Inspect, nil)
	assert.True(t, states[1].Ours, "copy 1's key moved with its slot")
	require.NoError(t, l.Unlock(bg))
	l, err = other.TryLock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg))
}

// TestClusterWakeUps: over a cluster too, a waiting Lock is woken by the
// release (each copy publishes on its own channel, heard on its own
// server), well before its retry delay.
func TestClusterWakeUps(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
	holder := clusterClient(t, cl, Config{})
	waiter := clusterClient(t, cl, Config{RetryDelay: 5 * time.Second})
	for round := range 3 {
		l, err := holder.TryLock(bg, "woken", 10*time.Second)
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			wl, err := waiter.Lock(ctx, "woken", 10*time.Second)
			if err == nil {
				err = wl.Unlock(bg)
			}
			got <- err
		}()
		require.Eventually(t, func() bool { return waiter.room.waiting.Load() > 0 }, 5*time.Second, time.Millisecond)
		time.Sleep(50 * time.Millisecond) // subscribed by now
		released := time.Now()
		require.NoError(t, l.Unlock(bg))
		require.NoError(t, <-got, "round %d", round)
		took := time.Since(released)
		assert.Less(t, took, 2*time.Second, "round %d: woken by the release, not the 5s retry delay", round)
		t.Logf("round %d: the waiter had the lock %v after the release", round, took)
	}
}

// TestClusterDefaults: without FailoverGrace, a cluster Client holds a
// moved copy out for the cluster's node timeout (1s here) plus a second,
// read at New; a user without +config|get gets the 15s default; a given
// FailoverGrace stands. Three copies by default, however many primaries.
func TestClusterDefaults(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Shards: 4, Replicas: -1})
	c := clusterClient(t, cl, Config{})
	assert.Equal(t, 2*time.Second, c.FailoverGrace(), "cluster-node-timeout 1s + 1s")
	assert.Len(t, c.Masters(), 3, "three copies on four primaries")
	assert.Equal(t, 2, c.Quorum())
	c = clusterClient(t, cl, Config{FailoverGrace: 300 * time.Millisecond})
	assert.Equal(t, 300*time.Millisecond, c.FailoverGrace())

	for _, n := range cl.Nodes() {
		require.NoError(t, n.Command("ACL", "SETUSER", "noconfig", "on", ">pw", "allcommands", "-config", "allkeys", "allchannels"))
	}
	c = clusterClient(t, cl, Config{Conn: Connection{Username: "noconfig", Password: "pw"}})
	assert.Equal(t, 15*time.Second, c.FailoverGrace(), "CONFIG GET refused: the default")
}

// TestClusterRefusesEarlierLayout: a cluster that holds the record of a
// Client of the earlier layout (a bare number of copies under copy 0's
// old tag) fails New with what to do; a Client of this layout leaves a
// record that a Client of the earlier layout, which reads it there,
// would refuse ("spread:3" is not its number).
func TestClusterRefusesEarlierLayout(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
	clusterClient(t, cl, Config{})
	for _, tag := range legacyTags(3) {
		vals, err := redistest.Do(cl.Primary(cl.ShardOf(slot.Of(tag))).Addr(), "GET", tag+copiesKey)
		require.NoError(t, err)
		assert.Equal(t, "spread:3", string(vals[0].Bytes), "the record at %s", tag)
		_, err = redistest.Do(cl.Primary(cl.ShardOf(slot.Of(tag))).Addr(), "SET", tag+copiesKey, "3")
		require.NoError(t, err)
	}
	_, err := New(bg, Config{Addrs: []string{clusterAddr(cl, "")}, DisableRestartGuard: true})
	require.ErrorIs(t, err, ErrMasterUnusable)
	require.ErrorContains(t, err, "earlier cluster layout")
	require.ErrorContains(t, err, "delete the keys")
}

// TestClusterSlotMigrating: while copy 1's slot of some keys migrates
// (the source MIGRATING, the destination IMPORTING), the source answers
// ASK for the keys it does not have: the Client asks the importing node
// again, behind ASKING, and copy 1 votes. Each of 100 keys is taken on
// copy 0 by a stranger, so that a lock needs copy 1's vote: all 100 are
// granted; the broken variant without the retry (noAsking) grants none.
// Each also with every burst served by the Group's driver, which sends
// the command again from where it reads the ASK (op.hear).
func TestClusterSlotMigrating(t *testing.T) {
	for _, tc := range []struct{ broken, driven bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		broken := tc.broken
		t.Run(fmt.Sprintf("noAsking=%v/driven=%v", tc.broken, tc.driven), func(t *testing.T) {
			setDriven(t, tc.driven)
			granted := migratingGrants(t, broken)
			t.Logf("locks granted with copy 1's slot migrating and copy 0 taken: %d of 100", granted)
			if broken {
				assert.Zero(t, granted, "the broken variant loses copy 1's vote")
			} else {
				assert.Equal(t, 100, granted)
			}
		})
	}
}

// migratingGrants puts copy 1's slot of the keys "{m}:i" in migration,
// takes each key on copy 0 for a stranger, and returns how many of 100
// TryLocks were granted, with noAsking set to broken.
func migratingGrants(t *testing.T, broken bool) int {
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
	c := clusterClient(t, cl, Config{})
	addr0, tag0 := copyAt(c, 0, "{m}")
	_, tag1 := copyAt(c, 1, "{m}")
	s := slot.Of(tag1)
	from, to := cl.ShardOf(s), (cl.ShardOf(s)+1)%3
	src, dst := cl.Primary(from).Addr(), cl.Primary(to).Addr()
	id := func(addr string) string {
		vals, err := redistest.Do(addr, "CLUSTER", "MYID")
		require.NoError(t, err)
		return string(vals[0].Bytes)
	}
	_, err := redistest.Do(dst, "CLUSTER", "SETSLOT", strconv.Itoa(s), "IMPORTING", id(src))
	require.NoError(t, err)
	_, err = redistest.Do(src, "CLUSTER", "SETSLOT", strconv.Itoa(s), "MIGRATING", id(dst))
	require.NoError(t, err)
	noAsking = broken
	defer func() { noAsking = false }()
	granted := 0
	for i := range 100 {
		key := fmt.Sprintf("{m}:%d", i)
		_, err := redistest.Do(addr0, "SET", tag0+key, "a stranger's token", "PX", "10000")
		require.NoError(t, err)
		l, err := c.TryLock(bg, key, 10*time.Second)
		if err != nil {
			require.ErrorIs(t, err, ErrNotAcquired)
			continue
		}
		granted++
		if i == 0 {
			states := inspectAll(t, l.Inspect, nil)
			assert.True(t, states[1].Ours, "copy 1's key is on the importing node")
			assert.Equal(t, dst, states[1].Addr)
		}
		require.NoError(t, l.Unlock(bg))
	}
	return granted
}

// TestClusterFailoverGuardsTheMovedNodeOnly: on six primaries, copy 0's
// range is served by two of them. A failover of one holds out copy 0's
// votes from the promoted replica (its keys may have lost writes), but
// not copy 0's votes from the other primary of the range.
func TestClusterFailoverGuardsTheMovedNodeOnly(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Shards: 6})
	c := clusterClient(t, cl, Config{MaxTTL: 3 * time.Second, FailoverGrace: 500 * time.Millisecond})
	unguarded(t, c)
	// Two keys whose copy 0 lives on different primaries.
	a, b := "a", ""
	addrA, tagA := copyAt(c, 0, a)
	for i := 0; b == ""; i++ {
		if addr, _ := copyAt(c, 0, fmt.Sprint("b", i)); addr != addrA {
			b = fmt.Sprint("b", i)
		}
	}
	shard := cl.ShardOf(slot.Of(tagA))
	require.NoError(t, cl.Failover(shard))
	promoted := cl.Primary(shard).Addr()
	require.Eventually(t, func() bool {
		if l, err := c.TryLock(bg, a, time.Second); err == nil { // a MOVED has the Client look
			require.NoError(t, l.Unlock(bg))
		}
		addr, _ := copyAt(c, 0, a)
		return addr == promoted
	}, 5*time.Second, 20*time.Millisecond)

	p := c.placement(a)
	_, _, guardedA := c.guarded(c.masters[0], c.connFor(0, p), time.Now())
	assert.True(t, guardedA, "copy 0 on the promoted replica %s is held out", promoted)
	pb := c.placement(b)
	_, _, guardedB := c.guarded(c.masters[0], c.connFor(0, pb), time.Now())
	assert.False(t, guardedB, "copy 0 on %s, whose slots did not move, is not", c.connFor(0, pb).Addr())
	_, _, guardedB1 := c.guarded(c.masters[1], c.connFor(1, pb), time.Now())
	assert.False(t, guardedB1, "nor are the other copies")

	lb, err := c.TryLock(bg, b, time.Second)
	require.NoError(t, err)
	states := inspectAll(t, lb.Inspect, nil)
	assert.True(t, states[0].Ours)
	require.NoError(t, lb.Unlock(bg))
}

// TestClusterCopiesSharedEvent: a resharding that moves copy 1's slot to
// copy 2's primary puts both copies of some keys on one primary: the
// Client says so when it reads the new map (EventCopiesShared, and
// Masters' SharesWith), and says when they are apart again.
func TestClusterCopiesSharedEvent(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
	events := make(chan Event, 16)
	c := clusterClient(t, cl, Config{Hooks: Hooks{Event: func(ev Event, key string) {
		if ev == EventCopiesShared || ev == EventCopiesApart {
			assert.Empty(t, key)
			events <- ev
		}
	}}})
	for _, m := range c.Masters() {
		assert.Empty(t, m.SharesWith, "three primaries, three copies: none shared")
	}
	_, tag2 := copyAt(c, 2, "k")
	_, tag1 := copyAt(c, 1, "k")
	from, to := cl.ShardOf(slot.Of(tag1)), cl.ShardOf(slot.Of(tag2))
	require.NoError(t, cl.MoveSlot(slot.Of(tag1), to))
	require.Eventually(t, func() bool {
		if l, err := c.TryLock(bg, "k", time.Second); err == nil { // a MOVED has the Client look
			require.NoError(t, l.Unlock(bg))
		}
		addr, _ := copyAt(c, 1, "k")
		return addr == cl.Primary(to).Addr()
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, EventCopiesShared, nextEvent(events))
	ms := c.Masters()
	assert.Equal(t, []int{2}, ms[1].SharesWith)
	assert.Equal(t, []int{1}, ms[2].SharesWith)
	assert.Empty(t, ms[0].SharesWith)

	require.NoError(t, cl.MoveSlot(slot.Of(tag1), from))
	require.Eventually(t, func() bool {
		if l, err := c.TryLock(bg, "k", time.Second); err == nil {
			require.NoError(t, l.Unlock(bg))
		}
		addr, _ := copyAt(c, 1, "k")
		return addr == cl.Primary(from).Addr()
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, EventCopiesApart, nextEvent(events))
	for _, m := range c.Masters() {
		assert.Empty(t, m.SharesWith)
	}
	assert.Empty(t, events, "one event per change")
}

// nextEvent returns the next event from events, or 0 if none comes
// within two seconds.
func nextEvent(events <-chan Event) Event {
	select {
	case ev := <-events:
		return ev
	case <-time.After(2 * time.Second):
		return 0
	}
}
