package redlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/volleylock/volley/redlock"
)

// At most three exports run at once, across every process that uses the
// same masters.
func ExampleSemaphore() {
	addrs, stop := masters()
	defer stop()
	ctx := context.Background()
	c, err := redlock.New(ctx, redlock.Config{Addrs: addrs})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	exports, err := c.Semaphore("exports:tenant-7", 3)
	if err != nil {
		panic(err)
	}
	p, err := exports.Acquire(ctx, 30*time.Second)
	if err != nil {
		panic(err) // ErrNotAcquired once Config.Tries attempts failed, or ctx's error
	}
	defer p.Release(ctx)
	fmt.Println("permit", p.Index() < 3, "of", exports.Permits())

	// Do keeps the permit extended while the work runs.
	err = exports.Do(ctx, 10*time.Second, func(ctx context.Context) error {
		fmt.Println("exporting")
		return nil
	})
	fmt.Println(err)
	// Output:
	// permit true of 3
	// exporting
	// <nil>
}

// Many readers at once, or one writer.
func ExampleRWMutex() {
	addrs, stop := masters()
	defer stop()
	ctx := context.Background()
	c, err := redlock.New(ctx, redlock.Config{Addrs: addrs})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	config, err := c.RWMutex("config:pricing")
	if err != nil {
		panic(err)
	}
	r1, _ := config.RLock(ctx, 10*time.Second)
	r2, err := config.TryRLock(ctx, 10*time.Second)
	fmt.Println("two readers:", err)
	_, err = config.TryLock(ctx, 10*time.Second)
	fmt.Println("a writer beside them:", err)
	r1.Unlock(ctx)
	r2.Unlock(ctx)

	err = config.DoWrite(ctx, 10*time.Second, func(ctx context.Context) error {
		fmt.Println("writing alone")
		return nil
	})
	fmt.Println(err)
	// Output:
	// two readers: <nil>
	// a writer beside them: redlock: lock not acquired
	// writing alone
	// <nil>
}
