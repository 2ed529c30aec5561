package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestContendedLockAttempts: 8 Clients x 2 goroutines on one key (TTL
// 500ms, five masters, 500ms Locks, work mostly under 10ms, 4% of holders
// letting the lock expire): the case in which #31 saw a Lock make 141-279
// attempts before its ctx ended. However the votes go, a Lock makes at
// most 9*Tries-8 attempts (see "How much a Lock sends"); the log line
// gives the distribution for the closing note's figure.
func TestContendedLockAttempts(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	servers := masters(t, 5)
	var clients []*Client
	for range 8 {
		clients = append(clients, client(t, servers, Config{}))
	}
	var mu sync.Mutex
	var failed []int
	granted := 0
	var wg sync.WaitGroup
	stop := time.Now().Add(3 * time.Second)
	for ci, c := range clients {
		for g := range 2 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(ci), uint64(g)))
				for time.Now().Before(stop) {
					ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
					l, err := c.Lock(ctx, "contended", 500*time.Millisecond)
					cancel()
					mu.Lock()
					if err != nil {
						var le *Error
						attempts := 1
						if errors.As(err, &le) {
							attempts = le.Attempts
						}
						failed = append(failed, attempts)
					} else {
						granted++
					}
					mu.Unlock()
					if err != nil {
						continue
					}
					if rng.Float64() < 0.96 {
						time.Sleep(rand.N(10 * time.Millisecond))
						l.Unlock(bg)
					} else {
						time.Sleep(600 * time.Millisecond) // the lock expires
					}
				}
			})
		}
	}
	wg.Wait()
	slices.Sort(failed)
	summary := "none failed"
	if n := len(failed); n > 0 {
		summary = fmt.Sprintf("attempts of the failed ones: median %d, p90 %d, max %d", failed[n/2], failed[n*9/10], failed[n-1])
	}
	t.Logf("%d Locks granted, %d failed at their 500ms ctx; %s", granted, len(failed), summary)
	if len(failed) > 0 {
		assert.LessOrEqual(t, failed[len(failed)-1], 9*clients[0].cfg.Tries-8)
	}
}
