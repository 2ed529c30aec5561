package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// One redis-server for every conn benchmark, started by the first one that
// needs it (plain go test starts none) and stopped by TestMain.
var (
	serverOnce sync.Once
	server     *redistest.Server
	serverErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

// redisAddr returns the shared server's address, with key "k" set to a
// small value; it skips the benchmark when redis-server is not installed.
func redisAddr(b *testing.B) string {
	b.Helper()
	serverOnce.Do(func() {
		server, serverErr = redistest.StartServer(redistest.Options{})
		if serverErr == nil {
			serverErr = server.Command("SET", "k", "value-of-k")
		}
	})
	if errors.Is(serverErr, redistest.ErrNoRedisServer) {
		b.Skip(serverErr)
	}
	if serverErr != nil {
		b.Fatal(serverErr)
	}
	return server.Addr()
}

// goroutineCounts are the concurrency levels of every conn benchmark.
var goroutineCounts = []int{1, 8, 64, 256}

// runG runs b.N calls of op spread over g goroutines, each with its own
// state from newOp (made before the timer starts).
func runG(b *testing.B, g int, newOp func() func() error) {
	ops := make([]func() error, g)
	for i := range ops {
		ops[i] = newOp()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for _, op := range ops {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

// BenchmarkGET: GET k, one round trip per operation, from G goroutines
// sharing one client. Volley's conn pipelines every caller on one socket
// (the zero-allocation Send/Wait API with a reused Request); go-redis
// uses its pool (PoolSize = G); rueidis pipelines on one socket as well.
func BenchmarkGET(b *testing.B) {
	for _, g := range goroutineCounts {
		b.Run(fmt.Sprintf("volley/G=%d", g), func(b *testing.B) {
			c, err := conn.Dial(context.Background(), conn.Options{Addr: redisAddr(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			runG(b, g, func() func() error {
				r := conn.NewRequest()
				r.Cmd = resp.AppendCommand(r.Cmd[:0], "GET", "k")
				return func() error {
					c.Send(r, nil)
					if err := c.Wait(ctx, r); err != nil {
						return err
					}
					if v := r.Reply(); len(v) != 1 || len(v[0].Bytes) != len("value-of-k") {
						return fmt.Errorf("volley: unexpected reply %v", v)
					}
					return nil
				}
			})
		})
		b.Run(fmt.Sprintf("go-redis/G=%d", g), func(b *testing.B) {
			c := goredis.NewClient(&goredis.Options{Addr: redisAddr(b), PoolSize: max(g, 10)})
			defer c.Close()
			ctx := context.Background()
			runG(b, g, func() func() error {
				return func() error {
					v, err := c.Get(ctx, "k").Result()
					if err == nil && len(v) != len("value-of-k") {
						err = fmt.Errorf("go-redis: unexpected reply %q", v)
					}
					return err
				}
			})
		})
		b.Run(fmt.Sprintf("rueidis/G=%d", g), func(b *testing.B) {
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr(b)}, DisableCache: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			runG(b, g, func() func() error {
				cmd := c.B().Get().Key("k").Build().Pin()
				return func() error {
					v, err := c.Do(ctx, cmd).AsBytes()
					if err == nil && len(v) != len("value-of-k") {
						err = fmt.Errorf("rueidis: unexpected reply %q", v)
					}
					return err
				}
			})
		})
	}
}
