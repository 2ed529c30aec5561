package pipe

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/faultproxy"
	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// The lag policy as a lock uses it: requests are given up after
// masterTimeout, and ReadTimeout is twice that (redlock's default).
const (
	masterTimeout = 50 * time.Millisecond
	lagLimit      = 2 * masterTimeout
)

// sample is one request of a load run: when it was sent, when it ended,
// and whether its reply came within masterTimeout.
type sample struct {
	sent, end time.Time
	ok        bool
}

// load sends PING from g goroutines, one request at a time each with a
// pause of every between them, abandoning each request after masterTimeout,
// until stop closes. It returns every request's sample.
func load(c *Conn, g int, every time.Duration, stop <-chan struct{}) []sample {
	var mu sync.Mutex
	var out []sample
	var wg sync.WaitGroup
	ping := resp.AppendCommand(nil, "PING")
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := NewRequest()
				r.Cmd = append(r.Cmd[:0], ping...)
				s := sample{sent: time.Now()}
				c.Send(r, nil)
				timer.Reset(masterTimeout)
				select {
				case <-r.own:
					s.ok = r.Err() == nil
					r.Release()
				case <-timer.C:
					if !r.Abandon() {
						<-r.own
						s.ok = r.Err() == nil
						r.Release()
					}
				}
				s.end = time.Now()
				mu.Lock()
				out = append(out, s)
				mu.Unlock()
				time.Sleep(every)
			}
		}()
	}
	wg.Wait()
	return out
}

// recoveredAfter returns how long after cleared the connection served a
// request in time again: the end of the first successful request sent
// after cleared. failed is the share of the requests sent after that one
// that failed anyway: a connection that is back for good serves nearly all
// of them in time, one still behind its backlog (or flapping) fails most.
//
// A single failure later on does not move the recovery: on a loaded
// machine the test process (or the server) can be off the processor for
// 50ms or more, and then every goroutine's request in flight misses
// masterTimeout at once, the connection healthy. Taking the first success
// after the last failure made such a stall, hundreds of milliseconds after
// the connection was back, the time of the recovery.
func recoveredAfter(samples []sample, cleared time.Time) (late time.Duration, failed float64, ok bool) {
	var first *sample
	for i := range samples {
		s := &samples[i]
		if s.ok && s.sent.After(cleared) && (first == nil || s.end.Before(first.end)) {
			first = s
		}
	}
	if first == nil {
		return 0, 0, false
	}
	n, nf := 0, 0
	for _, s := range samples {
		if s.sent.After(first.end) {
			n++
			if !s.ok {
				nf++
			}
		}
	}
	if n > 0 {
		failed = float64(nf) / float64(n)
	}
	return first.end.Sub(cleared), failed, true
}

// A master that is slow for a while, then well again: whatever the kind of
// slowness, the connection serves requests in time again soon after it
// ends, instead of working through the backlog it built meanwhile. Each
// case is a fault the connection cannot outwait: without the lag policy
// the slow cases stay behind for seconds after the fault ends.
func TestSlowMasterRecovers(t *testing.T) {
	const reconnectMax = 200 * time.Millisecond
	srv := redistest.Start(t, redistest.Options{})
	tests := []struct {
		name  string
		g     int           // goroutines sending
		every time.Duration // pause between one goroutine's requests
		slow  func(p *faultproxy.Proxy)
	}{
		// Every reply 250ms late, in order: a slow link or master that
		// still keeps up with the request rate.
		{"slow then recovers", 4, 2 * time.Millisecond, func(p *faultproxy.Proxy) { p.SetLatency(0, 250*time.Millisecond) }},
		// Replies trickle in at 10ms a byte (70ms per PONG), a little
		// slower than one client's requests: the bytes keep arriving, so a
		// liveness check that only looks for progress never fires.
		{"dripping", 1, 10 * time.Millisecond, func(p *faultproxy.Proxy) { p.Slow(10 * time.Millisecond) }},
		// Far slower than the request rate: 3.5ms per PONG against 32
		// goroutines, a backlog of seconds in one.
		{"slower than the request rate", 32, time.Millisecond, func(p *faultproxy.Proxy) { p.Slow(500 * time.Microsecond) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := faultproxy.Start(srv.Addr())
			require.NoError(t, err)
			defer p.Close()
			c := dialT(t, Options{Addr: p.Addr(), ReadTimeout: lagLimit, ReconnectMax: reconnectMax})
			defer c.Close()

			stop := make(chan struct{})
			done := make(chan []sample)
			go func() { done <- load(c, tt.g, tt.every, stop) }()
			time.Sleep(200 * time.Millisecond) // healthy
			tt.slow(p)
			time.Sleep(time.Second) // the fault
			p.Reset()
			cleared := time.Now()
			time.Sleep(time.Second) // recovery
			close(stop)
			samples := <-done

			var before, during int
			for _, s := range samples {
				switch {
				case s.ok && s.end.Before(cleared.Add(-time.Second)):
					before++
				case !s.ok && s.sent.Before(cleared):
					during++
				}
			}
			require.Positive(t, before, "no request succeeded before the fault")
			require.Positive(t, during, "the fault failed no request: not a fault")
			late, failed, ok := recoveredAfter(samples, cleared)
			require.True(t, ok, "no request succeeded in the second after the fault ended")
			t.Logf("recovered %v after the fault ended; %d requests, %d failed during it, %.2f%% after recovering, generation %d",
				late.Round(time.Millisecond), len(samples), during, 100*failed, c.Info().Generation)
			// A handshake under way when the fault ends may still wait its
			// reply out (ReadTimeout), then the next one comes after the
			// backoff (at most reconnectMax) and succeeds.
			assert.LessOrEqual(t, late, reconnectMax+lagLimit+masterTimeout)
			// Back for good: a stall of the machine fails one request per
			// goroutine, a connection still behind (or reset again and
			// again) fails most of them.
			assert.Less(t, failed, 0.05, "requests kept failing after the first came back in time")
		})
	}
}

