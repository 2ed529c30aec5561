package redlock

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

func TestParseSentinelAddr(t *testing.T) {
	e, err := parseSentinelAddr("redis-sentinel://bob:s3cret@10.0.0.1:26379,10.0.0.2:26379/mymaster?db=2", pipe.Options{ClientName: "me"})
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1:26379", "10.0.0.2:26379"}, e.sentinels)
	assert.Equal(t, "mymaster", e.name)
	assert.Equal(t, "bob", e.opts.Username)
	assert.Equal(t, "s3cret", e.opts.Password)
	assert.Equal(t, 2, e.opts.DB)
	assert.Equal(t, "me", e.opts.ClientName)
	assert.Empty(t, e.ask.Password, "Sentinels are asked without the primary's credentials")
	assert.Zero(t, e.ask.DB)

	e, err = parseSentinelAddr("rediss-sentinel://h:1/m", pipe.Options{})
	require.NoError(t, err)
	assert.Equal(t, "p", e.primaryOptions("p:6379").TLS.ServerName)
	assert.Nil(t, e.ask.TLS)

	e, err = parseSentinelAddr("redis-sentinel://h:1/m?sentinel_user=sam&sentinel_password=s%26pw&sentinel_tls=true", pipe.Options{})
	require.NoError(t, err)
	assert.Equal(t, "sam", e.ask.Username)
	assert.Equal(t, "s&pw", e.ask.Password)
	assert.Empty(t, e.opts.Password, "the primary's credentials are the userinfo's")
	require.NotNil(t, e.ask.TLS)
	assert.Nil(t, e.opts.TLS)

	for _, bad := range []string{
		"redis-sentinel://h:1/m?sentinel_tls=maybe",
		"redis-sentinel://h:1",
		"redis-sentinel://h:1/",
		"redis-sentinel://h/m",
		"redis-sentinel://h:1/m/x",
		"redis-sentinel://h:1/m?db=x",
		"redis-sentinel://h:1/m?copies=3",
		"redis-sentinel://pw:sec%zzret@h:1/m",
	} {
		_, err := parseSentinelAddr(bad, pipe.Options{})
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "sec", "an error must not show the password")
	}
}

// TestSentinelCredentials: Sentinels that require a password are asked
// with sentinel_user and sentinel_password; without them the Sentinels
// refuse (NOAUTH) and New says so, without the password.
func TestSentinelCredentials(t *testing.T) {
	g := redistest.StartSentinelGroupT(t, redistest.SentinelOptions{Sentinels: 1, Quorum: 1})
	for _, addr := range g.SentinelAddrs() {
		_, err := redistest.Do(addr, "ACL", "SETUSER", "watcher", "on", ">watch-pw", "+@all", "~*", "&*")
		require.NoError(t, err)
		_, err = redistest.Do(addr, "ACL", "SETUSER", "default", "off")
		require.NoError(t, err)
	}
	cfg := Config{Addrs: []string{sentinelAddr(g)}, DisableRestartGuard: true}
	_, err := New(bg, cfg)
	require.Error(t, err)
	require.Contains(t, err.Error(), "NOAUTH")

	cfg.Addrs = []string{sentinelAddr(g) + "?sentinel_user=watcher&sentinel_password=watch-pw"}
	c, err := New(bg, cfg)
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, g.Primary().Addr(), c.Masters()[0].Addr)
	l, err := c.TryLock(bg, "k", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg))

	cfg.Addrs = []string{sentinelAddr(g) + "?sentinel_user=watcher&sentinel_password=wrong-pw"}
	_, err = New(bg, cfg)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "wrong-pw")
}

// sentinelAddr is the Config.Addrs entry of g.
func sentinelAddr(g *redistest.SentinelGroup) string {
	return "redis-sentinel://" + strings.Join(g.SentinelAddrs(), ",") + "/" + g.MasterName()
}

// TestSentinelMaster: a Sentinel-managed primary is one master of the
// quorum beside two standalone ones. Through a Sentinel failover the lock
// stays exclusive; the Client follows the new primary, holds it out for
// MaxTTL + FailoverGrace, and wakes its waiters through it afterwards.
func TestSentinelMaster(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	g := redistest.StartSentinelGroupT(t, redistest.SentinelOptions{Sentinels: 1, Quorum: 1})
	standalone := masters(t, 2)
	cfg := Config{
		Addrs:         append([]string{sentinelAddr(g)}, redistest.Addrs(standalone)...),
		MaxTTL:        3 * time.Second,
		FailoverGrace: 500 * time.Millisecond,
		MasterTimeout: 250 * time.Millisecond,
		RetryDelay:    10 * time.Millisecond,
	}
	cfg.Conn.ReconnectMin, cfg.Conn.ReconnectMax = time.Millisecond, 20*time.Millisecond
	a, err := New(bg, cfg)
	require.NoError(t, err)
	defer a.Close()
	b, err := New(bg, cfg)
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, g.Primary().Addr(), a.Masters()[0].Addr)

	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	unguarded(t, a) // the test counts on every master from here
	l, err := a.Lock(ctx, "k", 3*time.Second)
	require.NoError(t, err)

	old := g.Primary().Addr()
	require.NoError(t, g.Failover())
	promoted := g.Primary().Addr()
	require.NotEqual(t, old, promoted)
	_, err = b.TryLock(bg, "k", 3*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "a's lock holds on the standalone masters")
	require.Eventually(t, func() bool { return b.Masters()[0].Addr == promoted }, 5*time.Second, 10*time.Millisecond, "b follows the primary from %s to %s", old, promoted)
	guard := b.Masters()[0].Guard
	assert.True(t, guard.After(time.Now()), "the moved master is held out")
	require.NoError(t, l.Unlock(bg))

	// A Lock, not a TryLock: a's release may reach a master after b's
	// first attempt does (two connections), under load.
	l, err = b.Lock(ctx, "k", 3*time.Second)
	require.NoError(t, err, "the two standalone masters make a quorum meanwhile")
	assert.True(t, time.Now().Before(guard), "taken while the moved master was held out")
	require.NoError(t, l.Unlock(bg))

	time.Sleep(time.Until(guard) + 50*time.Millisecond)
	l, err = b.TryLock(bg, "k", 3*time.Second)
	require.NoError(t, err)
	states := inspectAll(t, l.Inspect, nil)
	assert.True(t, states[0].Ours, "the new primary %s votes again after the guard", promoted)
	assert.Equal(t, promoted, states[0].Addr)

	// A waiter of a is woken by b's release, heard on the new primary too.
	got := make(chan error, 1)
	go func() {
		wl, err := a.Lock(ctx, "k", 3*time.Second)
		if err == nil {
			err = wl.Unlock(bg)
		}
		got <- err
	}()
	require.Eventually(t, func() bool { return a.room.waiting.Load() > 0 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, l.Unlock(bg))
	require.NoError(t, <-got)
}

