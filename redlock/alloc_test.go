//go:build !race

package redlock

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// steady runs op until the operations' pools hold what is in flight in
// steady state, so that AllocsPerRun measures that state (#31: run once,
// then measured, "fenced TryLock on a taken key" allocated on a loaded
// machine). A decided burst abandons the masters that had not answered
// yet, and their requests come back to the pool only when their replies
// are read, at most MasterTimeout/2 after sending (see conn.NewGroup); on
// a busy machine more bursts are decided early and more requests are out
// at once, so the warm-up lasts longer than that bound.
func steady(op func()) {
	// A garbage collection empties the pools (sync.Pool keeps its items
	// for at most two cycles), and until the late replies of the next
	// 500ms come back every burst then allocates its requests anew: seen
	// once in 30 runs as "TryLockMulti on taken keys" at 1 alloc per op.
	// That is the cost of a collection, amortized over the collection's
	// cycle, not of an operation: the measurement runs without one.
	debug.SetGCPercent(-1)
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		op()
	}
}

// allocs is op's allocations per run in the steady state:
// testing.AllocsPerRun over 200 runs, measured again (at most twice more)
// when it is not zero, and the least kept. A burst decided before every
// master answered leaves requests that the late replies give back to the
// pool; on a starved machine (test-stress's GOMAXPROCS=1 stage) one
// measurement can run ahead of those replies and count the pool's refill
// (seen once, "TryLockMulti on taken keys" at 1 alloc per op). An
// allocation that every operation makes shows in every measurement, so
// the least of three is still the exact count.
func allocs(op func()) float64 {
	best := testing.AllocsPerRun(200, op)
	for i := 0; i < 2 && best > 0; i++ {
		best = min(best, testing.AllocsPerRun(200, op))
	}
	return best
}

