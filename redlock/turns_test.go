package redlock

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/scripts"
)

// enrollStranger puts a waiter of no Client, "stranger", among key's
// waiters on every master with score at (unix ms), and leaves the mark
// a waiting attempt leaves (scripts.ListenSuffix): a waiter of another
// process that a release may wake, and that never takes the key.
func enrollStranger(t *testing.T, servers []*redistest.Server, key string, at time.Time) {
	t.Helper()
	for _, s := range servers {
		_, err := redistest.Do(s.Addr(), "ZADD", key+scripts.WaitersSuffix, strconv.FormatInt(at.UnixMilli(), 10), "stranger")
		require.NoError(t, err)
		_, err = redistest.Do(s.Addr(), "SET", key+scripts.ListenSuffix, "1", "PX", "60000")
		require.NoError(t, err)
	}
}

// strangers counts, on each master, whether the stranger still waits
// (ZSCORE) and whether a release named it on the key.
func strangers(t *testing.T, servers []*redistest.Server, key string) (waiting, named int) {
	t.Helper()
	for _, s := range servers {
		vals, err := redistest.Do(s.Addr(), "ZSCORE", key+scripts.WaitersSuffix, "stranger")
		require.NoError(t, err)
		if !vals[0].Null {
			waiting++
		}
		vals, err = redistest.Do(s.Addr(), "GET", key+scripts.NamedSuffix)
		require.NoError(t, err)
		if !vals[0].Null && string(vals[0].Bytes) == "stranger" {
			named++
		}
	}
	return waiting, named
}

// A Client that takes a key back right after releasing it keeps its turn:
// its releases wake no waiter of another Client that has waited less than
// HandOffAfter, so a fleet does not wake a process that would lose the
// key to it.
func TestLoopingClientKeepsItsTurn(t *testing.T) {
	// The release's cutoff is what this asks about. Without the later
	// wake: on a loaded machine (make test-stress) the loop came back
	// later than relockWithin, and the wake then found the key free and
	// woke the waiter, as it should (TestReleaseThatWokeNobodyWakesLater).
	noLaterWake = true
	t.Cleanup(func() { noLaterWake = false })
	servers := masters(t, 3)
	c := client(t, servers, Config{DisableNativeCommands: true, HandOffAfter: time.Minute})
	enrollStranger(t, servers, "turn", time.Now())
	for range 20 {
		l, err := c.Lock(bg, "turn", 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(bg))
	}
	l, err := c.Lock(bg, "turn", 10*time.Second)
	require.NoError(t, err)
	defer l.Unlock(bg)
	waiting, named := strangers(t, servers, "turn")
	assert.Equal(t, 3, waiting, "a release woke the waiter that waited less than HandOffAfter")
	assert.Zero(t, named)
}

// TestReleaseWakesAtOnceWithoutTurns is TestLoopingClientKeepsItsTurn's
// broken variant: with HandOffAfter -1 the first release wakes the waiter.
func TestReleaseWakesAtOnceWithoutTurns(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{DisableNativeCommands: true, HandOffAfter: -1})
	enrollStranger(t, servers, "turn", time.Now())
	l, err := c.Lock(bg, "turn", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg))
	waiting, named := strangers(t, servers, "turn")
	assert.Zero(t, waiting)
	assert.Equal(t, 3, named)
}

// A release that woke nobody (the waiter's turn had not come) wakes it a
// moment later when its Client does not take the key back.
func TestReleaseThatWokeNobodyWakesLater(t *testing.T) {
	requireLaterWake(t, true)
}

// TestReleaseWithoutLaterWakeLeavesTheWaiterAsleep is the broken variant
// of TestReleaseThatWokeNobodyWakesLater: without the wake, the waiter
// sleeps until its retry delay.
func TestReleaseWithoutLaterWakeLeavesTheWaiterAsleep(t *testing.T) {
	noLaterWake = true
	t.Cleanup(func() { noLaterWake = false })
	requireLaterWake(t, false)
}

func requireLaterWake(t *testing.T, woken bool) {
	t.Helper()
	servers := masters(t, 3)
	c := client(t, servers, Config{DisableNativeCommands: true, HandOffAfter: time.Minute})
	enrollStranger(t, servers, "turn", time.Now())
	l, err := c.Lock(bg, "turn", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg))
	if woken {
		require.Eventually(t, func() bool {
			waiting, named := strangers(t, servers, "turn")
			return waiting == 0 && named == 3
		}, 5*time.Second, 5*time.Millisecond, "the waiter was not woken after the release")
		return
	}
	time.Sleep(200 * time.Millisecond) // 200 times relockWithin
	waiting, named := strangers(t, servers, "turn")
	assert.Equal(t, 3, waiting)
	assert.Zero(t, named)
}

// The release of a run older than minRun wakes a waiter of another Client
// that has waited HandOffAfter, however often its Client takes the key
// back.
func TestReleaseHandsTheKeyToALongWaiter(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{DisableNativeCommands: true, HandOffAfter: 100 * time.Millisecond})
	requireHandOff(t, servers, c, true)
}

