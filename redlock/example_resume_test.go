package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/volleylock/volley/redlock"
)

// A worker takes a lock and hands it to another process (here another
// Client) with its key, token and end of validity; that process extends
// and releases it.
func ExampleClient_Resume() {
	addrs, stop := masters()
	defer stop()
	ctx := context.Background()
	worker, err := redlock.New(ctx, redlock.Config{Addrs: addrs})
	if err != nil {
		panic(err)
	}
	defer worker.Close()
	finisher, err := redlock.New(ctx, redlock.Config{Addrs: addrs})
	if err != nil {
		panic(err)
	}
	defer finisher.Close()

	l, err := worker.Lock(ctx, "job:7", 10*time.Second)
	if err != nil {
		panic(err)
	}
	// Sent to the other process (a secret, like a password):
	key, token, until := l.Key(), l.Token(), time.Now().Add(l.Validity())

	r, err := finisher.Resume(key, token, until)
	if err != nil {
		panic(err)
	}
	fmt.Println("extended:", r.Extend(ctx, 10*time.Second))
	fmt.Println("released:", r.Unlock(ctx))
	fmt.Println("the worker's copy is gone:", errors.Is(l.Unlock(ctx), redlock.ErrNotHeld))
	// Output:
	// extended: <nil>
	// released: <nil>
	// the worker's copy is gone: true
}
