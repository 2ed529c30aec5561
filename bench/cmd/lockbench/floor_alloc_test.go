//go:build linux && !race

package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFloorAllocs: the floor's Lock+Unlock allocates nothing, and neither
// does a Holder's.
func TestFloorAllocs(t *testing.T) {
	f, _ := startFloor(t, 3)
	ctx := context.Background()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "floor:allocs:" + strconv.Itoa(i)
	}
	i := 0
	var err error
	allocs := testing.AllocsPerRun(500, func() {
		err = f.LockUnlock(ctx, keys[i%len(keys)], 10*time.Second)
		i++
	})
	require.NoError(t, err)
	require.Zero(t, allocs, "LockUnlock")

	h := f.NewHolder()
	allocs = testing.AllocsPerRun(500, func() {
		if err = h.Lock(ctx, keys[i%len(keys)], 10*time.Second); err == nil {
			err = h.Unlock(ctx)
		}
		i++
	})
	require.NoError(t, err)
	require.Zero(t, allocs, "Holder")
}
