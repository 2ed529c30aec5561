package redlock

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/scripts"
	"github.com/volleylock/volley/resp"
)

// These tests give waiters a retry delay of an hour: a Lock that succeeds
// within the test's deadline was woken (by a release, an expiry bound, or
// a reconnect), never by its retry timer.
const noRetry = time.Hour

// waiting waits until c has a waiter for key whose subscriptions are
// confirmed on every master.
func waiting(t *testing.T, c *Client, key string) {
	t.Helper()
	subscribedWith(t, c, key, func(kw *keyWaiters) bool { return len(kw.queue) > 0 })
}

// subscribedWith waits until c's waiters of key are as has says, their
// subscriptions confirmed on every master. A waiter is in the room before
// it opens the pub/sub connections, so a room without them (subs nil)
// has confirmed nothing yet (make test-stress once saw this pass on a
// room not yet open, then the test read room.subs as the waiter opened
// it: a data race, and no pub/sub connection to kill).
func subscribedWith(t *testing.T, c *Client, key string, has func(kw *keyWaiters) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		c.room.mu.Lock()
		defer c.room.mu.Unlock()
		kw := c.room.keys[key]
		if kw == nil || !has(kw) || c.room.subs == nil {
			return false
		}
		for i, sc := range c.room.subs {
			if info := sc.Info(); info == nil || kw.subGen[i] != info.Generation {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond)
}

// runCommand runs one command on a connection of its own.
func runCommand(t *testing.T, addr string, args ...any) []resp.Value {
	t.Helper()
	cn, err := pipe.Dial(bg, pipe.Options{Addr: addr})
	require.NoError(t, err)
	defer cn.Close()
	vals, err := cn.Do(bg, args...)
	require.NoError(t, err)
	return vals
}

// lockAsync runs c.Lock(key) in a goroutine, and Unlock once it is
// taken; the channel gets the Lock's result after that Unlock returned,
// so that nothing of the goroutine's runs past the test that reads it
// (an Unlock left running read a package variable that the next test
// set: make test's race detector caught it).
func lockAsync(c *Client, key string, ttl time.Duration) <-chan error {
	out := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		l, err := c.Lock(ctx, key, ttl)
		if err == nil {
			l.Unlock(bg)
		}
		out <- err
	}()
	return out
}

func TestWaiterWokenByRelease(t *testing.T) {
	servers := masters(t, 3)
	holder := client(t, servers, Config{})
	waiter := client(t, servers, Config{RetryDelay: noRetry})
	l, err := holder.Lock(bg, "w:release", 20*time.Second)
	require.NoError(t, err)

	got := lockAsync(waiter, "w:release", 20*time.Second)
	waiting(t, waiter, "w:release")
	require.NoError(t, l.Unlock(bg))
	require.NoError(t, <-got)
	assert.Zero(t, waiter.room.waiting.Load(), "the waiter left the room")
}

// TestReleasePublishesItsHolderID: an Unlock's release publishes the id
// the masters give its holder (the first 16 hex digits of the SHA-1 of
// the value it held, as a waiting attempt's answer names the holder, see
// contention.go): the Client sends it (scripts.Release does not hash the
// token), and a waiter that already saw that release does not wait for
// it (waitRoom.released). With nobody waiting, the release does not
// read the key's waiters' set: it checks that the set exists (EXISTS),
// which costs a master less than reading it (docs/benchmarks.md).
func TestReleasePublishesItsHolderID(t *testing.T) {
	servers := masters(t, 3)
	t.Run("script", func(t *testing.T) { releasePublishesItsHolderID(t, servers, true) })
	// With native commands: on Redis 7 the release is the script still;
	// on Valkey 9 and Redis 8.4+ (make test's other passes) it is
	// DELIFEQ or DELEX, and the Client's SPUBLISH right behind it.
	t.Run("native", func(t *testing.T) { releasePublishesItsHolderID(t, servers, false) })
}