// TestSentinelNewRefuses: a name no Sentinel knows, Sentinels that do not
// answer, and the same server under a Sentinel entry and a standalone one:
// clear errors from New.
func TestSentinelNewRefuses(t *testing.T) {
	g := redistest.StartSentinelGroupT(t, redistest.SentinelOptions{Sentinels: 1, Quorum: 1, Replicas: -1})
	down := redistest.Start(t, redistest.Options{})
	downAddr := down.Addr()
	down.Stop()
	for name, tt := range map[string]struct {
		addrs      []string
		want       string
		isUnusable bool
	}{
		"unknown name":    {[]string{"redis-sentinel://" + g.SentinelAddrs()[0] + "/nosuch"}, "nosuch", true},
		"no Sentinel":     {[]string{"redis-sentinel://" + downAddr + "/mymaster"}, "no Sentinel", false},
		"the same server": {[]string{sentinelAddr(g), g.Primary().Addr()}, "same server", true},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := New(bg, Config{Addrs: tt.addrs, DisableRestartGuard: true, Conn: Connection{DialTimeout: time.Second}})
			if err == nil {
				c.Close()
			}
			require.ErrorContains(t, err, tt.want)
			assert.Equal(t, tt.isUnusable, errors.Is(err, ErrMasterUnusable))
		})
	}
}

// A Sentinel that requires a password, asked without one, answers
// NOAUTH: the error names the parameter that gives the Sentinels theirs,
// since the address's own credentials are the primary's.
func TestSentinelNoAuthNamesSentinelPassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var served sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		served.Wait()
	})
	served.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			served.Go(func() {
				defer nc.Close()
				rd := resp.NewReader(nc, 0, resp.Limits{})
				for {
					if _, err := rd.ReadReply(); err != nil {
						return
					}
					if _, err := nc.Write([]byte("-NOAUTH Authentication required.\r\n")); err != nil {
						return
					}
				}
			})
		}
	})
	e, err := parseSentinelAddr("redis-sentinel://:primary-pw@"+ln.Addr().String()+"/mymaster", pipe.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	_, err = e.primary(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NOAUTH")
	assert.Contains(t, err.Error(), "sentinel_password")
	assert.NotContains(t, err.Error(), "primary-pw", "a password in an error")

	e, err = parseSentinelAddr("redis-sentinel://"+ln.Addr().String()+"/mymaster?sentinel_password=wrong", pipe.Options{})
	require.NoError(t, err)
	_, err = e.primary(ctx)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "sentinel_password parameter", "the hint is for Sentinels asked without a password")
}

// FailoverGrace, unset, comes from a Sentinel-managed primary's
// min-replicas-max-lag when min-replicas-to-write bounds a deposed
// primary's writes, plus a second; without it, the 15 s default.
func TestSentinelFailoverGraceFromPrimary(t *testing.T) {
	g := redistest.StartSentinelGroupT(t, redistest.SentinelOptions{Sentinels: 1, Quorum: 1})
	standalone := masters(t, 2)
	cfg := Config{Addrs: append([]string{sentinelAddr(g)}, redistest.Addrs(standalone)...), DisableRestartGuard: true}

	c, err := New(bg, cfg)
	require.NoError(t, err)
	assert.Equal(t, 15*time.Second, c.FailoverGrace(), "nothing bounds the deposed primary's writes")
	c.Close()

	p := g.Primary()
	require.NoError(t, p.Command("CONFIG", "SET", "min-replicas-max-lag", "4"))
	require.NoError(t, p.Command("CONFIG", "SET", "min-replicas-to-write", "1"))
	t.Cleanup(func() { p.Command("CONFIG", "SET", "min-replicas-to-write", "0") })
	c, err = New(bg, cfg)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, c.FailoverGrace())
	c.Close()

	cfg.FailoverGrace = time.Second
	c, err = New(bg, cfg)
	require.NoError(t, err)
	assert.Equal(t, time.Second, c.FailoverGrace(), "a FailoverGrace set in the Config stands")
	c.Close()
}
