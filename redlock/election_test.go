package redlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/internal/redistest"
)

// election returns the election called name on c, with ttl.
func election(t *testing.T, c *Client, name string, ttl time.Duration) *Election {
	t.Helper()
	e, err := c.Election(name, ttl)
	require.NoError(t, err)
	return e
}

func TestElectionArguments(t *testing.T) {
	servers := masters(t, 1)
	plain := client(t, servers, Config{})
	_, err := plain.Election("e", time.Second)
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "Config.Fencing")

	c := client(t, servers, Config{Fencing: true})
	for _, name := range []string{"", fenceKey, fenceKey + ":x"} {
		_, err := c.Election(name, time.Second)
		require.ErrorIs(t, err, ErrConfig, "name %q", name)
	}
	_, err = c.Election("e", 0)
	require.ErrorIs(t, err, ErrConfig)
	e := election(t, c, "e", time.Second)
	assert.Equal(t, "e", e.Name())
}

// Leaders follow each other with strictly greater terms, on clients that
// share no state; Leader shows each one while it leads, and no one after
// it resigned.
func TestElectionTermsIncrease(t *testing.T) {
	servers := masters(t, 3)
	var last uint64
	for i := range 6 {
		c := client(t, servers, Config{Fencing: true})
		e := election(t, c, "e:terms", 10*time.Second)
		value := string(rune('a' + i))
		l, err := e.Campaign(bg, value)
		require.NoError(t, err)
		require.Greater(t, l.Term(), last, "leader %d", i)
		last = l.Term()
		assert.Equal(t, value, l.Value())
		info, err := e.Leader(bg)
		require.NoError(t, err)
		assert.Equal(t, LeaderInfo{Term: l.Term(), Value: value}, info)
		f, ok := FenceFrom(l.Context())
		assert.True(t, ok)
		assert.Equal(t, l.Term(), f)

		require.NoError(t, l.Resign(bg))
		require.ErrorIs(t, context.Cause(l.Context()), ErrResigned)
		require.ErrorIs(t, l.Resign(bg), ErrNotHeld, "a second Resign")
		_, err = e.Leader(bg)
		require.ErrorIs(t, err, ErrNoLeader)
		require.NoError(t, c.Close())
	}
}

// Resign wakes the next candidate through the release: with an hour's
// retry delay and a lease of 20 s, nothing else could make it lead
// within seconds.
func TestResignWakesNextCandidate(t *testing.T) {
	servers := masters(t, 3)
	a := client(t, servers, Config{Fencing: true})
	b := client(t, servers, Config{Fencing: true, RetryDelay: noRetry, MaxTTL: time.Hour})
	ea := election(t, a, "e:resign", 20*time.Second)
	eb := election(t, b, "e:resign", 20*time.Second)
	la, err := ea.Campaign(bg, "a")
	require.NoError(t, err)

	got := make(chan *Leadership, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		l, err := eb.Campaign(ctx, "b")
		if err != nil {
			l = nil
		}
		got <- l
	}()
	waiting(t, b, "e:resign")
	resigned := time.Now()
	require.NoError(t, la.Resign(bg))
	lb := <-got
	require.NotNil(t, lb, "b's Campaign failed")
	took := time.Since(resigned)
	t.Logf("takeover after Resign: %v", took)
	assert.Less(t, took, 5*time.Second)
	assert.Greater(t, lb.Term(), la.Term())
	require.NoError(t, lb.Resign(bg))
}

// A Campaign cancelled while another leads returns ctx's error, and
// leaves nothing behind: no waiter, no renewal (leakcheck sees the
// goroutines).
func TestCampaignCancelled(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{Fencing: true})
	e := election(t, c, "e:cancel", 10*time.Second)
	l, err := e.Campaign(bg, "leader")
	require.NoError(t, err)

	other := client(t, servers, Config{Fencing: true})
	eo := election(t, other, "e:cancel", 10*time.Second)
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	_, err = eo.Campaign(ctx, "follower")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var re *Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "e:cancel", re.Key)
	assert.Zero(t, other.room.waiting.Load(), "the candidate left the room")
	other.renew.mu.Lock()
	assert.Empty(t, other.renew.entries)
	other.renew.mu.Unlock()

	// The leader was not disturbed.
	info, err := eo.Leader(bg)
	require.NoError(t, err)
	assert.Equal(t, l.Term(), info.Term)
	require.NoError(t, l.Resign(bg))
}