// releasePublishesItsHolderID is TestReleasePublishesItsHolderID with
// Config.DisableNativeCommands set to script.
func releasePublishesItsHolderID(t *testing.T, servers []*redistest.Server, script bool) {
	c := client(t, servers, Config{DisableNativeCommands: script})
	key := "w:published:" + strconv.FormatBool(script)
	nc, err := net.Dial("tcp", servers[0].Addr())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	rd := resp.NewReader(nc, 4096, resp.Limits{})
	_, err = nc.Write(resp.AppendCommand(nil, "SSUBSCRIBE", scripts.ReleasedChannelPrefix+key))
	require.NoError(t, err)
	_, err = rd.ReadReply() // the subscription's confirmation
	require.NoError(t, err)

	// Nobody waits: the script publishes nothing, and reads nothing but
	// one EXISTS of the waiters' set and the mark (a native release
	// reads no waiters, and its SPUBLISH goes whatever they are).
	_, native := c.nativeFor(&cmdRelease, c.connFor(0, 0))
	native = native && !script
	if !native {
		_, err = redistest.Do(servers[0].Addr(), "CONFIG", "RESETSTAT")
		require.NoError(t, err)
		l, err := c.Lock(bg, key, 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(bg))
		_, err = nc.Write(resp.AppendCommand(nil, "PING"))
		require.NoError(t, err)
		pong, err := rd.ReadReply() // a message would come first
		require.NoError(t, err)
		require.Len(t, pong, 3)
		assert.Equal(t, "pong", string(pong[1].Bytes), "a release nobody waited for published")
		vals, err := redistest.Do(servers[0].Addr(), "INFO", "commandstats")
		require.NoError(t, err)
		stats := string(vals[0].Bytes)
		assert.Contains(t, stats, "cmdstat_exists:calls=1,", "the release checked the mark")
		assert.NotContains(t, stats, "cmdstat_zrange:", "the release read a waiters' set that does not exist")
		assert.NotContains(t, stats, "cmdstat_spublish:", "the release published for nobody")
	}

	// A Client waits (its mark, see scripts.ListenSuffix): the release
	// publishes its holder's id.
	_, err = redistest.Do(servers[0].Addr(), "SET", key+scripts.ListenSuffix, "1", "PX", "60000")
	require.NoError(t, err)
	l, err := c.Lock(bg, key, 10*time.Second)
	require.NoError(t, err)
	vals, err := redistest.Do(servers[0].Addr(), "GET", key)
	require.NoError(t, err)
	held := string(vals[0].Bytes)
	require.NoError(t, l.Unlock(bg))
	msg, err := rd.ReadReply() // the header, "smessage", the channel, the id
	require.NoError(t, err)
	require.Len(t, msg, 4)
	assert.Equal(t, scripts.ReleasedChannelPrefix+key, string(msg[2].Bytes))
	assert.Equal(t, releaseIDOf(held), string(msg[3].Bytes), "the release's id is its holder's")
}

func TestWaiterWokenByExpiry(t *testing.T) {
	servers := masters(t, 3)
	holder := client(t, servers, Config{})
	waiter := client(t, servers, Config{RetryDelay: noRetry})
	_, err := holder.Lock(bg, "w:expiry", 300*time.Millisecond) // never released
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, <-lockAsync(waiter, "w:expiry", 20*time.Second))
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "acquired while the holder's key lived")
}

