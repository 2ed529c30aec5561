package redlock

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/scripts"
	"github.com/volleylock/volley/resp"
)

// Do's extender under testing/synctest: masters served over net.Pipe
// inside the bubble, a fake clock, exact times.

// pipeMaster answers what a lock sends: INFO server, SET NX PX (+OK),
// the extend script (:1, or :0 once lost, or nothing while hung), the
// release script (:1, or :3 when asleep: the waiters were left asleep,
// see turns.go) and the wake script (:1). It counts extensions and wakes.
type pipeMaster struct {
	runID              string // distinct per master: one server under two addresses is refused
	lost, hung, asleep atomic.Bool
	extends, wakes     atomic.Int32
}

// pipeMasters serves n pipeMasters behind a Config.Conn.Dialer; every
// served connection is waited for by wait.
type pipeMasters struct {
	ms    map[string]*pipeMaster
	conns sync.WaitGroup
}

func newPipeMasters(n int) (*pipeMasters, []string) {
	pm := &pipeMasters{ms: map[string]*pipeMaster{}}
	var addrs []string
	for i := range n {
		addr := "pipe:" + string(rune('1'+i))
		pm.ms[addr] = &pipeMaster{runID: fmt.Sprintf("%040x", i+1)}
		addrs = append(addrs, addr)
	}
	return pm, addrs
}

func (pm *pipeMasters) each(fn func(m *pipeMaster)) {
	for _, m := range pm.ms {
		fn(m)
	}
}

func (pm *pipeMasters) dial(_ context.Context, _, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	m := pm.ms[addr]
	pm.conns.Go(func() { m.serve(server) })
	return client, nil
}

func (m *pipeMaster) serve(nc net.Conn) {
	defer nc.Close()
	// Room for the whole handshake (every script's SCRIPT LOAD, written at
	// once): net.Pipe has no buffer, so a peer that answers before it has
	// read all of it blocks the client's write, and both wait.
	rd := resp.NewReader(nc, 1<<16, resp.Limits{})
	for {
		vals, err := rd.ReadReply()
		if err != nil {
			return
		}
		args := vals[1:]
		var out string
		switch strings.ToUpper(string(args[0].Bytes)) {
		case "INFO":
			out = string(resp.AppendBulkString(nil, "# Server\r\nrun_id:"+m.runID+"\r\nuptime_in_seconds:3600\r\n"))
		case "SET":
			out = "+OK\r\n"
		case "EVALSHA", "EVAL":
			if len(args) == 3 { // New's keyless check that scripts are allowed
				out = ":1\r\n"
				break
			}
			if b := string(args[1].Bytes); b == scripts.Wake.SHA || b == scripts.Wake.Source {
				m.wakes.Add(1)
				out = ":1\r\n"
				break
			}
			if b := string(args[1].Bytes); len(args) == 5 || b == scripts.Release.SHA || b == scripts.Release.Source {
				out = ":1\r\n" // a release: script, 1, key, token (Release: and its id, a turn's cutoff)
				if m.asleep.Load() {
					out = ":3\r\n"
				}
				break
			}
			m.extends.Add(1)
			switch {
			case m.hung.Load():
				continue
			case m.lost.Load():
				out = ":0\r\n"
			default:
				out = ":1\r\n"
			}
			if b := string(args[1].Bytes); b == scripts.ExtendBatch.SHA || b == scripts.ExtendBatch.Source {
				out = "*1\r\n" + out // Do's renewer: one lock in the batch
			}
		default:
			out = "-ERR unknown command\r\n"
		}
		if _, err := nc.Write([]byte(out)); err != nil {
			return
		}
	}
}

// pipeClient is a Client on the pipe masters, for use inside a bubble.
func pipeClient(t *testing.T, pm *pipeMasters, addrs []string) *Client {
	t.Helper()
	c, err := New(bg, Config{
		Addrs: addrs, MasterTimeout: 50 * time.Millisecond, DisableRestartGuard: true,
		Conn: Connection{Dialer: pm.dial},
	})
	require.NoError(t, err)
	return c
}

// Do extends the lock every ttl*ExtendFraction while fn runs: at 100, 200
// and 300ms for a 300ms TTL and work of 350ms.
func TestDoExtendsOnSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pm, addrs := newPipeMasters(3)
		c := pipeClient(t, pm, addrs)
		err := c.Do(bg, "k", 300*time.Millisecond, func(ctx context.Context) error {
			time.Sleep(350 * time.Millisecond)
			return ctx.Err()
		})
		require.NoError(t, err)
		pm.each(func(m *pipeMaster) { assert.Equal(t, int32(3), m.extends.Load()) })
		c.Close()
		pm.conns.Wait()
	})
}

