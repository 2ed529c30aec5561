package redlock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/internal/redistest"
)

// TestWaitRunOutLooksInsteadOfAttempting: a waiting Lock whose waits run
// out while another Client holds the key looks at one master per wait
// (one MGET, see peek.go), and makes no attempt; the release still wakes
// it.
func TestWaitRunOutLooksInsteadOfAttempting(t *testing.T) {
	attempts, looks := waitsRunOut(t)
	assert.Zero(t, attempts, "a wait that ran out attempted")
	assert.GreaterOrEqual(t, looks, 5, "the waits that ran out did not look")
	assert.LessOrEqual(t, looks, maxLooks, "the looks asked more than one master each")
}

// TestWaitRunOutWithoutLooksAttempts is the broken variant of
// TestWaitRunOutLooksInsteadOfAttempting: without looks, every wait that
// runs out is an attempt.
func TestWaitRunOutWithoutLooksAttempts(t *testing.T) {
	noPeek = true
	t.Cleanup(func() { noPeek = false })
	attempts, looks := waitsRunOut(t)
	assert.GreaterOrEqual(t, attempts, 5, "without looks, the waits that ran out should attempt")
	assert.Zero(t, looks)
}

// TestLooksAtEveryMasterSendMore is the other broken variant: looks that
// ask every master send more MGETs than one-master looks can.
func TestLooksAtEveryMasterSendMore(t *testing.T) {
	lookEveryMaster = true
	t.Cleanup(func() { lookEveryMaster = false })
	_, looks := waitsRunOut(t)
	assert.Greater(t, looks, maxLooks, "looks at every master should send more than one MGET per wait")
}

// maxLooks bounds the MGETs that waitsRunOut's waiter can send in its
// window with one-master looks: one per wait, each at least RetryDelay/2
// (20 ms) long. Looks at all five masters send five per wait, so they
// exceed it once the window holds 11 waits of its 30.
const maxLooks = 600/20 + 1

// waitsRunOut has a Client with a RetryDelay of 40 ms Lock a key that
// another holds for 10 s on five masters, counts on all masters the
// attempts (EVALSHA) and looks (MGET) in 600 ms of its waiting, then
// releases the key and requires that the waiter got it.
func waitsRunOut(t *testing.T) (attempts, looks int) {
	t.Helper()
	servers := masters(t, 5)
	holder := client(t, servers, Config{DisableNativeCommands: true, HandOffAfter: -1})
	var failed atomic.Int32
	cfg := waiterConfig(Config{DisableNativeCommands: true}, &failed)
	cfg.RetryDelay = 40 * time.Millisecond
	release := waitBehind(t, holder, client(t, servers, cfg), "peek", &failed)
	before := make([]map[string]int, len(servers))
	for i, s := range servers {
		before[i] = commandCalls(t, s.Addr())
	}
	time.Sleep(600 * time.Millisecond)
	for i, s := range servers {
		after := commandCalls(t, s.Addr())
		attempts += after["evalsha"] - before[i]["evalsha"]
		looks += after["mget"] - before[i]["mget"]
	}
	release()
	return attempts, looks
}

// waitBehind has holder take key for 10 s and w Lock it in the
// background, and returns once w failed its attempts before and after it
// subscribed (failed counts them: see waiterConfig). release unlocks the
// holder's lock and requires that w got the key within 5 s.
func waitBehind(t *testing.T, holder, w *Client, key string, failed *atomic.Int32) (release func()) {
	t.Helper()
	l, err := holder.TryLock(bg, key, 10*time.Second)
	require.NoError(t, err)
	got := waiterInBackground(t, w, key, failed)
	return func() {
		t.Helper()
		require.NoError(t, l.Unlock(bg))
		wokenWaiterTook(t, got)
	}
}

// waiterInBackground has w Lock key for 10 s (within 20 s) in the
// background and Unlock it once taken, and returns once w failed its
// attempts before and after it subscribed (failed counts them: see
// waiterConfig). The channel gets the Lock's error, else the Unlock's.
func waiterInBackground(t *testing.T, w *Client, key string, failed *atomic.Int32) <-chan error {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	t.Cleanup(cancel)
	got := make(chan error, 1)
	go func() {
		wl, err := w.Lock(ctx, key, 10*time.Second)
		if err == nil {
			err = wl.Unlock(bg)
		}
		got <- err
	}()
	require.Eventually(t, func() bool { return failed.Load() >= 2 }, 10*time.Second, 5*time.Millisecond,
		"the waiter failed its attempts before and after it subscribed")
	return got
}

// wokenWaiterTook requires that the waiter of waiterInBackground, which a
// release just woke, took the key (and let it go) within 5 s.
func wokenWaiterTook(t *testing.T, got <-chan error) {
	t.Helper()
	select {
	case err := <-got:
		require.NoError(t, err, "the woken waiter did not take the key")
	case <-time.After(5 * time.Second):
		t.Fatal("the release did not wake the waiter")
	}
}

