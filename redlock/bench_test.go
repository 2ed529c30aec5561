package redlock

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volleylock/volley/internal/redistest"
)

// BenchmarkLockUnlock is one goroutine doing TryLock+Unlock on a fresh key
// per iteration, on N real masters.
func BenchmarkLockUnlock(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run(fmt.Sprint("N=", n), func(b *testing.B) {
			lockUnlockLoop(b, benchClient(b, n), benchKeys(1024))
		})
	}
}

// lockUnlockLoop is the loop of BenchmarkLockUnlock: TryLock+Unlock of
// keys in turn.
func lockUnlockLoop(b *testing.B, c *Client, keys []string) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l, err := c.TryLock(bg, keys[i%len(keys)], 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkLockUnlockParallel is many goroutines on distinct keys, five
// masters.
func BenchmarkLockUnlockParallel(b *testing.B) {
	c := benchClient(b, 5)
	keys := benchKeys(1 << 16)
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := keys[next.Add(1)%int64(len(keys))]
			l, err := c.TryLock(bg, key, 10*time.Second)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Unlock(bg); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchClient(b *testing.B, n int) *Client {
	b.Helper()
	servers := redistestStartN(b, n)
	c, err := New(bg, Config{Addrs: servers, DisableRestartGuard: true, MasterTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "bench:" + strconv.Itoa(i)
	}
	return keys
}

// BenchmarkClusterLockUnlock is BenchmarkLockUnlock over a local Redis
// Cluster of 3 and of 6 primaries (no replicas), three copies a lock: the
// client does the same work on both. "one-place" keys share a hash tag, so
// that every lock goes to the same three of the six primaries: the
// control that tells the client's cost from the servers' (on a machine
// whose cores the servers share, a server that waited longer for its next
// command answers it later).
func BenchmarkClusterLockUnlock(b *testing.B) {
	for _, bc := range []struct {
		name      string
		primaries int
		prefix    string
	}{{"primaries=3", 3, ""}, {"primaries=6", 6, ""}, {"primaries=6/one-place", 6, "{one}"}} {
		b.Run(bc.name, func(b *testing.B) {
			cl := redistest.StartClusterT(b, redistest.ClusterOptions{Shards: bc.primaries, Replicas: -1})
			c, err := New(bg, Config{Addrs: []string{clusterAddr(cl, "")}, DisableRestartGuard: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			keys := benchKeys(1024)
			for i := range keys {
				keys[i] = bc.prefix + keys[i]
			}
			lockUnlockLoop(b, c, keys)
		})
	}
}
