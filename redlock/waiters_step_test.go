package redlock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/scripts"
)

// The masters' waiters' sets stay in step (see waiters.go): each test
// below sets up a waiting attempt that reaches some masters and not the
// others, and requires that the masters' sets end up holding the same
// Clients. Each has a broken variant without the undoing it tests.

// TestFailedAttemptRejoins: a waiting attempt that set the key on the
// first master (and lost on the other two, where a stranger's value holds
// it) is put back among the first master's waiters by its release.
func TestFailedAttemptRejoins(t *testing.T) {
	assert.True(t, rejoinedAfterSplit(t), "the failed attempt's Client is missing from the first master's waiters")
}

// TestFailedAttemptWithoutRejoinDrifts is its broken variant.
func TestFailedAttemptWithoutRejoinDrifts(t *testing.T) {
	noRejoin = true
	t.Cleanup(func() { noRejoin = false })
	assert.False(t, rejoinedAfterSplit(t), "without the rejoin, the first master should have lost the Client")
}

// rejoinedAfterSplit has a Client Lock a key that strangers' values hold
// on the second and third of three masters, and reports whether, once
// its waiting attempt failed, the first master's waiters hold it (within
// a second).
func rejoinedAfterSplit(t *testing.T) bool {
	t.Helper()
	servers := masters(t, 3)
	const key = "rejoin"
	for _, s := range servers[1:] {
		_, err := redistest.Do(s.Addr(), "SET", key, "stranger", "PX", "10000")
		require.NoError(t, err)
	}
	var failed atomic.Int32
	w := client(t, servers, waiterConfig(Config{DisableNativeCommands: true}, &failed))
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := w.Lock(ctx, key, 10*time.Second)
		assert.Error(t, err, "the strangers hold a quorum")
	}()
	require.Eventually(t, func() bool { return failed.Load() >= 2 }, 10*time.Second, 5*time.Millisecond,
		"the waiter failed its attempts before and after it subscribed")
	id := string(w.waiterID[:])
	for _, s := range servers[1:] {
		require.Eventually(t, func() bool { return slices.Contains(waitersOn(s, key), id) }, 5*time.Second, 5*time.Millisecond,
			"the waiting attempt enrolled the Client where it lost")
	}
	back := false
	for end := time.Now().Add(time.Second); !back && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		back = slices.Contains(waitersOn(servers[0], key), id)
	}
	cancel()
	<-done
	return back
}

// TestWinnerLeavesWhereItLost: a waiting attempt that wins on two masters
// of three, while a stranger's value holds the key on the third, takes
// its Client off the third master's waiters, where its attempt enrolled
// it.
func TestWinnerLeavesWhereItLost(t *testing.T) {
	assert.False(t, enrolledWhereWinnerLost(t, "stranger"), "the winner stays among the waiters where it lost")
}

// TestWinnerStaysWhereItLost is its broken variant.
func TestWinnerStaysWhereItLost(t *testing.T) {
	noLeaveWhereLost = true
	t.Cleanup(func() { noLeaveWhereLost = false })
	assert.True(t, enrolledWhereWinnerLost(t, "stranger"), "without the leave, the third master should keep the winner")
}

// TestWinnerStaysWhereTheReleaseIsComing: where the winner lost to the
// holder whose release woke it (that release has not run there yet), the
// winner stays among the waiters, so that the release, when it runs,
// takes it off and names it there as on the other masters, rather than
// naming another Client there alone, which the lone message wakes for
// an attempt that fails (TestReleaseWakesOneClientOfAFleet then counted
// a third attempt, when one master ran the release after the winner's
// attempt). It fails with the plain ZREM that leaveWaiters sent before;
// a rule that kept the winner wherever it lost fails
// TestWinnerLeavesWhereItLost.
func TestWinnerStaysWhereTheReleaseIsComing(t *testing.T) {
	assert.True(t, enrolledWhereWinnerLost(t, "holder"), "the winner left the waiters where the release that woke it has yet to run")
}

// enrolledWhereWinnerLost has a Client wait for a key that a holder's
// value holds on three masters (set directly, so that it is on all
// three), sets the third master's to third ("holder" keeps it), releases
// the key on the first two with scripts.Release (which wakes the waiter
// there), and reports whether the third master's waiters still hold the
// waiter once it took the lock (after 300 ms).
func enrolledWhereWinnerLost(t *testing.T, third string) bool {
	t.Helper()
	servers := masters(t, 3)
	const key = "leave"
	for _, s := range servers {
		_, err := redistest.Do(s.Addr(), "SET", key, "holder", "PX", "10000")
		require.NoError(t, err)
	}
	var failed atomic.Int32
	w := client(t, servers, waiterConfig(Config{DisableNativeCommands: true}, &failed))
	id := string(w.waiterID[:])
	got := waiterInBackground(t, w, key, &failed)
	for _, s := range servers {
		require.Eventually(t, func() bool { return slices.Contains(waitersOn(s, key), id) }, 5*time.Second, 5*time.Millisecond,
			"the waiter enrolled on every master")
	}
	_, err := redistest.Do(servers[2].Addr(), "SET", key, third, "PX", "10000")
	require.NoError(t, err)
	for _, s := range servers[:2] {
		_, err := redistest.Do(s.Addr(), "EVAL", scripts.Release.Source, "1", key, "holder", releaseIDOf("holder"))
		require.NoError(t, err)
	}
	wokenWaiterTook(t, got)
	time.Sleep(300 * time.Millisecond) // the leave is sent without waiting
	return slices.Contains(waitersOn(servers[2], key), id)
}

// waitersOn returns the members of key's waiters on s, in order.
func waitersOn(s *redistest.Server, key string) []string {
	vals, err := redistest.Do(s.Addr(), "ZRANGE", key+scripts.WaitersSuffix, "0", "-1")
	if err != nil || len(vals) == 0 {
		return nil
	}
	var out []string
	for _, v := range vals[1:] { // the array's elements follow its header
		out = append(out, string(v.Bytes))
	}
	return out
}

// releaseIDOf is the release id of a value that is not a token (see
// token.releaseID): the first 16 hex digits of its SHA-1.
func releaseIDOf(value string) string {
	sum := sha1.Sum([]byte(value))
	return hex.EncodeToString(sum[:])[:releaseIDLen]
}