// A burst of 256 goroutines on a healthy master never trips the lag
// policy: the connection stays on its first socket throughout.
func TestLagPolicyDoesNotFlap(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr(), ReadTimeout: lagLimit})
	var wg sync.WaitGroup
	errs := make(chan error, 256)
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if _, err := c.Do(context.Background(), "SET", "k", "v"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, uint64(1), c.Info().Generation, "the healthy connection was reset")
}

// A Send onto a socket whose oldest request is past ReadTimeout, and that
// has delivered no reply for as long, fails at once with ErrReadTimeout
// naming the master, instead of queueing behind the backlog, and resets
// the socket; the Conn reconnects within ReconnectMin, not after its
// backoff.
func TestStalledFailsFastAndReconnects(t *testing.T) {
	c, d, p := newPipeConn(t, Options{ReadTimeout: time.Hour, ReconnectMin: 10 * time.Millisecond, ReconnectMax: time.Hour})
	go p.expect("PING") // read, never answer
	r := NewRequest()
	r.Cmd = resp.AppendCommand(r.Cmd[:0], "PING")
	c.Send(r, nil)
	// Age the pending request and the last reply past ReadTimeout without
	// waiting an hour.
	c.mu.Lock()
	oldestRequest(c).sent = monoNow() - int64(2*time.Hour)
	c.progress = oldestRequest(c).sent
	c.mu.Unlock()

	r2 := NewRequest()
	r2.Cmd = resp.AppendCommand(r2.Cmd[:0], "PING")
	c.Send(r2, nil)
	select {
	case <-r2.own:
	case <-time.After(5 * time.Second):
		t.Fatal("Send onto a stalled socket did not fail at once")
	}
	var ce *Error
	require.ErrorAs(t, r2.Err(), &ce)
	assert.Equal(t, OpTimeout, ce.Op)
	assert.ErrorIs(t, r2.Err(), ErrReadTimeout)
	assert.False(t, ce.ConnUsable())
	<-r.own // the backlog failed with it
	assert.ErrorIs(t, r.Err(), ErrReadTimeout)
	r.Release()
	r2.Release()

	p2 := d.accept(t)
	p2.handshake()
	require.Eventually(t, func() bool { return c.Err() == nil }, 5*time.Second, time.Millisecond)
}

// A socket whose oldest request is past ReadTimeout but that still
// delivers replies is behind, not dead: new requests wait in the queue
// (they neither fail nor join the master's backlog), and the socket is
// kept. Once a reply comes they are written, in order, except those
// whose callers abandoned them meanwhile, which are never sent.
func TestLateHoldsTheQueueAndKeepsTheSocket(t *testing.T) {
	c, catchUp := newLateConn(t, func(p *peer) {
		p.expect("ECHO", "queued") // not "abandoned": it was never sent
		p.send("$6\r\nqueued\r\n")
	})

	gaveUp := NewRequest()
	gaveUp.Cmd = resp.AppendCommand(gaveUp.Cmd[:0], "ECHO", "abandoned")
	c.Send(gaveUp, nil)
	queued := NewRequest()
	queued.Cmd = resp.AppendCommand(queued.Cmd[:0], "ECHO", "queued")
	c.Send(queued, nil)
	require.True(t, gaveUp.Abandon(), "a request to a late socket did not wait in the queue")
	c.mu.Lock()
	held := len(c.queue)
	c.mu.Unlock()
	assert.Equal(t, 2, held, "the writer wrote to a late socket")
	catchUp()
	require.NoError(t, c.Wait(context.Background(), queued))
	assert.Equal(t, "queued", string(queued.Reply()[0].Bytes))
	assert.NoError(t, c.Err())
	assert.Equal(t, uint64(1), c.Info().Generation, "a socket that still answered was reset")
	queued.Release()
}
