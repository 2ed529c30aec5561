//go:build !race

package conn_test

import (
	"context"
	"testing"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// TestPublicRoundTripAllocs pins the zero-allocation promise of the
// public API (Send and Wait, or Send and a notify channel, with a reused
// Request) against a real master: the thin face over the connection
// code adds nothing to what internal/pipe's TestRoundTripAllocs pins.
func TestPublicRoundTripAllocs(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := conn.NewRequest()
	defer r.Release()
	notify := make(chan *conn.Request, 1)
	r.Cmd = resp.AppendCommand(r.Cmd[:0], "SET", "lock", "token", "PX", "10000")

	withWait := func() {
		c.Send(r, nil)
		if err := c.Wait(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	withWait() // warm up buffers
	if n := testing.AllocsPerRun(200, withWait); n != 0 {
		t.Errorf("Send+Wait: %v allocations, want 0", n)
	}
	withNotify := func() {
		c.Send(r, notify)
		<-notify
	}
	if n := testing.AllocsPerRun(200, withNotify); n != 0 {
		t.Errorf("Send+notify: %v allocations, want 0", n)
	}
}
