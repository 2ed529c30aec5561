package conn_test

import (
	"context"
	"fmt"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/redlock/redlocktest"
	"github.com/volleylock/volley/resp"
)

// Do is the convenient API: arguments in, owned values out.
func ExampleConn_Do() {
	ms, err := redlocktest.Start(1) // an in-process master; in production, yours
	if err != nil {
		panic(err)
	}
	defer ms.Close()

	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{Addr: ms.Addrs()[0]})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	if _, err := c.Do(ctx, "SET", "greeting", "hello", "PX", 10000); err != nil {
		panic(err)
	}
	vals, err := c.Do(ctx, "GET", "greeting")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(vals[0].Bytes))
	// Output: hello
}

// Send with a pooled Request is the zero-allocation API: encode the command
// into the Request, send it, wait for it on a channel, read the reply while
// the Request is yours, then reuse it.
func ExampleConn_Send() {
	ms, err := redlocktest.Start(1)
	if err != nil {
		panic(err)
	}
	defer ms.Close()
	c, err := conn.Dial(context.Background(), conn.Options{Addr: ms.Addrs()[0]})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	done := make(chan *conn.Request, 2) // room for every request in flight
	a, b := conn.NewRequest(), conn.NewRequest()
	a.Cmd = resp.AppendCommand(a.Cmd[:0], "SET", "lock", "token", "NX", "PX", "10000")
	b.Cmd = resp.AppendCommand(b.Cmd[:0], "SET", "lock", "other", "NX", "PX", "10000")
	c.Send(a, done)
	c.Send(b, done) // pipelined behind a on the same socket

	for range 2 {
		r := <-done
		if r.Err() != nil {
			panic(r.Err())
		}
		v := r.Reply()[0]
		fmt.Printf("null=%v %s\n", v.Null, v.Bytes)
		r.Release()
	}
	// Output:
	// null=false OK
	// null=true
}

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
	var conns []*conn.Conn
	for _, addr := range ms.Addrs() {
		c, err := conn.Dial(ctx, conn.Options{Addr: addr})
		if err != nil {
			panic(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	g := conn.NewGroup(conns, 10*time.Millisecond)
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