// doUntilLost runs Do on fresh pipe masters with a 300ms TTL; fn breaks
// the masters with brk, then waits for its context to end. It returns when
// that happened, from the start of Do, and Do's error.
func doUntilLost(t *testing.T, brk func(m *pipeMaster)) (time.Duration, error) {
	t.Helper()
	pm, addrs := newPipeMasters(3)
	c := pipeClient(t, pm, addrs)
	defer pm.conns.Wait()
	defer c.Close()
	start := time.Now()
	var stopped time.Duration
	err := c.Do(bg, "k", 300*time.Millisecond, func(ctx context.Context) error {
		pm.each(brk)
		<-ctx.Done()
		stopped = time.Since(start)
		assert.ErrorIs(t, context.Cause(ctx), ErrNotHeld)
		return ctx.Err()
	})
	pm.each(func(m *pipeMaster) { assert.Positive(t, m.extends.Load(), "never extended") })
	return stopped, err
}

// An extension answered "not ours" cancels fn's context at once, with
// cause ErrNotHeld, and Do reports it.
func TestDoCancelsWhenExtensionFindsLockGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stopped, err := doUntilLost(t, func(m *pipeMaster) { m.lost.Store(true) })
		assert.Equal(t, 100*time.Millisecond, stopped, "not cancelled at the first extension")
		require.ErrorIs(t, err, ErrNotHeld)
		require.ErrorIs(t, err, context.Canceled)
	})
}

// Masters that stop answering extensions: the extender keeps trying, and
// when the validity (ttl less drift: 300 - 3 - 2 = 295ms) runs out it
// cancels fn's context with cause ErrNotHeld, not a moment later, even
// with an extension still waiting for its masters.
func TestDoCancelsWhenValidityRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stopped, err := doUntilLost(t, func(m *pipeMaster) { m.hung.Store(true) })
		assert.Equal(t, 295*time.Millisecond, stopped)
		require.ErrorIs(t, err, ErrNotHeld)
	})
}

// The same on the driver's path (as when the Client is busy): a driven
// round expires at its deadline inside a bubble too, whose clock readings
// lie far below the pipe's origin (see pipe's noDeadline). Before, the
// driver read those deadlines as none, and the hung extension ended only
// when its connection was reset, a second later.
func TestDoCancelsWhenValidityRunsOutOnTheDriver(t *testing.T) {
	setDriven(t, true)
	synctest.Test(t, func(t *testing.T) {
		stopped, err := doUntilLost(t, func(m *pipeMaster) { m.hung.Store(true) })
		assert.Equal(t, 295*time.Millisecond, stopped)
		require.ErrorIs(t, err, ErrNotHeld)
	})
}

// A Client that loops on a key (its Lock began before the wake of its
// previous release came due) has the wake of its release sent after
// runGap, not relockWithin: a millisecond timer armed and stopped at every
// release made the process's own timers fire up to a millisecond late.
func TestLoopingReleaseWakesAfterRunGap(t *testing.T) {
	requireLoopWake(t, runGap)
}

// TestLoopingReleaseWithoutDelayWakesAfterRelockWithin is the broken
// variant of TestLoopingReleaseWakesAfterRunGap.
func TestLoopingReleaseWithoutDelayWakesAfterRelockWithin(t *testing.T) {
	noLoopDelay = true
	t.Cleanup(func() { noLoopDelay = false })
	requireLoopWake(t, relockWithin)
}

// requireLoopWake has a Client release a key, take it back at once and
// release it again, every release leaving the waiters asleep, and requires
// that the wake reached the masters want after the second release.
func requireLoopWake(t *testing.T, want time.Duration) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		pm, addrs := newPipeMasters(3)
		pm.each(func(m *pipeMaster) { m.asleep.Store(true) })
		c := pipeClient(t, pm, addrs)
		defer pm.conns.Wait()
		defer c.Close()
		l, err := c.Lock(bg, "k", time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(bg)) // its wake is due after relockWithin
		l, err = c.Lock(bg, "k", time.Second)
		require.NoError(t, err)
		require.True(t, l.looped, "the take came before the wake was due")
		require.NoError(t, l.Unlock(bg))
		released := time.Now()
		woken := func() bool {
			n := int32(0)
			pm.each(func(m *pipeMaster) { n += m.wakes.Load() })
			return n == int32(len(addrs))
		}
		for !woken() && time.Since(released) < time.Second {
			time.Sleep(100 * time.Microsecond)
			synctest.Wait()
		}
		assert.Equal(t, want, time.Since(released))
	})
}
