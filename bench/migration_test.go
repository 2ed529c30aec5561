package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/redlock"
)

// TestRedsyncAndVolleyExclude: a redsync Mutex and a Volley Lock of the
// same name on the same three masters exclude each other both ways, so a
// fleet can move from redsync one service at a time (README, "Moving from
// redsync"): each takes the plain key with SET NX and a TTL and releases
// and extends only its own value. A Volley lock's token is not a redsync
// value, and the other way round: neither releases the other's lock.
func TestRedsyncAndVolleyExclude(t *testing.T) {
	servers := make([]*redistest.Server, 3)
	var pools []redis.Pool
	var addrs []string
	for i := range servers {
		servers[i] = redistest.Start(t, redistest.Options{})
		cl := goredislib.NewClient(&goredislib.Options{Addr: servers[i].Addr()})
		t.Cleanup(func() { cl.Close() })
		pools = append(pools, goredis.NewPool(cl))
		addrs = append(addrs, servers[i].Addr())
	}
	rs := redsync.New(pools...)
	ctx := context.Background()
	v, err := redlock.New(ctx, redlock.Config{Addrs: addrs, DisableRestartGuard: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })

	// redsync holds: Volley cannot take it, nor release it.
	m := rs.NewMutex("orders:42", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := v.TryLock(ctx, "orders:42", 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Volley took a key redsync holds: %v", err)
	}
	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("redsync's unlock: %v %v", ok, err)
	}

	// Volley holds: redsync cannot take it, nor extend or release it.
	l, err := v.TryLock(ctx, "orders:42", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other := rs.NewMutex("orders:42", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	if err := other.LockContext(ctx); err == nil {
		t.Fatal("redsync took a key Volley holds")
	}
	if ok, _ := other.ExtendContext(ctx); ok {
		t.Fatal("redsync extended Volley's lock")
	}
	if ok, _ := other.UnlockContext(ctx); ok {
		t.Fatal("redsync released Volley's lock")
	}
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("Volley's lock after redsync's attempts: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.LockContext(ctx); err != nil {
		t.Fatalf("redsync after Volley's release: %v", err)
	}
	if ok, err := other.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("redsync's unlock: %v %v", ok, err)
	}
}
