package pipe_test

import (
	"context"
	"fmt"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/redlock/redlocktest"
	"github.com/volleylock/volley/resp"
)

// A Group's Batch fans a command out to several masters in one round and
// reads the answers as they come, stopping at the first two (a quorum of
// three), say; End gives up on the rest. On Linux a lone round claims
// the masters' sockets (Claim) and reads its replies itself, waking no
// reader goroutine; elsewhere, or when another round holds the claim, the
// same calls go through the readers. Check makes a reply of the wrong
// shape fail its socket instead of putting later replies out of step.
func ExampleGroup() {
	ms, err := redlocktest.Start(3)
	if err != nil {
		panic(err)
	}
	defer ms.Close()
	ctx := context.Background()
	var conns []*pipe.Conn
	for _, addr := range ms.Addrs() {
		c, err := pipe.Dial(ctx, pipe.Options{Addr: addr})
		if err != nil {
			panic(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	g := pipe.NewGroup(conns, 10*time.Millisecond)
	defer g.Close()
	b := g.NewBatch(len(conns))
	defer b.Release()

	// SET NX answers +OK or nil: any other reply is out of step.
	b.Check = func(reply []resp.Value) bool {
		return len(reply) == 1 && (reply[0].Null || reply[0].Type == resp.TypeSimpleString || reply[0].IsError())
	}
	cmd := resp.AppendCommand(nil, "SET", "job", "token", "NX", "PX", "10000")
	b.Claim() // optional: a round reads its own replies when it can
	for i, c := range conns {
		b.Send(i, c, cmd)
	}
	yes := 0
	for yes < 2 {
		r := b.Next(time.Now().Add(time.Second), nil)
		if r == nil {
			break // the deadline
		}
		if r.Err() == nil && string(r.Reply()[0].Bytes) == "OK" {
			yes++
		}
	}
	b.End(nil) // the third answer, if still out, is the Conn's to read
	fmt.Println("quorum:", yes >= 2)
	// Output: quorum: true
}