func TestWaiterWokenAfterSubscriptionsKilled(t *testing.T) {
	servers := masters(t, 3)
	holder := client(t, servers, Config{})
	waiter := client(t, servers, Config{RetryDelay: noRetry})
	l, err := holder.Lock(bg, "w:kill", 20*time.Second)
	require.NoError(t, err)
	got := lockAsync(waiter, "w:kill", 20*time.Second)
	waiting(t, waiter, "w:kill")
	gens := make([]uint64, len(servers))
	for i, sc := range waiter.room.subs {
		gens[i] = sc.Info().Generation
	}
	for _, s := range servers {
		vals := runCommand(t, s.Addr(), "CLIENT", "KILL", "TYPE", "pubsub")
		require.Equal(t, int64(1), vals[0].Int, "pub/sub connections killed on %s", s.Addr())
	}
	// Every pub/sub socket reconnects, and the waiter subscribes again.
	require.Eventually(t, func() bool {
		for i, sc := range waiter.room.subs {
			if info := sc.Info(); info == nil || info.Generation == gens[i] {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond)
	waiting(t, waiter, "w:kill")
	require.NoError(t, l.Unlock(bg))
	require.NoError(t, <-got)
}

// One release wakes one waiter of this Client, the longest waiting, and a
// new Lock queues behind the waiters instead of barging in. One master, so
// that a woken waiter finds the key free (with several, it may reach one
// before the release does, fail, and retry): any failed attempt is a
// waiter woken for nothing.
func TestWaitersWokenOneByOneInOrder(t *testing.T) {
	servers := masters(t, 1)
	holder := client(t, servers, Config{})
	var failed atomic.Int32
	waiter := client(t, servers, Config{RetryDelay: noRetry, Hooks: Hooks{Event: func(ev Event, _ string) {
		if ev == EventFailed {
			failed.Add(1)
		}
	}}})
	const key = "w:order"
	l, err := holder.Lock(bg, key, 20*time.Second)
	require.NoError(t, err)

	var mu sync.Mutex
	var order []int
	release := make([]chan struct{}, 3)
	done := make(chan error, 3)
	for i := range release {
		release[i] = make(chan struct{})
		go func() {
			ctx, cancel := context.WithTimeout(bg, 20*time.Second)
			defer cancel()
			wl, err := waiter.Lock(ctx, key, 20*time.Second)
			if err == nil {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				<-release[i]
				err = wl.Unlock(bg)
			}
			done <- err
		}()
		// Joined in this order.
		require.Eventually(t, func() bool {
			waiter.room.mu.Lock()
			defer waiter.room.mu.Unlock()
			kw := waiter.room.keys[key]
			return kw != nil && len(kw.queue) == i+1
		}, 10*time.Second, time.Millisecond)
		waiting(t, waiter, key) // subscribed: the next one queues behind without an attempt
	}
	waiting(t, waiter, key)
	// The first waiter failed twice (its first attempt, and the one after
	// it subscribed); the others queued behind it without an attempt.
	require.Eventually(t, func() bool { return failed.Load() == 2 }, 10*time.Second, time.Millisecond)
	before := failed.Load()
	require.NoError(t, l.Unlock(bg))
	for i := range release {
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(order) == i+1
		}, 10*time.Second, time.Millisecond)
		// The others were not woken: no attempt of theirs failed.
		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, before, failed.Load(), "a release woke more than one waiter")
		close(release[i])
		require.NoError(t, <-done)
	}
	assert.Equal(t, []int{0, 1, 2}, order)
}

func TestWaiterReturnsOnClose(t *testing.T) {
	servers := masters(t, 3)
	holder := client(t, servers, Config{})
	waiter, err := New(bg, Config{Addrs: redistest.Addrs(servers), RetryDelay: noRetry, DisableRestartGuard: true})
	require.NoError(t, err)
	_, err = holder.Lock(bg, "w:close", 20*time.Second)
	require.NoError(t, err)
	got := lockAsync(waiter, "w:close", 20*time.Second)
	waiting(t, waiter, "w:close")
	require.NoError(t, waiter.Close())
	select {
	case err := <-got:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting Lock outlived Close")
	}
}

func TestWaiterCancelled(t *testing.T) {
	servers := masters(t, 3)
	holder := client(t, servers, Config{})
	waiter := client(t, servers, Config{RetryDelay: noRetry})
	_, err := holder.Lock(bg, "w:cancel", 20*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	got := make(chan error, 1)
	go func() {
		_, err := waiter.Lock(ctx, "w:cancel", 20*time.Second)
		got <- err
	}()
	waiting(t, waiter, "w:cancel")
	require.Equal(t, len(servers), shardSubscribers(t, servers, "w:cancel"), "the waiter's subscriptions, one per master")
	cancel()
	require.ErrorIs(t, <-got, context.Canceled)
	assert.Zero(t, waiter.room.waiting.Load())
	// The last waiter of the key unsubscribed.
	require.Eventually(t, func() bool { return shardSubscribers(t, servers, "w:cancel") == 0 }, 10*time.Second, 5*time.Millisecond)
}

// shardSubscribers returns the subscribers of key's release channel on
// all of servers together (PUBSUB SHARDNUMSUB: the channel is a shard
// channel, which PUBSUB NUMSUB does not count).
func shardSubscribers(t *testing.T, servers []*redistest.Server, key string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		vals := runCommand(t, s.Addr(), "PUBSUB", "SHARDNUMSUB", releasedChannelPrefix+key)
		require.Len(t, vals, 3)
		n += int(vals[2].Int)
	}
	return n
}

