package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/volleylock/volley/redlock"
)

// fencedStore is the resource side of fencing: it accepts a write only
// with a token at least as large as the largest it has accepted, so a
// holder whose lock ran out while it was paused is turned away once the
// next holder has written.
type fencedStore struct {
	mu      sync.Mutex
	highest uint64
	value   string
}

func (s *fencedStore) Write(token uint64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("store: token refused: a later holder has written")
	}
	s.highest, s.value = token, value
	return nil
}

// A holder pauses past its validity; the next holder writes with a larger
// token, and the paused holder's late write is refused.
func Example_fencing() {
	addrs, stop := masters()
	defer stop()
	ctx := context.Background()
	c, err := redlock.New(ctx, redlock.Config{Addrs: addrs, Fencing: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	store := &fencedStore{}

	a, err := c.Lock(ctx, "report", 100*time.Millisecond)
	if err != nil {
		panic(err)
	}
	time.Sleep(150 * time.Millisecond) // A pauses (GC, swap, SIGSTOP): its lock expires

	b, err := c.Lock(ctx, "report", time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("B's token is larger:", b.Fence() > a.Fence())
	fmt.Println("B writes:", store.Write(b.Fence(), "from B"))
	fmt.Println("A wakes up and writes:", store.Write(a.Fence(), "from A"))
	fmt.Println("the store holds:", store.value)
	b.Unlock(ctx)
	// Output:
	// B's token is larger: true
	// B writes: <nil>
	// A wakes up and writes: store: token refused: a later holder has written
	// the store holds: from B
}