// lockAllocs pins, for TestAllocs and TestAllocsDriven, the allocations
// of c's TryLock+Unlock, Extend, TryLockMulti+Unlock and of other's
// TryLock on a key c holds: zero. It returns the multi-lock's keys.
func lockAllocs(t *testing.T, c, other *Client, ttl time.Duration) []string {
	t.Helper()
	lockUnlock := func() {
		l, err := c.TryLock(bg, "alloc", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	steady(lockUnlock)
	require.Zero(t, allocs(lockUnlock), "TryLock+Unlock")

	held, err := c.TryLock(bg, "alloc", ttl)
	require.NoError(t, err)
	extend := func() {
		if err := held.Extend(bg, ttl); err != nil {
			t.Fatal(err)
		}
	}
	steady(extend)
	require.Zero(t, allocs(extend), "Extend")

	taken := func() {
		if _, err := other.TryLock(bg, "alloc", ttl); err != ErrNotAcquired {
			t.Fatal(err)
		}
	}
	steady(taken)
	require.Zero(t, allocs(taken), "TryLock on a taken key")
	require.NoError(t, held.Unlock(bg))

	keys := []string{"alloc:d", "alloc:b", "alloc:c", "alloc:a"}
	lockUnlockMulti := func() {
		l, err := c.TryLockMulti(bg, keys, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	steady(lockUnlockMulti)
	require.Zero(t, allocs(lockUnlockMulti), "TryLockMulti+Unlock of 4 keys")

	return keys
}

// TestAllocs pins the steady-state allocations of the lock operations on
// five real masters: zero, on success and on a plain "taken" failure.
func TestAllocs(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	servers := masters(t, 5)
	c := client(t, servers, Config{MasterTimeout: time.Second})
	other := client(t, servers, Config{MasterTimeout: time.Second})
	const ttl = 10 * time.Second
	keys := lockAllocs(t, c, other, ttl)

	heldMulti, err := c.TryLockMulti(bg, keys, ttl)
	require.NoError(t, err)
	extendMulti := func() {
		if err := heldMulti.Extend(bg, ttl); err != nil {
			t.Fatal(err)
		}
	}
	steady(extendMulti)
	require.Zero(t, allocs(extendMulti), "Extend of 4 keys")
	takenMulti := func() {
		if _, err := other.TryLockMulti(bg, keys, ttl); err != ErrNotAcquired {
			t.Fatal(err)
		}
	}
	steady(takenMulti)
	require.Zero(t, allocs(takenMulti), "TryLockMulti on taken keys")
	require.NoError(t, heldMulti.Unlock(bg))

	// Fenced: one round (the proposal taken), still nothing allocated, on
	// success or taken; the fallback round is TestFenceOneRound's.
	f := client(t, servers, Config{MasterTimeout: time.Second, Fencing: true})
	fencedLockUnlock := func() {
		l, err := f.TryLock(bg, "alloc:fenced", ttl)
		if err != nil || l.Fence() == 0 {
			t.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	steady(fencedLockUnlock)
	require.Zero(t, allocs(fencedLockUnlock), "fenced TryLock+Unlock")
	heldFenced, err := f.TryLock(bg, "alloc:fenced", ttl)
	require.NoError(t, err)
	fencedTaken := func() {
		if _, err := f.TryLock(bg, "alloc:fenced", ttl); err != ErrNotAcquired {
			t.Fatal(err)
		}
	}
	steady(fencedTaken)
	require.Zero(t, allocs(fencedTaken), "fenced TryLock on a taken key")
	require.NoError(t, heldFenced.Unlock(bg))
	fencedMulti := func() {
		l, err := f.TryLockMulti(bg, keys, ttl)
		if err != nil || l.Fence() == 0 {
			t.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	steady(fencedMulti)
	require.Zero(t, allocs(fencedMulti), "fenced TryLockMulti+Unlock of 4 keys")

	// A waiting Lock allocates when it starts to wait (join), not per
	// round: each round is a waiting attempt that finds the key taken, the
	// quiet release of that attempt, the wait it computes, and a wait that
	// a release's wake-up ends. These are the pieces of acquire's loop.
	heldWait, err := c.TryLock(bg, "alloc:wait", ttl)
	require.NoError(t, err)
	w, _ := other.room.join(bg, "alloc:wait", nil)
	o := other.getOp()
	round := func() {
		tok := newToken()
		o.waiting = true
		o.encode(other.lockCommand(false, true), args{key: "alloc:wait", tok: &tok, arg: o.ttlArg(ttl)})
		br := o.run(nil)
		if br.ok >= other.quorum || br.taken < other.quorum {
			t.Fatalf("a waiting attempt on a held key: %+v", br)
		}
		o.releaseAfterFailure("alloc:wait", nil, &tok, false)
		d, split, holder, held := other.waitDelay(w, o, &tok, &br, 2, 0, time.Since(br.start))
		if split {
			t.Fatal("one holder has the key: not a split")
		}
		w.wake <- struct{}{} // a release woke it
		if !held {
			t.Fatal("one holder has the key")
		}
		if ok, woken := other.room.wait(bg, w, o.timer, d, false, &holder); !ok || !woken {
			t.Fatal("the wake-up did not end the wait")
		}
	}
	round()
	require.Zero(t, allocs(round), "a waiting round")
	o.waiting = false
	other.putOp(o)
	other.room.leave(w, false)
	require.NoError(t, heldWait.Unlock(bg))
}

// TestAllocsSemaphore pins a semaphore's steady-state allocations on five
// real masters: zero for Acquire+Release, Extend, and a TryAcquire that
// finds every permit taken.
func TestAllocsSemaphore(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	servers := masters(t, 5)
	c := client(t, servers, Config{MasterTimeout: time.Second})
	const ttl = 10 * time.Second
	s, err := c.Semaphore("alloc:sem", 4)
	require.NoError(t, err)

	acquireRelease := func() {
		p, err := s.Acquire(bg, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
	steady(acquireRelease)
	require.Zero(t, allocs(acquireRelease), "Acquire+Release")

	f := client(t, servers, Config{MasterTimeout: time.Second, Fencing: true})
	fs, err := f.Semaphore("alloc:sem:fenced", 4)
	require.NoError(t, err)
	fencedAcquireRelease := func() {
		p, err := fs.Acquire(bg, ttl)
		if err != nil || p.Fence() == 0 {
			t.Fatal(err, p.Fence())
		}
		if err := p.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
	steady(fencedAcquireRelease)
	require.Zero(t, allocs(fencedAcquireRelease), "fenced Acquire+Release")

	one, err := c.Semaphore("alloc:one", 1)
	require.NoError(t, err)
	held, err := one.Acquire(bg, ttl)
	require.NoError(t, err)
	extend := func() {
		if err := held.Extend(bg, ttl); err != nil {
			t.Fatal(err)
		}
	}
	steady(extend)
	require.Zero(t, allocs(extend), "Permit.Extend")

	taken := func() {
		if _, err := one.TryAcquire(bg, ttl); err != ErrNotAcquired {
			t.Fatal(err)
		}
	}
	steady(taken)
	require.Zero(t, allocs(taken), "TryAcquire with every permit taken")
	require.NoError(t, held.Release(bg))
}

// TestAllocsRWMutex pins a read-write lock's steady-state allocations on
// five real masters: zero for RLock+Unlock, a read lock's Extend, and the
// writer's Lock+Unlock, fenced or not.
func TestAllocsRWMutex(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	servers := masters(t, 5)
	c := client(t, servers, Config{MasterTimeout: time.Second})
	const ttl = 10 * time.Second
	rw, err := c.RWMutex("alloc:rw")
	require.NoError(t, err)

	readUnlock := func() {
		r, err := rw.RLock(bg, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	steady(readUnlock)
	require.Zero(t, allocs(readUnlock), "RLock+Unlock")

	writeUnlock := func() {
		l, err := rw.Lock(bg, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	steady(writeUnlock)
	require.Zero(t, allocs(writeUnlock), "Lock+Unlock of the writer")

	f := client(t, servers, Config{MasterTimeout: time.Second, Fencing: true})
	frw, err := f.RWMutex("alloc:rw:fenced")
	require.NoError(t, err)
	fencedWriteUnlock := func() {
		l, err := frw.Lock(bg, ttl)
		if err != nil || l.Fence() == 0 {
			t.Fatal(err, l.Fence())
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	steady(fencedWriteUnlock)
	require.Zero(t, allocs(fencedWriteUnlock), "Lock+Unlock of a fenced writer")

	held, err := rw.RLock(bg, ttl)
	require.NoError(t, err)
	extend := func() {
		if err := held.Extend(bg, ttl); err != nil {
			t.Fatal(err)
		}
	}
	steady(extend)
	require.Zero(t, allocs(extend), "ReadLock.Extend")
	require.NoError(t, held.Unlock(bg))
}

// TestAllocsCluster pins TryLock+Unlock over a 3-primary Redis Cluster,
// unfenced and fenced (the cluster forms of the fencing scripts, the
// counter and the check's keys behind the copy's tag), at zero
// allocations in steady state, as over standalone masters, on the lone
// caller's path and on the driver's.
func TestAllocsCluster(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer func() { alwaysDriven = drivenByDefault }()
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
	const ttl = 10 * time.Second
	for _, fencing := range []bool{false, true} {
		c := clusterClient(t, cl, Config{MasterTimeout: time.Second, Fencing: fencing})
		// A fresh place's counters are unsure until the first repair.
		require.Eventually(t, func() bool {
			l, err := c.TryLock(bg, "alloc", ttl)
			return err == nil && l.Unlock(bg) == nil
		}, 10*time.Second, 10*time.Millisecond)
		lockUnlock := func() {
			l, err := c.TryLock(bg, "alloc", ttl)
			if err != nil || fencing && l.Fence() == 0 {
				t.Fatal(err)
			}
			if err := l.Unlock(bg); err != nil {
				t.Fatal(err)
			}
		}
		for _, driven := range []bool{false, true} {
			alwaysDriven = driven
			steady(lockUnlock)
			require.Zero(t, allocs(lockUnlock), "TryLock+Unlock over a cluster, fencing %v, driven %v", fencing, driven)
		}
		alwaysDriven = drivenByDefault
	}
}

// TestAllocsLeadershipRenewal pins a steady leadership's renewal on five
// real masters: zero allocations per renewal (one batch of the shared
// renewer, with the leader's record), in the whole process, on the lone
// caller's path and on the driver's.
func TestAllocsLeadershipRenewal(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer func() { alwaysDriven = drivenByDefault }()
	servers := masters(t, 5)
	extended := make(chan struct{}, 1)
	c := client(t, servers, Config{MasterTimeout: time.Second, Fencing: true, Hooks: Hooks{
		Event: func(ev Event, _ string) {
			if ev == EventExtended {
				extended <- struct{}{}
			}
		},
	}})
	e, err := c.Election("alloc:election", 10*time.Second)
	require.NoError(t, err)
	l, err := e.Campaign(bg, "leader")
	require.NoError(t, err)
	renew := func() {
		before := l.Until()
		r := c.renew
		r.mu.Lock()
		l.renewal.due = time.Now()
		r.mu.Unlock()
		r.poke()
		<-extended
		if !l.Until().After(before) {
			t.Fatal("not extended")
		}
	}
	for _, driven := range []bool{false, true} {
		alwaysDriven = driven
		steady(renew)
		require.Zero(t, allocs(renew), "a leadership's renewal, driven %v", driven)
		// Read after the batch's event: the renewer set it before.
		require.Equal(t, driven, c.renew.fan.driven, "the batch went to the driver")
	}
	alwaysDriven = drivenByDefault
	require.NoError(t, l.Resign(bg))
}

// matrixBinary returns the server binary make servers installed as name
// (such as "valkey-9.1.2") in the module's .servers folder, or "".
func matrixBinary(t *testing.T, name string) string {
	t.Helper()
	kind, _, _ := strings.Cut(name, "-")
	bin, err := filepath.Abs(filepath.Join("..", ".servers", name, "bin", kind+"-server"))
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		return ""
	}
	return bin
}

// TestAllocsNative pins the native path's steady-state allocations on
// five real masters of three kinds in one burst: two Valkey 9 (DELIFEQ),
// two Redis 8.6 (DELEX IFEQ), both with SET IFEQ, and one of the system's
// server (scripts, on Redis 7.0): zero for TryLock+Unlock (a native
// release and its SPUBLISH in one write), Extend, and a waiting round with
// the quiet release of its failed attempt, on the lone caller's path and
// on the driver's. It needs make servers.
func TestAllocsNative(t *testing.T) {
	valkey, redis := matrixBinary(t, "valkey-9.1.2"), matrixBinary(t, "redis-8.6.3")
	if valkey == "" || redis == "" {
		t.Skip("needs valkey-9.1.2 and redis-8.6.3 in .servers (make servers)")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	var servers []*redistest.Server
	// The fifth is the system's redis-server (7.0) by name, not the
	// default: a pass of make test (REDIS_SERVER) makes the default
	// Valkey 9 or Redis 8.6, whose release would be native too.
	for _, bin := range []string{valkey, valkey, redis, redis, "redis-server"} {
		servers = append(servers, redistest.Start(t, redistest.Options{Binary: bin}))
	}
	c := client(t, servers, Config{MasterTimeout: time.Second})
	other := client(t, servers, Config{MasterTimeout: time.Second})
	native := 0
	for _, m := range c.masters {
		if _, ok := c.nativeFor(&cmdRelease, m.conn()); ok {
			native++
		}
	}
	require.Equal(t, 4, native, "masters that get a native release")
	const ttl = 10 * time.Second

	lockUnlock := func() {
		l, err := c.TryLock(bg, "alloc:native", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
	}
	held, err := c.TryLock(bg, "alloc:native:held", ttl)
	require.NoError(t, err)
	extend := func() {
		if err := held.Extend(bg, ttl); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { alwaysDriven = drivenByDefault }()
	for _, driven := range []bool{false, true} {
		alwaysDriven = driven
		steady(lockUnlock)
		require.Zero(t, allocs(lockUnlock), "TryLock+Unlock, native, driven %v", driven)
		steady(extend)
		require.Zero(t, allocs(extend), "Extend, native, driven %v", driven)
	}
	alwaysDriven = drivenByDefault
	require.NoError(t, held.Unlock(bg))
	held, err = c.TryLock(bg, "alloc:native", ttl)
	require.NoError(t, err)

	w, _ := other.room.join(bg, "alloc:native", nil)
	o := other.getOp()
	round := func() {
		tok := newToken()
		o.waiting = true
		o.encode(other.lockCommand(false, true), args{key: "alloc:native", tok: &tok, arg: o.ttlArg(ttl)})
		br := o.run(nil)
		if br.ok >= other.quorum || br.taken < other.quorum {
			t.Fatalf("a waiting attempt on a held key: %+v", br)
		}
		o.releaseAfterFailure("alloc:native", nil, &tok, true) // native, with its SPUBLISH
	}
	for _, driven := range []bool{false, true} {
		alwaysDriven = driven
		steady(round)
		require.Zero(t, allocs(round), "a waiting attempt and its release, native, driven %v", driven)
	}
	alwaysDriven = drivenByDefault
	o.waiting = false
	other.putOp(o)
	other.room.leave(w, false)
	require.NoError(t, held.Unlock(bg))
	require.Zero(t, c.nativeOff.Load()+other.nativeOff.Load(), "no native command refused")
}

// TestAllocsDriven pins the steady-state allocations of the lock
// operations served by the Group's driver (as under load, when a lone
// caller's claim is not to be had): zero, as on the lone caller's path.
func TestAllocsDriven(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	setDriven(t, true)
	servers := masters(t, 5)
	c := client(t, servers, Config{MasterTimeout: time.Second})
	other := client(t, servers, Config{MasterTimeout: time.Second})
	lockAllocs(t, c, other, 10*time.Second)
}