// TestReleaseWithoutHandOffLeavesTheLongWaiter is the broken variant of
// TestReleaseHandsTheKeyToALongWaiter: a Client whose releases never hand
// the key over keeps it from a waiter however long it waited (the later
// wake, which would wake it since the key stays free, is off too).
func TestReleaseWithoutHandOffLeavesTheLongWaiter(t *testing.T) {
	neverHandOff, noLaterWake = true, true
	t.Cleanup(func() { neverHandOff, noLaterWake = false, false })
	servers := masters(t, 3)
	c := client(t, servers, Config{DisableNativeCommands: true, HandOffAfter: 100 * time.Millisecond})
	requireHandOff(t, servers, c, false)
}

// requireHandOff enrolls a stranger that has waited a second, has c hold
// the key for twice minRun and release it, and requires that the release
// woke the stranger (or, !handed, did not).
func requireHandOff(t *testing.T, servers []*redistest.Server, c *Client, handed bool) {
	t.Helper()
	enrollStranger(t, servers, "turn", time.Now().Add(-time.Second))
	l, err := c.Lock(bg, "turn", 10*time.Second)
	require.NoError(t, err)
	time.Sleep(2 * minRun)
	require.NoError(t, l.Unlock(bg))
	if handed {
		// Unlock returns at a quorum: the last master's release may
		// still be on its way.
		waiting, named := strangers(t, servers, "turn")
		for deadline := time.Now().Add(5 * time.Second); (waiting != 0 || named != 3) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			waiting, named = strangers(t, servers, "turn")
		}
		require.Zero(t, waiting, "the release did not wake the waiter whose turn had come")
		require.Equal(t, 3, named)
		return
	}
	waiting, named := strangers(t, servers, "turn")
	require.Equal(t, 3, waiting, "the release woke the waiter")
	require.Zero(t, named)
}

// The Lock that follows a release that woke a waiter of another Client
// does not take the key back from it: it waits while the key is named for
// the woken one.
func TestReleaserYieldsToTheWokenWaiter(t *testing.T) {
	requireYield(t, true)
}

// TestReleaserWithoutYieldTakesTheKeyBack is the broken variant of
// TestReleaserYieldsToTheWokenWaiter: the Lock after the release takes
// the key named for the woken waiter.
func TestReleaserWithoutYieldTakesTheKeyBack(t *testing.T) {
	noYield = true
	t.Cleanup(func() { noYield = false })
	requireYield(t, false)
}

func requireYield(t *testing.T, yields bool) {
	t.Helper()
	servers := masters(t, 3)
	c := client(t, servers, Config{DisableNativeCommands: true, HandOffAfter: 100 * time.Millisecond})
	requireHandOff(t, servers, c, true)
	l, err := c.Lock(bg, "turn", 10*time.Second)
	require.NoError(t, err)
	defer l.Unlock(bg)
	_, named := strangers(t, servers, "turn")
	if yields {
		assert.Zero(t, named, "the Lock took the key while it was named for the woken waiter")
	} else {
		assert.Equal(t, 3, named)
	}
}

// A Client that loops on a key hands it, within about HandOffAfter, to a
// waiting Lock of another Client whose retry delay is far longer: the
// wait is bounded by the turns, not by polling.
func TestLongWaiterGetsItsTurn(t *testing.T) {
	assert.NoError(t, waitBehindLooper(t, 5*time.Second))
}

// waitBehindLooper has one Client Lock and Unlock a key in a loop and
// another, with a 10 s retry delay, Lock it with a timeout of wait.
func waitBehindLooper(t *testing.T, wait time.Duration) error {
	t.Helper()
	servers := masters(t, 3)
	looper := client(t, servers, Config{DisableNativeCommands: true, HandOffAfter: 100 * time.Millisecond})
	var failed atomic.Int32
	waiter := client(t, servers, waiterConfig(Config{DisableNativeCommands: true}, &failed))
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			l, err := looper.Lock(ctx, "turn", 10*time.Second)
			if err != nil {
				continue
			}
			l.Unlock(bg)
		}
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(50 * time.Millisecond) // the looper runs
	wctx, wcancel := context.WithTimeout(bg, wait)
	defer wcancel()
	l, err := waiter.Lock(wctx, "turn", 10*time.Second)
	if err == nil {
		l.Unlock(bg)
	}
	return err
}

// A waiter whose turn came but that never takes the key (it crashed, say)
// does not keep the others' waiting attempts from a free key.
func TestCrashedWaiterHoldsNobodyUp(t *testing.T) {
	assert.NoError(t, lockBehindCrashedWaiter(t))
}

// lockBehindCrashedWaiter has a stranger that joined the waiters 10 s ago,
// a holder that never releases (its key expires in 300 ms), and a Client
// (HandOffAfter 100 ms, retry delay 10 s) Lock the key within 3 s.
func lockBehindCrashedWaiter(t *testing.T) error {
	t.Helper()
	servers := masters(t, 3)
	holder := client(t, servers, Config{})
	_, err := holder.TryLock(bg, "turn", 300*time.Millisecond)
	require.NoError(t, err)
	enrollStranger(t, servers, "turn", time.Now().Add(-10*time.Second))
	var failed atomic.Int32
	c := client(t, servers, waiterConfig(Config{HandOffAfter: 100 * time.Millisecond}, &failed))
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	l, err := c.Lock(ctx, "turn", 10*time.Second)
	if err == nil {
		l.Unlock(bg)
	}
	return err
}