func TestMultiWaiterWokenByReleaseOfAnyKey(t *testing.T) {
	servers := masters(t, 3)
	holder := client(t, servers, Config{})
	waiter := client(t, servers, Config{RetryDelay: noRetry})
	l, err := holder.LockMulti(bg, []string{"m:a", "m:b"}, 20*time.Second)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		wl, err := waiter.LockMulti(ctx, []string{"m:c", "m:b"}, 20*time.Second)
		if err == nil {
			err = wl.Unlock(bg)
		}
		got <- err
	}()
	waiting(t, waiter, "m:b")
	waiting(t, waiter, "m:c")
	require.NoError(t, l.Unlock(bg))
	require.NoError(t, <-got)
	assert.Zero(t, waiter.room.waiting.Load())
}

// A release whose message one master dropped still wakes the waiter (the
// other masters' messages do); one whose messages every master dropped
// costs the waiter its retry delay, not its lock.
func TestWaiterWithMessagesDropped(t *testing.T) {
	t.Run("one master", func(t *testing.T) {
		servers, addrs := fakeMasters(t, 3)
		holder := fakeClient(t, addrs, Config{})
		waiter := fakeClient(t, addrs, Config{RetryDelay: noRetry})
		l, err := holder.Lock(bg, "d:one", 20*time.Second)
		require.NoError(t, err)
		// The holder must be on all three masters, so that its release
		// publishes three messages and the two left make a quorum. Lock
		// returns at a quorum: the waiter's first attempt could otherwise
		// take the third master before the holder's SET lands there, and
		// the release would publish two messages, one of them dropped
		// below, leaving the waiter to its retry delay (an hour here).
		fakeHolds(t, servers, "d:one", l.tok)
		got := lockAsync(waiter, "d:one", 20*time.Second)
		waiting(t, waiter, "d:one")
		servers[0].DropMessages(1)
		require.NoError(t, l.Unlock(bg))
		require.NoError(t, <-got)
	})
	t.Run("every master", func(t *testing.T) {
		servers, addrs := fakeMasters(t, 3)
		holder := fakeClient(t, addrs, Config{})
		waiter := fakeClient(t, addrs, Config{RetryDelay: 200 * time.Millisecond})
		l, err := holder.Lock(bg, "d:all", 20*time.Second)
		require.NoError(t, err)
		got := lockAsync(waiter, "d:all", 20*time.Second)
		waiting(t, waiter, "d:all")
		for _, s := range servers {
			s.DropMessages(-1)
		}
		require.NoError(t, l.Unlock(bg))
		require.NoError(t, <-got)
	})
}

