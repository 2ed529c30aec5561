package redlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// value returns key's value on s and its PTTL (-2 when missing).
func value(t *testing.T, s *redistest.Server, key string) (string, int64) {
	t.Helper()
	get, err := redistest.Do(s.Addr(), "GET", key)
	require.NoError(t, err)
	pttl, err := redistest.Do(s.Addr(), "PTTL", key)
	require.NoError(t, err)
	return string(get[0].Bytes), pttl[0].Int
}

// A granted Extend sends the value again to the masters that lost it,
// with what remains of the new TTL, and leaves a key that holds anything
// else as it is.
func TestExtendRestoresALostCopy(t *testing.T) {
	servers := masters(t, 5)
	c := client(t, servers, Config{})
	l, err := c.TryLock(bg, "restored", 5*time.Second)
	require.NoError(t, err)
	defer l.Unlock(bg)
	tok, _ := value(t, servers[4], "restored")
	require.NotEmpty(t, tok)
	_, err = redistest.Do(servers[0].Addr(), "DEL", "restored")
	require.NoError(t, err)
	require.NoError(t, servers[1].Command("SET", "restored", "someone else"))

	// Extend returns at its decision: it restores where it heard, by
	// then, that the copy is gone (on a loaded machine master 0 may answer
	// after the quorum did, and the next Extend restores it).
	assert.Eventually(t, func() bool {
		require.NoError(t, l.Extend(bg, 8*time.Second))
		time.Sleep(5 * time.Millisecond)
		v, _ := value(t, servers[0], "restored")
		return v == tok
	}, 5*time.Second, time.Millisecond, "the copy is back on the master that lost it")
	v, pttl := value(t, servers[0], "restored")
	assert.Equal(t, tok, v)
	assert.Greater(t, pttl, int64(5000), "it lives as long as the extended copies (8 s, less the time it took)")
	assert.LessOrEqual(t, pttl, int64(8000))
	other, _ := value(t, servers[1], "restored")
	assert.Equal(t, "someone else", other, "NX: another value stays")
}

// An Extend that a quorum refused restores nothing: the lock is lost, and
// a copy sent now would hold the key for a holder that no longer holds it.
func TestRefusedExtendRestoresNothing(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{})
	l, err := c.TryLock(bg, "unrestored", 5*time.Second)
	require.NoError(t, err)
	for _, s := range servers[:2] {
		_, err := redistest.Do(s.Addr(), "DEL", "unrestored")
		require.NoError(t, err)
	}
	assert.ErrorIs(t, l.Extend(bg, 5*time.Second), ErrNotHeld)
	time.Sleep(50 * time.Millisecond)
	for _, s := range servers[:2] {
		v, _ := value(t, s, "unrestored")
		assert.Empty(t, v, "nothing restored on %s", s.Addr())
	}
}

// rotateLoss deletes key on one master after another (a copy that expired
// on a master cut off for longer than the TTL, and back), every gap,
// until rounds are done or ctx ends, and reports whether ctx outlived
// them all.
func rotateLoss(ctx context.Context, t *testing.T, servers []*redistest.Server, key string, rounds int, gap time.Duration) bool {
	for i := 0; i < rounds; i++ {
		if _, err := redistest.Do(servers[i%len(servers)].Addr(), "DEL", key); err != nil {
			t.Error(err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(gap):
		}
	}
	return true
}

// placeEverywhere gives key's copy to every master of servers that has
// none, with the value and the PTTL of a master that has it: the state
// the rotating losses below start from. A Lock returns at its quorum, and
// a master whose command was still queued then (a fresh Client's master
// behind on its connect-time work, under -race on a busy machine, see
// Conn.late) gets no copy until a renewal restores it; a rotation that
// began by deleting another master's copy would then lose the lock with
// the first loss, before any restore could run (make test saw it twice),
// and without restored copies the broken variant would lose it for that
// reason rather than the one it tests.
func placeEverywhere(t *testing.T, servers []*redistest.Server, key string) {
	t.Helper()
	var v string
	var pttl int64
	for _, s := range servers {
		if v, pttl = value(t, s, key); v != "" && pttl > 0 {
			break
		}
	}
	require.NotEmpty(t, v, "%s held on some master", key)
	for _, s := range servers {
		_, err := redistest.Do(s.Addr(), "SET", key, v, "PX", strconv.FormatInt(pttl, 10), "NX")
		require.NoError(t, err)
	}
}

// doUnderRotatingLoss runs a Do of 600 ms (renewed every 200 ms) on three
// masters while its copy is lost on one master after another, one every
// 700 ms (more than its TTL): after two such losses without restored
// copies, one master of three holds the lock and the renewal loses it. It
// reports whether the Do's work kept its context to the end, and logs
// how it ended when it did not (a failure then says whether the lock was
// lost or never taken).
func doUnderRotatingLoss(t *testing.T) bool {
	servers := masters(t, 3)
	c := client(t, servers, Config{})
	warm(t, c) // every master takes its copy: a quorum keeps it at every moment
	kept, ran := false, time.Duration(-1)
	start := time.Now()
	err := c.Do(bg, "rotated", 600*time.Millisecond, func(ctx context.Context) error {
		taken := time.Now()
		placeEverywhere(t, servers, "rotated")
		kept = rotateLoss(ctx, t, servers, "rotated", 5, 700*time.Millisecond)
		ran = time.Since(taken)
		return nil
	})
	if kept {
		assert.NoError(t, err)
	} else {
		t.Logf("the Do returned after %v, its work ran for %v (-1: never): %v", time.Since(start), ran, err)
	}
	return kept
}

// Do's renewer restores the copies that masters lost, so rotating losses
// on a minority do not wear the lock away.
func TestDoKeepsItsCopiesUnderRotatingLoss(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	assert.True(t, doUnderRotatingLoss(t), "the Do lock was lost though a quorum kept it at every moment")
}

// The broken variant: without restored copies, the same rotation loses
// the lock, so the test above can fail.
func TestDoWithoutRestoredCopiesLosesTheLock(t *testing.T) {
	saved := cmdExtend.restore
	cmdExtend.restore = restoreNone
	defer func() { cmdExtend.restore = saved }()
	assert.False(t, doUnderRotatingLoss(t), "without restored copies the rotation must lose the lock")
}

// A leadership keeps its election key's copies the same way.
func TestLeadershipKeepsItsCopiesUnderRotatingLoss(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	servers := masters(t, 3)
	c := client(t, servers, Config{Fencing: true})
	e, err := c.Election("restored-election", 600*time.Millisecond)
	require.NoError(t, err)
	ld, err := e.Campaign(bg, "me")
	require.NoError(t, err)
	defer ld.Resign(bg)
	placeEverywhere(t, servers, "restored-election")
	assert.True(t, rotateLoss(ld.Context(), t, servers, "restored-election", 5, 700*time.Millisecond),
		"the leadership was lost though a quorum kept it at every moment")
}
