package redlock

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLockUnlock is one goroutine doing TryLock+Unlock on a fresh key
// per iteration, on N real masters.
func BenchmarkLockUnlock(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run(fmt.Sprint("N=", n), func(b *testing.B) {
			c := benchClient(b, n)
			keys := benchKeys(1024)
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
		})
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
