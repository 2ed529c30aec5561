package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/redlock"
)

// masters starts three in-process fake masters that have been up for an
// hour (so the restart guard lets them vote) and returns their addresses.
// In production these are your Redis masters' addresses.
func masters() (addrs []string, stop func()) {
	var servers []*fakeredis.Server
	for range 3 {
		clock := fakeredis.NewManualClock(time.Now())
		s, err := fakeredis.Start(fakeredis.Options{Clock: clock})
		if err != nil {
			panic(err)
		}
		clock.Advance(time.Hour) // uptime: one hour
		servers = append(servers, s)
		addrs = append(addrs, s.Addr())
	}
	return addrs, func() {
		for _, s := range servers {
			s.Close()
		}
	}
}

func Example() {
	addrs, stop := masters()
	defer stop()
	ctx := context.Background()

	c, err := redlock.New(redlock.Config{Addrs: addrs})
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
	c, err := redlock.New(redlock.Config{Addrs: addrs})
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
