package redlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// An Unlock whose releases a connection reset drops is not forgotten: two
// of three masters paused (CLIENT PAUSE ALL) for 1.5 s while Unlock runs
// hold its releases unanswered, their sockets are reset as stalled (no
// reply for a second, which drops a paused client's commands on the
// master), and once the pause ends the releases are sent again after the
// reconnect, so the key (TTL 30 s) is gone from every master soon after,
// not 30 s later.
func TestUnlockDroppedByResetIsReplayed(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	servers := masters(t, 3)
	c := client(t, servers, Config{})
	l, err := c.TryLock(bg, "replayed", 30*time.Second)
	require.NoError(t, err)
	for _, s := range servers[1:] {
		require.NoError(t, s.Command("CLIENT", "PAUSE", "1500", "ALL"))
	}
	err = l.Unlock(bg)
	assert.ErrorIs(t, err, ErrUnlockFailed, "one master of three cannot confirm a release")
	gone := func(s *redistest.Server) bool {
		vals, err := redistest.Do(s.Addr(), "EXISTS", "replayed")
		return err == nil && len(vals) == 1 && vals[0].Int == 0
	}
	for _, s := range servers {
		assert.Eventually(t, func() bool { return gone(s) }, 5*time.Second, 10*time.Millisecond,
			"the key is still on %s after it came back", s.Addr())
	}
}