// Goroutines take one key in turn, relocking at once, with no retry delay
// to fall back on: every wait must end by a wake-up. Two goroutines of one
// Client, then two of each of two Clients (two processes, as far as waking
// goes). This caught two lost wake-ups: a Lock that queued behind waiters
// who had just left (it must attempt after it subscribes), and a waiter
// woken by a release's first message that reached the other masters before
// the release did (it found the holder still there, and the release's
// other messages counted as seen).
//
// Its Clients' MasterTimeout is 500 ms: an attempt that every master
// fails to answer in time learns of no holder, so no release is sure to
// wake it, and the call waits its RetryDelay by design (here an hour).
// make test-stress's GOMAXPROCS=1 stage (-race) once timed two attempts
// out on every master within the 50 ms default, and their Locks waited
// until ctx ended; this test is about wake-ups, not timeouts.
func TestWaitersNeverStall(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	for _, tc := range []struct {
		name             string
		clients, perEach int
	}{{"one client", 1, 2}, {"two clients", 2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			servers := masters(t, 5)
			var n atomic.Int64
			var wg sync.WaitGroup
			stop := time.Now().Add(time.Second)
			for range tc.clients {
				c := client(t, servers, Config{RetryDelay: noRetry, MasterTimeout: 500 * time.Millisecond})
				for range tc.perEach {
					wg.Go(func() {
						for time.Now().Before(stop) {
							ctx, cancel := context.WithTimeout(bg, 10*time.Second)
							l, err := c.Lock(ctx, "w:stall", 10*time.Second)
							cancel()
							if err != nil {
								t.Errorf("after %d locks: %v", n.Load(), err)
								return
							}
							n.Add(1)
							if err := l.Unlock(bg); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
			}
			wg.Wait()
			t.Logf("%d locks", n.Load())
		})
	}
}

// A waiter may skip its own attempt and wait its turn only behind waiters
// that are there and subscribed (join's settled); one that joins a key
// whose waiters just left must attempt, since the release it would wait
// for may have come before its subscription.
func TestJoinSettled(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{})
	first, settled := c.room.join(bg, "j", nil)
	assert.False(t, settled, "the first waiter of a key")
	second, settled := c.room.join(bg, "j", nil)
	assert.True(t, settled, "behind a subscribed waiter")
	c.room.leave(first, true)
	c.room.leave(second, true)
	third, settled := c.room.join(bg, "j", nil)
	assert.False(t, settled, "its waiters left")
	c.room.leave(third, false)

	// Not behind a waiter whose subscription a reconnect dropped.
	a, _ := c.room.join(bg, "k", nil)
	for _, s := range servers {
		runCommand(t, s.Addr(), "CLIENT", "KILL", "TYPE", "pubsub")
	}
	require.Eventually(t, func() bool {
		for _, sc := range c.room.subs {
			if info := sc.Info(); info == nil || info.Generation < 2 || sc.Err() != nil {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond)
	b, settled := c.room.join(bg, "k", nil)
	assert.False(t, settled, "behind a waiter whose subscriptions are gone")
	c.room.leave(a, false)
	c.room.leave(b, false)
}

// contention reads a failed waiting attempt's answers: a holder with a
// quorum, or split votes and who among the losers goes first (every loser
// computes the same one), and when a quorum frees by expiry.
func TestContention(t *testing.T) {
	c := &Client{quorum: 3, masters: make([]*master, 5)}
	o := c.newCall()
	mine := newToken()
	x, y := [releaseIDLen]byte{'x'}, [releaseIDLen]byte{'y'}
	set := func(outs []Outcome, ids [][releaseIDLen]byte, pttls []time.Duration) {
		for i := range outs {
			o.res[i].Outcome = outs[i]
			o.learn.hasHolder[i] = outs[i] == OutcomeTaken
			o.learn.holder[i], o.learn.pttl[i] = ids[i], pttls[i]
		}
	}
	T, K, F := OutcomeOK, OutcomeTaken, OutcomeTimeout
	s := time.Second

	set([]Outcome{K, K, K, T, F}, [][releaseIDLen]byte{x, x, x, {}, {}}, []time.Duration{3 * s, 1 * s, 2 * s, 0, 0})
	held, holder, elect, freeIn := o.learn.contention(o.res, c.quorum, &mine)
	assert.True(t, held)
	assert.Equal(t, x, holder)
	assert.False(t, elect)
	assert.Equal(t, 2*s, freeIn, "ours is free at once, the timeout never: the third is x's second expiry")

	// Split 2 (x) / 2 (ours) / 1 (y): the tie goes to the smaller id.
	set([]Outcome{K, K, T, T, K}, [][releaseIDLen]byte{x, x, {}, {}, y}, []time.Duration{s, s, 0, 0, s})
	held, _, elect, _ = o.learn.contention(o.res, c.quorum, &mine)
	assert.False(t, held)
	id := mine.releaseID()
	assert.Equal(t, bytes.Compare(id[:], x[:]) < 0, elect)

	// Split 1 (x) / 2 (ours) / 2 (y) with ours the smaller: elected.
	set([]Outcome{K, T, T, K, K}, [][releaseIDLen]byte{x, {}, {}, y, y}, []time.Duration{s, 0, 0, s, s})
	y = [releaseIDLen]byte{'z', 'z'} // larger than any hex id
	for i := 3; i < 5; i++ {
		o.learn.holder[i] = y
	}
	_, _, elect, _ = o.learn.contention(o.res, c.quorum, &mine)
	assert.True(t, elect, "most votes, tie to the smaller id")

	// One vote of ours: never elected over a two-vote loser.
	set([]Outcome{T, K, K, K, F}, [][releaseIDLen]byte{{}, x, x, y, {}}, []time.Duration{0, s, s, s, 0})
	held, _, elect, freeIn = o.learn.contention(o.res, c.quorum, &mine)
	assert.False(t, held)
	assert.False(t, elect)
	assert.Equal(t, s, freeIn)
}

// A release whose messages come while every waiter of the key is making
// its attempt wakes nobody; the next waiter to wait takes that wake-up and
// attempts again, even when the holder its attempt saw is another one: a
// hand-over in another Client changes the holder without a release, and
// the new holder's release may be the one that came during the attempt.
func TestUnheardReleaseWakesTheNextToWait(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{})
	const key = "unheard"
	channel := []byte(releasedChannelPrefix + key)
	release := func(id string) {
		for range c.quorum {
			c.room.onMessage(channel, []byte(id))
		}
	}
	seenHolder := [releaseIDLen]byte([]byte("0123456789abcdef")) // handed over: never released
	w, _ := c.room.join(bg, key, nil)
	defer c.room.leave(w, false)
	timer := time.NewTimer(time.Hour)

	// Without a release, the wait for the holder lasts its delay.
	ok, woken := c.room.wait(bg, w, timer, 20*time.Millisecond, false, &seenHolder)
	require.True(t, ok)
	require.False(t, woken, "nothing was released")

	// A release wakes w, which makes its attempt (out of the queue); the
	// next holder's release comes meanwhile.
	release("aaaaaaaaaaaaaaaa")
	<-w.wake
	release("bbbbbbbbbbbbbbbb")
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	ok, woken = c.room.wait(ctx, w, timer, time.Hour, false, &seenHolder)
	assert.True(t, ok, "waited for a release that had come")
	assert.True(t, woken)

	// Taken once: the next wait lasts its delay again.
	ok, woken = c.room.wait(bg, w, timer, 20*time.Millisecond, false, &seenHolder)
	assert.True(t, ok)
	assert.False(t, woken, "the unheard wake-up was taken already")
}

// TestSubscriptionsLinger: a key's subscriptions outlive its last waiter
// (subscriptionLinger), so a Client that waits on the key again soon
// sends no SSUBSCRIBE (nor, before it, SUNSUBSCRIBE); they end after
// lingering.
func TestSubscriptionsLinger(t *testing.T) {
	servers := masters(t, 3)
	holder := client(t, servers, Config{})
	waiter := client(t, servers, Config{RetryDelay: noRetry})
	ssubscribes := func() int {
		n := 0
		for _, s := range servers {
			stats := string(runCommand(t, s.Addr(), "INFO", "commandstats")[0].Bytes)
			if _, rest, ok := strings.Cut(stats, "cmdstat_ssubscribe:calls="); ok {
				calls, _, _ := strings.Cut(rest, ",")
				c, err := strconv.Atoi(calls)
				require.NoError(t, err)
				n += c
			}
		}
		return n
	}
	cycle := func() {
		t.Helper()
		var l Lock
		require.Eventually(t, func() bool { // the waiter's Unlock of the last cycle may still be on its way
			var err error
			l, err = holder.TryLock(bg, "linger", 20*time.Second)
			return err == nil
		}, 5*time.Second, time.Millisecond)
		got := lockAsync(waiter, "linger", 20*time.Second)
		waiting(t, waiter, "linger")
		require.NoError(t, l.Unlock(bg))
		require.NoError(t, <-got)
	}
	cycle()
	first := ssubscribes()
	require.Equal(t, 2*len(servers), first, "the first wait subscribed to the key's two channels on every master")
	cycle()
	assert.Equal(t, first, ssubscribes(), "the second wait found the subscriptions made")
	require.Eventually(t, func() bool { return shardSubscribers(t, servers, "linger") == 0 },
		10*time.Second, 10*time.Millisecond, "they end once they lingered")
}

// TestUnenrolledWaitersAreWoken: a waiting Lock that is not among the
// key's waiters (a fenced or multi-key Lock, a read-write lock's writer
// or reader) marks the key (scripts.ListenSuffix), and the holder's
// release, which finds no waiters' set, publishes because of it: with no
// retry delay to fall back on, each waiter is granted. The check proves
// it can fail: with the marks deleted before the release, the waiter is
// still waiting a second later (the release published nothing).
func TestUnenrolledWaitersAreWoken(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	servers := masters(t, 3)
	const name = "u:k"
	rwOf := func(c *Client) *RWMutex {
		rw, err := c.RWMutex(name)
		require.NoError(t, err)
		return rw
	}
	for _, tc := range []struct {
		what    string
		fencing bool
		wait    func(ctx context.Context, c *Client) error
	}{
		{"fenced", true, func(ctx context.Context, c *Client) error {
			l, err := c.Lock(ctx, name, 10*time.Second)
			if err == nil {
				err = l.Unlock(bg)
			}
			return err
		}},
		{"multi-key", false, func(ctx context.Context, c *Client) error {
			l, err := c.LockMulti(ctx, []string{name, name + ":other"}, 10*time.Second)
			if err == nil {
				err = l.Unlock(bg)
			}
			return err
		}},
		{"writer", false, func(ctx context.Context, c *Client) error {
			l, err := rwOf(c).Lock(ctx, 10*time.Second)
			if err == nil {
				err = l.Unlock(bg)
			}
			return err
		}},
		{"reader", false, func(ctx context.Context, c *Client) error {
			r, err := rwOf(c).RLock(ctx, 10*time.Second)
			if err == nil {
				err = r.Unlock(bg)
			}
			return err
		}},
	} {
		for _, broken := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/marks deleted=%v", tc.what, broken), func(t *testing.T) {
				// The holder releases with the script: a native
				// release (DELIFEQ, DELEX) publishes whatever waits.
				// MasterTimeout 250ms, both clients: an attempt whose
				// timeouts leave no quorum reads as an outage, not
				// contention, and waits out the retry delay (an hour
				// here) outside the room (retry.after); under make
				// test-stress a reply can take more than the default 50ms.
				holder := client(t, servers, Config{Fencing: tc.fencing, DisableNativeCommands: true, MasterTimeout: 250 * time.Millisecond})
				// A waiter attempts before it subscribes and once more
				// after (see waitRoom.join); each attempt marks the key.
				// The broken variant deletes the marks after the second
				// attempt's report, and again while one it did not wait
				// for marks a master later (make test-stress saw that
				// attempt mark the key after the test deleted the marks).
				var reported atomic.Int32 // a master's part in one of the waiter's attempts
				waiter := client(t, servers, Config{Fencing: tc.fencing, RetryDelay: noRetry, MasterTimeout: 250 * time.Millisecond, Hooks: Hooks{
					Master: func(op Op, _ string, _ Outcome, _ time.Duration) {
						if op == OpLock {
							reported.Add(1)
						}
					},
				}})
				l, err := holder.Lock(bg, name, 20*time.Second)
				require.NoError(t, err)
				ownEverywhere(t, &l, 20*time.Second) // or a master may take the waiter's attempt, and not mark
				ctx, cancel := context.WithTimeout(bg, 20*time.Second)
				defer cancel()
				got := make(chan error, 1)
				go func() { got <- tc.wait(ctx, waiter) }()
				waiting(t, waiter, name)
				require.Eventually(t, func() bool { return int(reported.Load()) >= 2*len(servers) },
					5*time.Second, time.Millisecond, "the waiter's attempt after it subscribed")
				for _, s := range servers {
					n, err := redistest.Do(s.Addr(), "EXISTS", name+scripts.ListenSuffix)
					require.NoError(t, err)
					require.EqualValues(t, 1, n[0].Int, "the waiter marks the key on %s", s.Addr())
				}
				if broken {
					// Until two looks 100 ms apart find no mark.
					for clean, looks := 0, 0; clean < 2; looks++ {
						require.Less(t, looks, 50, "the waiter keeps marking the key")
						clean++
						for _, s := range servers {
							n, err := redistest.Do(s.Addr(), "DEL", name+scripts.ListenSuffix)
							require.NoError(t, err)
							if n[0].Int != 0 {
								clean = 0
							}
						}
						time.Sleep(100 * time.Millisecond)
					}
				}
				require.NoError(t, l.Unlock(bg))
				if !broken {
					select {
					case err := <-got:
						require.NoError(t, err)
					case <-time.After(10 * time.Second):
						t.Fatal("the waiter was not woken by the release")
					}
					return
				}
				select {
				case err := <-got:
					t.Fatalf("woken though the release published nothing: %v", err)
				case <-time.After(time.Second):
				}
				cancel()
				<-got
			})
		}
	}
}
