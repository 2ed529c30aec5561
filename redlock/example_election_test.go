package redlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/volleylock/volley/redlock"
)

// Two replicas of a scheduler campaign; one leads, the other waits. The
// leader's term fences its writes; when it resigns, the other is woken
// and leads with a greater term, and a follower sees each leader.
func ExampleElection() {
	addrs, stop := masters()
	defer stop()
	ctx := context.Background()
	c, err := redlock.New(ctx, redlock.Config{Addrs: addrs, Fencing: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	e, err := c.Election("scheduler", 10*time.Second) // needs Config.Fencing
	if err != nil {
		panic(err)
	}

	observeCtx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	leaders := e.Observe(observeCtx)

	a, err := e.Campaign(ctx, "replica-a") // blocks until this process leads
	if err != nil {
		panic(err)
	}
	fmt.Println("observed:", (<-leaders).Value)

	next := make(chan *redlock.Leadership)
	go func() {
		b, err := e.Campaign(ctx, "replica-b") // waits while replica-a leads
		if err != nil {
			panic(err)
		}
		next <- b
	}()
	// replica-a works while a.Context() lives, giving a.Term() with each
	// write; then it steps down.
	if err := a.Resign(ctx); err != nil {
		panic(err)
	}
	fmt.Println("replica-a's context ended:", context.Cause(a.Context()))

	b := <-next
	fmt.Println("observed:", (<-leaders).Value)
	fmt.Println("replica-b's term is greater:", b.Term() > a.Term())
	leader, err := e.Leader(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("leader:", leader.Value)
	if err := b.Resign(ctx); err != nil {
		panic(err)
	}
	// Output:
	// observed: replica-a
	// replica-a's context ended: redlock: leadership resigned
	// observed: replica-b
	// replica-b's term is greater: true
	// leader: replica-b
}
