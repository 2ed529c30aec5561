package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/volleylock/volley/redlock"
	"github.com/volleylock/volley/redlock/redlocktest"
)

// masters starts three in-process masters for the example (see package
// redlocktest) and returns their addresses. In production these are your
// Redis masters' addresses.
func masters() (addrs []string, stop func()) {
	ms, err := redlocktest.Start(3)
	if err != nil {
		panic(err)
	}
	return ms.Addrs(), func() { ms.Close() }
}

func Example() {
	addrs, stop := masters()
	defer stop()
	ctx := context.Background()

	c, err := redlock.New(ctx, redlock.Config{Addrs: addrs})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	l, err := c.Lock(ctx, "invoice:42", 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("locked", l.Key(), "valid for at most 10s:", l.Validity() <= 10*time.Second)

	// Someone else trying meanwhile is refused.
	_, err = c.TryLock(ctx, "invoice:42", 10*time.Second)
	fmt.Println("second TryLock:", errors.Is(err, redlock.ErrNotAcquired))

	if err := l.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("unlocked")
	// Output:
	// locked invoice:42 valid for at most 10s: true
	// second TryLock: true
	// unlocked
}

func ExampleClient_Do() {
	addrs, stop := masters()
	defer stop()
	c, err := redlock.New(context.Background(), redlock.Config{Addrs: addrs})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	// Do keeps the lock extended while the work runs, cancels the work's
	// context if the lock is lost, and releases it at the end.
	err = c.Do(context.Background(), "report:daily", 5*time.Second, func(ctx context.Context) error {
		fmt.Println("working under the lock")
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// working under the lock
	// done: <nil>
}

// A transfer locks both accounts as one lock: all or none, on each master
// at once. The order the keys are given in does not matter.
func ExampleClient_LockMulti() {
	addrs, stop := masters()
	defer stop()
	ctx := context.Background()
	c, err := redlock.New(ctx, redlock.Config{Addrs: addrs})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	l, err := c.LockMulti(ctx, []string{"account:B", "account:A"}, 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("locked", l.Keys())

	// A transfer touching either account waits; a lock on another is free.
	_, err = c.TryLockMulti(ctx, []string{"account:A", "account:C"}, 10*time.Second)
	fmt.Println("A and C:", errors.Is(err, redlock.ErrNotAcquired))
	other, err := c.TryLock(ctx, "account:C", 10*time.Second)
	fmt.Println("C alone:", err == nil)
	other.Unlock(ctx)

	if err := l.Unlock(ctx); err != nil {
		panic(err)
	}
	// Output:
	// locked [account:A account:B]
	// A and C: true
	// C alone: true
}

// Inspect answers "who holds it, until when?" without taking the lock.
func ExampleLock_Inspect() {
	addrs, stop := masters()
	defer stop()
	ctx := context.Background()
	c, err := redlock.New(ctx, redlock.Config{Addrs: addrs})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	l, err := c.Lock(ctx, "report:daily", 10*time.Second)
	if err != nil {
		panic(err)
	}
	defer l.Unlock(ctx)
	states, err := l.Inspect(ctx)
	if err != nil {
		panic(err)
	}
	ours := 0
	for _, s := range states {
		if s.Ours && s.TTL > 9*time.Second {
			ours++
		}
	}
	fmt.Println("held by this lock on a quorum:", ours >= c.Quorum())
	// Output:
	// held by this lock on a quorum: true
}
