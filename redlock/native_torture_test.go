package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/redlock"
	"github.com/volleylock/volley/redlock/internal/torture"
)

// TestUncheckedNativeReleaseIsCaught: the torture checker catches a native
// release without its value check (a plain DEL): under slow masters a
// failed attempt's release, sent to the masters that did not answer in
// time, deletes the holder's key there, and the key is taken twice. It
// runs on a server with a native release (Valkey 9, Redis 8.4), and is
// skipped on others.
func TestUncheckedNativeReleaseIsCaught(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c, err := redlock.New(context.Background(), redlock.Config{Addrs: []string{s.Addr()}, DisableRestartGuard: true})
	require.NoError(t, err)
	native := redlock.NativeReleaseOn(c)
	c.Close()
	if !native {
		t.Skip("the server has no native release (Valkey 9, Redis 8.4)")
	}
	redlock.SetUncheckedNativeRelease(true)
	defer redlock.SetUncheckedNativeRelease(false)
	rep, err := torture.Run(context.Background(), torture.Config{
		Duration: 10 * time.Second, Seed: 20261127, Masters: 3, Clients: 3, Goroutines: 6, Keys: 1,
		TTL: 300 * time.Millisecond, MaxTTL: time.Second, MasterTimeout: 30 * time.Millisecond,
		Faults: []torture.Fault{torture.FaultSlow}, FaultTime: 2 * time.Second, HealTime: 500 * time.Millisecond,
		Slack: time.Second, DisableRestartGuard: true,
		Logf: t.Logf,
	})
	require.NoError(t, err)
	t.Logf("unchecked native release: %d acquisitions, %d violations", rep.Acquisitions, rep.Checker.Violations)
	require.Positive(t, rep.Acquisitions)
	require.Positive(t, rep.Checker.Violations, "the checker missed a native release without its value check")
}