// A leadership lost on the masters (its keys gone) has its context
// cancelled with ErrNotHeld before its validity ends; one whose renewals
// fail (every master hangs) has it cancelled before as well, a tenth of
// its TTL ahead.
func TestLostLeadershipCancelsContextBeforeValidity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(servers []*fakeredis.Server, addrs []string)
	}{
		{"keys gone", func(_ []*fakeredis.Server, addrs []string) {
			for _, a := range addrs {
				runCommand(t, a, "DEL", "e:lost", "e:lost"+leaderSuffix)
			}
		}},
		{"renewals hang", func(servers []*fakeredis.Server, _ []string) {
			for _, s := range servers {
				s.SetFault("EVALSHA", fakeredis.Fault{Hang: true})
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The validity it had when lost: the latest of its extensions'
			// (Until reports the loss once lost).
			var lead atomic.Pointer[Leadership]
			var mu sync.Mutex
			var until time.Time
			latest := func() {
				if l := lead.Load(); l != nil {
					mu.Lock()
					if u := l.Until(); u.After(until) {
						until = u
					}
					mu.Unlock()
				}
			}
			servers, addrs := fakeMasters(t, 3)
			c := fakeClient(t, addrs, Config{Fencing: true, MasterTimeout: 50 * time.Millisecond, Hooks: Hooks{
				Event: func(ev Event, _ string) {
					if ev == EventExtended {
						latest()
					}
				},
			}})
			e := election(t, c, "e:lost", 600*time.Millisecond)
			l, err := e.Campaign(bg, "x")
			require.NoError(t, err)
			lead.Store(l)
			latest()
			tc.break_(servers, addrs)
			<-l.Context().Done()
			at := time.Now()
			mu.Lock()
			defer mu.Unlock()
			require.ErrorIs(t, context.Cause(l.Context()), ErrNotHeld)
			require.True(t, at.Before(until), "cancelled %v after the validity's end", at.Sub(until))
			t.Logf("cancelled %v before the validity's end", until.Sub(at))
			assert.False(t, l.Until().After(at), "Until reports the validity a lost leadership had")
			for _, s := range servers {
				s.ClearFaults()
			}
			require.ErrorIs(t, l.Resign(bg), ErrNotHeld)
		})
	}
}

// Closing the Client ends its leaderships: cause ErrNotHeld and ErrClosed.
func TestLeadershipEndsOnClose(t *testing.T) {
	_, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{Fencing: true})
	e := election(t, c, "e:close", 20*time.Second)
	l, err := e.Campaign(bg, "x")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	<-l.Context().Done()
	cause := context.Cause(l.Context())
	assert.ErrorIs(t, cause, ErrNotHeld)
	assert.ErrorIs(t, cause, ErrClosed)
	_, err = e.Campaign(bg, "y")
	assert.ErrorIs(t, err, ErrClosed)
}

// Observe sends each new leader, woken by the announcements and releases:
// with an hour's guard interval (MaxTTL) and retry delay, nothing else
// wakes it; a cancelled ctx closes the channel.
func TestObserve(t *testing.T) {
	servers := masters(t, 3)
	obs := client(t, servers, Config{Fencing: true, RetryDelay: noRetry, MaxTTL: time.Hour})
	eo := election(t, obs, "e:observe", 20*time.Second)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	ch := eo.Observe(ctx)
	waitWatched(t, obs, "e:observe")

	var prev uint64
	for i, value := range []string{"a", "b", "c"} {
		c := client(t, servers, Config{Fencing: true})
		l, err := election(t, c, "e:observe", 20*time.Second).Campaign(bg, value)
		require.NoError(t, err)
		select {
		case info := <-ch:
			assert.Equal(t, LeaderInfo{Term: l.Term(), Value: value}, info, "leader %d", i)
			assert.Greater(t, info.Term, prev)
			prev = info.Term
		case <-time.After(10 * time.Second):
			t.Fatalf("leader %d not observed", i)
		}
		require.NoError(t, l.Resign(bg))
	}
	cancel()
	for range ch { // until closed
	}
	require.Eventually(t, func() bool { return obs.room.waiting.Load() == 0 }, 5*time.Second, time.Millisecond, "the watcher left the room")
}

// waitWatched waits until c has a watcher of key subscribed on every
// master.
func waitWatched(t *testing.T, c *Client, key string) {
	t.Helper()
	subscribedWith(t, c, key, func(kw *keyWaiters) bool { return len(kw.watchers) > 0 })
}

// An Observe on a closed Client, or with an ended ctx, is closed at once;
// one running ends with its Client.
func TestObserveEnds(t *testing.T) {
	_, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{Fencing: true})
	e := election(t, c, "e:ends", 20*time.Second)
	done, cancel := context.WithCancel(bg)
	cancel()
	_, ok := <-e.Observe(done)
	assert.False(t, ok)

	ch := e.Observe(bg)
	require.NoError(t, c.Close())
	for range ch { // until closed
	}
	_, ok = <-e.Observe(bg)
	assert.False(t, ok)
	_, err := e.Leader(bg)
	assert.True(t, errors.Is(err, ErrClosed))
}

// Leader needs a quorum's record: a record on a minority is no leader.
func TestLeaderNeedsQuorum(t *testing.T) {
	servers, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{Fencing: true})
	e := election(t, c, "e:quorum", 20*time.Second)
	l, err := e.Campaign(bg, "x")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if _, _, ok := s.Lookup("e:quorum" + leaderSuffix); !ok {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond)
	for _, a := range addrs[:2] {
		runCommand(t, a, "DEL", "e:quorum"+leaderSuffix)
	}
	_, err = e.Leader(bg)
	require.ErrorIs(t, err, ErrNoLeader)
	require.NoError(t, l.Resign(bg))
}

