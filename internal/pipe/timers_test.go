package pipe

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/resp"
)

// The Conn's timer paths under testing/synctest: the clock is fake, so
// each test states exact times and takes no wall-clock time.

// The watcher fails a socket whose oldest request has waited longer than
// ReadTimeout (and at least minStall) without a reply, at its first tick
// after that (ticks every quarter of that, on the process's instants: see
// untilWatch), even when no further request comes to notice it.
func TestWatchRecyclesLaggingSocket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rt = 100 * time.Millisecond
		c, d, p := newPipeConn(t, Options{ReadTimeout: rt})
		go p.expect("PING") // read, never answer
		// Requests come from a pool shared with tests outside the bubble:
		// wait on a channel of the bubble's, so that the wait is durable.
		notify := make(chan *Request, 1)
		r := NewRequest()
		r.Cmd = resp.AppendCommand(r.Cmd[:0], "PING")
		start := time.Now()
		c.Send(r, notify)
		<-notify
		stall := max(rt, minStall)
		first := stall + untilWatch(start.Add(stall), stall/4)
		assert.Equal(t, first, time.Since(start), "not failed at the first tick past the stall")
		assert.ErrorIs(t, r.Err(), ErrReadTimeout)
		r.Release()
		// It reconnects at once.
		p2 := d.accept(t)
		p2.handshake()
		synctest.Wait()
		assert.NoError(t, c.Err())
		assert.Equal(t, uint64(2), c.Info().Generation)
	})
}

// A socket whose replies keep coming, but ever later, is not reset: the
// master is slow, not dead. While its oldest request is past ReadTimeout
// the writer holds new requests, and those their callers abandoned are
// never sent, so the master's backlog stops growing instead of holding
// every request sent.
func TestFallingBehindHoldsTheBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rt, sends = 100 * time.Millisecond, 100
		c, _, p := newPipeConn(t, Options{ReadTimeout: rt})
		// The peer reads every request at once but answers one per 60ms,
		// in order: a master slower than the requests, sent every 30ms.
		peerDone := make(chan struct{})
		queued := make(chan struct{}, 1000)
		var read atomic.Int32
		go func() { // until the Conn closes
			defer close(queued)
			for {
				if _, err := p.rd.ReadReply(); err != nil {
					return
				}
				read.Add(1)
				queued <- struct{}{}
			}
		}()
		go func() {
			defer close(peerDone)
			for range queued {
				time.Sleep(60 * time.Millisecond)
				p.nc.Write([]byte("+PONG\r\n")) // fails once closed: ignored
			}
		}()
		notify := make(chan *Request, 1) // the bubble's own, see above
		for range sends {
			r := NewRequest()
			r.Cmd = resp.AppendCommand(r.Cmd[:0], "PING")
			c.Send(r, notify)
			if !r.Abandon() {
				<-notify
				require.NoError(t, r.Err())
				r.Release()
			}
			time.Sleep(30 * time.Millisecond)
		}
		assert.Equal(t, uint64(1), c.Info().Generation, "a socket that kept answering was reset")
		assert.Less(t, int(read.Load()), sends*2/3, "the backlog took every request: nothing was held")
		t.Logf("the master read %d of %d requests", read.Load(), sends)
		c.Close()
		p.nc.Close()
		<-peerDone
	})
}

// Reconnects after failed dials wait a jittered, doubling backoff in
// [b/2, b], b from ReconnectMin up to ReconnectMax.
func TestReconnectBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var dials []time.Time
		refuse := func(context.Context, string, string) (net.Conn, error) {
			mu.Lock()
			dials = append(dials, time.Now())
			mu.Unlock()
			return nil, errors.New("refused")
		}
		const lo, hi = 10 * time.Millisecond, 80 * time.Millisecond
		c, err := New(Options{Addr: "pipe:1", Dialer: refuse, ReconnectMin: lo, ReconnectMax: hi})
		require.NoError(t, err)
		time.Sleep(time.Second)
		c.Close()
		mu.Lock()
		defer mu.Unlock()
		require.Greater(t, len(dials), 8)
		b := lo
		for i := 1; i < len(dials); i++ {
			gap := dials[i].Sub(dials[i-1])
			assert.True(t, gap >= b/2 && gap <= b, "dial %d after %v, want [%v, %v]", i, gap, b/2, b)
			b = min(2*b, hi)
		}
	})
}

// A master that accepts the connection but leaves the handshake
// unanswered for a stalled socket's time (ReadTimeout, at least minStall)
// is retried after a growing backoff, as one that refuses: a master too
// busy to answer at all is not helped by more handshakes (every client of
// a stalled master would otherwise knock every ReconnectMin).
func TestSlowHandshakeGrowsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rt, lo, hi = 100 * time.Millisecond, 10 * time.Millisecond, 80 * time.Millisecond
		hs := max(rt, minStall) // how long a handshake is waited for
		d := newPipeDialer()
		c, err := New(Options{Addr: "pipe:1", Dialer: d.dial, ReadTimeout: rt, ReconnectMin: lo, ReconnectMax: hi})
		require.NoError(t, err)
		var prev time.Time
		var readers sync.WaitGroup
		defer readers.Wait()
		b := lo
		for i := range 6 {
			p := d.accept(t)
			now := time.Now()
			if i > 0 {
				gap := now.Sub(prev)
				assert.True(t, gap >= hs+b/2 && gap <= hs+b, "attempt %d after %v, want [%v, %v]", i, gap, hs+b/2, hs+b)
				b = min(2*b, hi)
			}
			prev = now
			readers.Go(func() { p.rd.ReadReply() }) // read, answer never
		}
		c.Close()
	})
}

// A master that answers the handshake late, past ReadTimeout but before a
// stalled socket's time, is waited for: the first dial connects. At
// ReadTimeout, a fleet opening its connections at once on a busy machine
// timed out dozens of handshakes on one master, each retry a connection
// more (#53).
func TestLateHandshakeIsWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rt = 100 * time.Millisecond
		d := newPipeDialer()
		c, err := New(Options{Addr: "pipe:1", Dialer: d.dial, ReadTimeout: rt})
		require.NoError(t, err)
		defer c.Close()
		p := d.accept(t)
		p.expectInfo()
		time.Sleep(3 * rt)
		p.send(infoReply)
		require.NoError(t, c.WaitReady(context.Background()))
		assert.Equal(t, int32(1), d.dials.Load(), "the late handshake was given up and dialled again")
		assert.Equal(t, uint64(1), c.Info().Generation)
	})
}

// Every Conn of a process ticks on the same instants, watchPhase plus
// whole periods, however its watch began: the process then wakes once a
// period for all of them.
func TestWatchTicksFallOnTheProcessInstants(t *testing.T) {
	const period = 250 * time.Millisecond
	base := time.Unix(0, watchPhase).Add(1000 * period)
	for _, off := range []time.Duration{0, 1, period / 3, period - 1, period, 7*period + 5*time.Millisecond} {
		now := base.Add(off)
		d := untilWatch(now, period)
		assert.Greater(t, d, time.Duration(0), "offset %v", off)
		assert.LessOrEqual(t, d, period, "offset %v", off)
		assert.Zero(t, now.Add(d).Sub(base)%period, "offset %v: tick off the process's instants", off)
	}
	// Before the phase too (a clock set back).
	d := untilWatch(time.Unix(0, watchPhase).Add(-period/4), period)
	assert.Equal(t, period/4, d)
}