// TestLookSeesKeyFreedWithoutRelease: a key that leaves the masters
// without a release (it expired, its holder crashed) is taken by the
// waiter at its next look, within a few RetryDelays, not at its
// context's end.
func TestLookSeesKeyFreedWithoutRelease(t *testing.T) {
	servers := masters(t, 3)
	holder := client(t, servers, Config{DisableNativeCommands: true})
	_, err := holder.TryLock(bg, "gone", 10*time.Second)
	require.NoError(t, err)
	var failed atomic.Int32
	cfg := waiterConfig(Config{}, &failed)
	cfg.RetryDelay = 40 * time.Millisecond
	w := client(t, servers, cfg)
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := w.Lock(ctx, "gone", 10*time.Second)
		got <- err
	}()
	require.Eventually(t, func() bool { return failed.Load() >= 2 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // a look or two that finds it held
	for _, s := range servers {
		_, err := redistest.Do(s.Addr(), "DEL", "gone")
		require.NoError(t, err)
	}
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not take the key that left without a release")
	}
}

// TestFreeLookIsConfirmed: a look that finds the key free once, while it
// is held (as in a fleet's turn, between a release and the same Client's
// next take), leads to a second look, not an attempt.
func TestFreeLookIsConfirmed(t *testing.T) {
	assert.Zero(t, attemptsAfterFreeLook(t), "an attempt followed a look whose second look found the key held")
}

// TestUnconfirmedFreeLookAttempts is the broken variant of
// TestFreeLookIsConfirmed: without the second look, the free look leads
// to an attempt.
func TestUnconfirmedFreeLookAttempts(t *testing.T) {
	noConfirmLook = true
	t.Cleanup(func() { noConfirmLook = false })
	assert.Positive(t, attemptsAfterFreeLook(t), "without the second look, a free look should lead to an attempt")
}

// attemptsAfterFreeLook has a Client with a RetryDelay of 40 ms Lock a
// key that another holds for 10 s on three fake masters, makes each
// master answer the waiter's next look with the key free (and nobody
// named), and returns the attempts the waiter made in the 400 ms after.
// It then releases the key and requires that the waiter got it.
func attemptsAfterFreeLook(t *testing.T) int32 {
	t.Helper()
	servers, addrs := fakeMasters(t, 3)
	holder := fakeClient(t, addrs, Config{HandOffAfter: -1})
	var failed atomic.Int32
	cfg := waiterConfig(Config{}, &failed)
	cfg.RetryDelay = 40 * time.Millisecond
	release := waitBehind(t, holder, fakeClient(t, addrs, cfg), "confirm", &failed)
	before := failed.Load()
	for _, s := range servers {
		s.SetFault("MGET", fakeredis.Fault{Raw: []byte("*2\r\n$-1\r\n$-1\r\n"), Times: 1})
	}
	time.Sleep(400 * time.Millisecond)
	attempts := failed.Load() - before
	release()
	return attempts
}

// TestLookAfterShortCopiesAsksOneMaster: when the last attempt's "taken"
// answers say the copies (of the key, or of the name that refused it)
// expire within RetryDelay, the look still asks one master: one of those
// whose copies are among the first quorum to expire, at which the wait
// before the look ends. A master whose copy outlives that, or that did
// not answer "taken", is never drawn; without short copies, any master
// that answered "taken" is.
func TestLookAfterShortCopiesAsksOneMaster(t *testing.T) {
	c := client(t, masters(t, 5), Config{RetryDelay: 200 * time.Millisecond})
	o := c.getOp()
	defer c.putOp(o)
	require.Len(t, o.res, 5)
	draws := func() map[int]int {
		seen := map[int]int{}
		for range 500 {
			seen[o.learn.lookAt(o.res, c.quorum, c.cfg.RetryDelay)]++
		}
		return seen
	}
	// A name that lives 200 ms refused the attempt on four masters, with
	// different PTTLs; the fifth timed out.
	for i, ms := range []int{190, 150, 170, 195, 0} {
		o.res[i].Outcome, o.learn.hasHolder[i], o.learn.pttl[i] = OutcomeTaken, true, time.Duration(ms)*time.Millisecond
	}
	o.res[4].Outcome, o.learn.hasHolder[4] = OutcomeTimeout, false
	seen := draws()
	assert.NotContains(t, seen, -1, "a look at every master")
	for _, i := range []int{1, 2, 0} {
		assert.Positive(t, seen[i], "master %d, among the first quorum (3) to expire, never drawn", i)
	}
	assert.Zero(t, seen[3], "master 3's copy outlives the quorum's")
	assert.Zero(t, seen[4], "master 4 did not answer")
	// A master that took the attempt's key counts as free from the
	// start: the first quorum is then it and the two earliest copies.
	o.res[3].Outcome, o.learn.hasHolder[3] = OutcomeOK, false
	seen = draws()
	assert.Positive(t, seen[1])
	assert.Positive(t, seen[2])
	assert.Zero(t, seen[0], "master 0's copy outlives the quorum's")
	assert.Zero(t, seen[3], "master 3 said yes: nothing to look at")
	// Copies that outlive RetryDelay: any master that answered "taken".
	for i := range 5 {
		o.res[i].Outcome, o.learn.hasHolder[i], o.learn.pttl[i] = OutcomeTaken, true, 10*time.Second
	}
	seen = draws()
	for i := range 5 {
		assert.Positive(t, seen[i], "master %d never drawn", i)
	}
}