// electionRoundTrip runs one hand-over between Clients a and b: a leads,
// b's observer sees it, b campaigns, a resigns, b leads with a greater
// term (woken by the release), and the observer and Leader see b.
func electionRoundTrip(t *testing.T, a, b *Client, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	ea, eb := election(t, a, name, 3*time.Second), election(t, b, name, 3*time.Second)
	leaders := eb.Observe(ctx)
	la, err := ea.Campaign(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, LeaderInfo{Term: la.Term(), Value: "a"}, <-leaders)

	got := make(chan *Leadership, 1)
	go func() {
		l, err := eb.Campaign(ctx, "b")
		if err != nil {
			l = nil
		}
		got <- l
	}()
	require.Eventually(t, func() bool { return b.room.waiting.Load() > 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, la.Resign(bg))
	lb := <-got
	require.NotNil(t, lb, "b's Campaign failed")
	assert.Greater(t, lb.Term(), la.Term())
	require.Equal(t, LeaderInfo{Term: lb.Term(), Value: "b"}, <-leaders)
	info, err := ea.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", info.Value)
	require.NoError(t, lb.Resign(bg))
}

// Elections over Sentinel (a Sentinel's primary and two standalone
// masters) and over a Redis Cluster (fenced copies, the election's keys
// at one place).
func TestElectionTopologies(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	t.Run("sentinel", func(t *testing.T) {
		g := redistest.StartSentinelGroupT(t, redistest.SentinelOptions{Sentinels: 1, Quorum: 1})
		standalone := masters(t, 2)
		cfg := Config{
			Addrs:  append([]string{sentinelAddr(g)}, redistest.Addrs(standalone)...),
			MaxTTL: 3 * time.Second, MasterTimeout: 250 * time.Millisecond,
			Fencing: true, DisableRestartGuard: true,
		}
		cfg.Conn.ReconnectMin, cfg.Conn.ReconnectMax = time.Millisecond, 20*time.Millisecond
		var cs [2]*Client
		for i := range cs {
			c, err := New(bg, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			cs[i] = c
		}
		electionRoundTrip(t, cs[0], cs[1], "e:sentinel")
	})
	t.Run("cluster", func(t *testing.T) {
		cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
		a := clusterClient(t, cl, Config{Fencing: true, MaxTTL: 3 * time.Second, DisableRestartGuard: true})
		b := clusterClient(t, cl, Config{Fencing: true, MaxTTL: 3 * time.Second, DisableRestartGuard: true})
		electionRoundTrip(t, a, b, "e:cluster")
	})
}

// A leadership outlives many TTLs, whatever Config.ExtendFraction and
// MaxExtensions say: renewed at least every half TTL, never capped.
func TestLeadershipRenewedPastExtendFraction(t *testing.T) {
	_, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{Fencing: true, ExtendFraction: 0.95, MaxExtensions: 2})
	const ttl = 200 * time.Millisecond
	l, err := election(t, c, "e:renewed", ttl).Campaign(bg, "x")
	require.NoError(t, err)
	select {
	case <-l.Context().Done():
		t.Fatalf("lost: %v", context.Cause(l.Context()))
	case <-time.After(10 * ttl):
	}
	require.NoError(t, l.Resign(bg))
}

// An announcement alerts the key's watchers, and neither wakes a waiter
// nor counts as a release (a candidate waiting for the leader's release
// would otherwise attempt for nothing); a release alerts watchers too.
func TestAnnouncementAlertsWatchersOnly(t *testing.T) {
	_, addrs := fakeMasters(t, 1)
	c := fakeClient(t, addrs, Config{Fencing: true})
	w := c.room.watch(bg, "e:ann")
	q, _ := c.room.join(bg, "e:ann", nil)
	defer c.room.leave(q, true)
	defer c.room.leave(w, true)
	assert.True(t, c.room.busy("e:ann", nil), "a waiter waits")

	c.room.onMessage([]byte(releasedChannelPrefix+"e:ann"), []byte(announcedPayload))
	assert.Len(t, w.wake, 1, "the watcher was alerted")
	assert.Empty(t, q.wake, "the waiter was woken")
	c.room.mu.Lock()
	kw := c.room.keys["e:ann"]
	assert.False(t, kw.unheard)
	assert.Zero(t, kw.nseen, "the announcement counted as a release")
	c.room.mu.Unlock()

	<-w.wake
	c.room.onMessage([]byte(releasedChannelPrefix+"e:ann"), []byte("0123456789abcdef"))
	assert.Len(t, w.wake, 1, "the watcher was not alerted by the release")
	assert.Len(t, q.wake, 1, "the waiter was not woken by the release")
}

// A Client whose only member of a key is a watcher does not make a
// Campaign (or Lock) queue behind it.
func TestWatcherIsNoWaiter(t *testing.T) {
	_, addrs := fakeMasters(t, 1)
	c := fakeClient(t, addrs, Config{Fencing: true})
	w := c.room.watch(bg, "e:w")
	defer c.room.leave(w, true)
	assert.False(t, c.room.busy("e:w", nil))
}
