//go:build !race

package pipe

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// TestRoundTripAllocs pins the steady-state allocations of one round trip
// on the low-level API, against a real master.
func TestRoundTripAllocs(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr()})
	ctx := context.Background()
	r := NewRequest()
	defer r.Release()
	notify := make(chan *Request, 1)

	for name, cmd := range map[string][]string{
		"SET NX PX": {"SET", "lock", "token", "NX", "PX", "10000"},
		"GET":       {"GET", "lock"},
		"DEL":       {"DEL", "lock"},
	} {
		r.Cmd = resp.AppendCommand(r.Cmd[:0], cmd...)
		roundTrip := func() {
			c.Send(r, nil)
			if err := c.Wait(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		roundTrip() // warm up buffers
		require.Zero(t, testing.AllocsPerRun(200, roundTrip), "%s with Wait", name)

		viaNotify := func() {
			c.Send(r, notify)
			<-notify
		}
		require.Zero(t, testing.AllocsPerRun(200, viaNotify), "%s with a notify channel", name)
	}
}
