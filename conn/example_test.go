package conn_test

import (
	"context"
	"fmt"

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
