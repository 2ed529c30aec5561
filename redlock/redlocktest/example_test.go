package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/volleylock/volley/redlock"
	"github.com/volleylock/volley/redlock/redlocktest"
)

// chargeInvoice is code under test: it charges an invoice while holding
// its lock, and must stop charging when the lock is lost.
func chargeInvoice(ctx context.Context, c *redlock.Client, id string, charge func(context.Context) error) error {
	return c.Do(ctx, "invoice:"+id, time.Second, charge)
}

// A user's test: five masters, one restarted empty, one paused, and the
// code still runs under a quorum of the other three.
func Example() {
	ms, err := redlocktest.Start(5) // in a test: redlocktest.NewMasters(t, 5)
	if err != nil {
		panic(err)
	}
	defer ms.Close()
	c, err := redlock.New(context.Background(), redlock.Config{Addrs: ms.Addrs(), MaxTTL: 2 * time.Second})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ms.Master(0).RestartEmpty() // the restart guard keeps it out for MaxTTL
	ms.Master(1).Pause()        // answers nothing
	defer ms.Master(1).Resume()

	charged := 0
	err = chargeInvoice(context.Background(), c, "42", func(context.Context) error {
		charged++
		return nil
	})
	fmt.Println(charged, err)
	// Output: 1 <nil>
}

// A lock lost while the work runs: the keys expire on the masters (their
// clocks jump past the TTL), the next extension finds them gone, and the
// work's context is cancelled with cause redlock.ErrNotHeld.
func ExampleMasters_Advance() {
	ms, err := redlocktest.Start(3)
	if err != nil {
		panic(err)
	}
	defer ms.Close()
	c, err := redlock.New(context.Background(), redlock.Config{Addrs: ms.Addrs()})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	err = chargeInvoice(context.Background(), c, "42", func(ctx context.Context) error {
		ms.Advance(time.Hour) // every key expires
		<-ctx.Done()          // the code under test waits for the verdict
		fmt.Println("charge stopped:", context.Cause(ctx))
		return ctx.Err()
	})
	fmt.Println(errors.Is(err, redlock.ErrNotHeld))
	// Output:
	// charge stopped: redlock: lock not held
	// true
}
