package pipe

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// BenchmarkRoundTrip is one goroutine doing GET round trips on the
// low-level API against a real master.
func BenchmarkRoundTrip(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{})
	c, err := Dial(context.Background(), Options{Addr: srv.Addr()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r := NewRequest()
	r.Cmd = resp.AppendCommand(r.Cmd, "GET", "k")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c.Send(r, nil)
		if err := c.Wait(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallel is G goroutines sharing one Conn, each doing GET round
// trips: the throughput of pipelining and write coalescing.
func BenchmarkParallel(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{})
	c, err := Dial(context.Background(), Options{Addr: srv.Addr()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, g := range []int{1, 8, 64, 256} {
		b.Run(fmt.Sprintf("G=%d", g), func(b *testing.B) {
			b.ReportAllocs()
			var wg sync.WaitGroup
			per := b.N/g + 1
			b.ResetTimer()
			for range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := NewRequest()
					defer r.Release()
					r.Cmd = resp.AppendCommand(r.Cmd, "GET", "k")
					ctx := context.Background()
					for range per {
						c.Send(r, nil)
						if err := c.Wait(ctx, r); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
