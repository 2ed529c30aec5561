package pipe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/resp"
)

// tally is a driven round's answer function for tests: it keeps each
// slot's reply (copied) or error, and decides when want slots answered.
type tally struct {
	mu      sync.Mutex // for the test's reads; Hear runs under the Batch's
	want    int
	got     int
	late    int
	replies map[int]string
	errs    map[int]error
}

func newTally(want int) *tally {
	return &tally{want: want, replies: map[int]string{}, errs: map[int]error{}}
}

func (ty *tally) hear(r *Request, late bool) bool {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	if late {
		ty.late++
		return false
	}
	ty.got++
	if err := r.Err(); err != nil {
		ty.errs[r.Tag] = err
	} else {
		ty.replies[r.Tag] = string(r.Reply()[0].Bytes)
	}
	return ty.got >= ty.want
}

// newTalliedBatch returns a Batch of g with one slot, whose answers a
// tally that decides at the first one hears; the test's end releases it.
func newTalliedBatch(t *testing.T, g *Group) (*Batch, *tally) {
	b := g.NewBatch(1)
	t.Cleanup(b.Release)
	ty := newTally(1)
	b.Hear = ty.hear
	return b, ty
}

func (ty *tally) reset(want int) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	ty.want, ty.got, ty.late = want, 0, 0
	clear(ty.replies)
	clear(ty.errs)
}

// TestDriverServesManyCallers: callers whose rounds the Group's driver
// serves together each get their own answers, matched by order on every
// socket, and are woken once per round, decided; rounds that are not
// driven interleave on the same Batches (a completion they leave behind
// does not wake a driven round early). The driver lets go of the claim
// once it is idle.
func TestDriverServesManyCallers(t *testing.T) {
	conns, _ := pollerConns(t, 3)
	serveManyCallers(t, conns)
}

// serveManyCallers is TestDriverServesManyCallers over conns.
func serveManyCallers(t *testing.T, conns []*Conn) {
	g := NewGroup(conns, 0)
	defer g.Close()
	const callers, rounds = 16, 40
	var wg sync.WaitGroup
	for k := range callers {
		wg.Go(func() {
			b := g.NewBatch(len(conns))
			defer b.Release()
			ty := newTally(len(conns))
			b.Hear = ty.hear
			for round := range rounds {
				want := fmt.Sprintf("%d/%d", k, round)
				ty.reset(len(conns))
				for i, c := range conns {
					b.Queue(i, c, resp.AppendCommand(nil, "ECHO", want+"/"+strconv.Itoa(i)))
				}
				b.Drive(time.Now().Add(10 * time.Second))
				if !assert.Equal(t, WokeDecided, b.Await(nil), "caller %d round %d", k, round) {
					b.End(nil)
					return
				}
				b.End(nil)
				ty.mu.Lock()
				for i := range conns {
					assert.Equal(t, want+"/"+strconv.Itoa(i), ty.replies[i], "caller %d round %d slot %d", k, round, i)
				}
				ty.mu.Unlock()
				if round%4 == 3 {
					// A round through the Conns, whose wake-up may be left
					// behind for the next driven round (see NextOf).
					for i, c := range conns {
						b.Send(i, c, resp.AppendCommand(nil, "PING"))
					}
					for range conns {
						r := b.NextOf(len(conns), time.Now().Add(10*time.Second), nil)
						require.NotNil(t, r)
					}
					b.End(nil)
				}
			}
		})
	}
	wg.Wait()
	if runtime.GOOS == "linux" {
		require.Eventually(t, func() bool {
			for _, c := range conns {
				if role(c) == readByCaller {
					return false
				}
			}
			return true
		}, 5*time.Second, time.Millisecond, "an idle driver lets go of the claim")
	}
}

// TestDriverWakesAtDeadlineAndDropsLateAnswers: a round whose master does
// not answer wakes its caller at its deadline; the answer that comes
// after End goes to no one, and the Conn serves the next round.
func TestDriverWakesAtDeadlineAndDropsLateAnswers(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	g := NewGroup([]*Conn{c}, 0)
	defer g.Close()
	b := g.NewBatch(1)
	defer b.Release()
	ty := newTally(1)
	b.Hear = ty.hear

	b.Queue(0, c, resp.AppendCommand(nil, "ECHO", "slow"))
	b.Drive(time.Now().Add(30 * time.Millisecond))
	p.expect("ECHO", "slow")
	assert.Equal(t, WokeDeadline, b.Await(nil))
	b.End(nil)
	p.send("$4\r\nslow\r\n")

	ty.reset(1)
	b.Queue(0, c, resp.AppendCommand(nil, "ECHO", "next"))
	b.Drive(time.Now().Add(10 * time.Second))
	p.expect("ECHO", "next")
	p.send("$4\r\nnext\r\n")
	assert.Equal(t, WokeDecided, b.Await(nil))
	b.End(nil)
	ty.mu.Lock()
	defer ty.mu.Unlock()
	assert.Equal(t, map[int]string{0: "next"}, ty.replies, "the late answer reached no one")
	assert.Zero(t, ty.late)
}

// TestDriverCallerGivesUp: a caller whose done closes is woken at once;
// an answer that comes before End is heard as late, none after.
func TestDriverCallerGivesUp(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	g := NewGroup([]*Conn{c}, 0)
	defer g.Close()
	b := g.NewBatch(1)
	defer b.Release()
	ty := newTally(1)
	b.Hear = ty.hear

	b.Queue(0, c, resp.AppendCommand(nil, "ECHO", "a"))
	b.Drive(time.Now().Add(10 * time.Second))
	p.expect("ECHO", "a")
	done := make(chan struct{})
	close(done)
	assert.Equal(t, WokeDone, b.Await(done))
	p.send("$1\r\na\r\n")
	require.Eventually(t, func() bool {
		ty.mu.Lock()
		defer ty.mu.Unlock()
		return ty.late == 1
	}, 5*time.Second, time.Millisecond, "heard as late before End")
	b.End(nil)
	ty.mu.Lock()
	defer ty.mu.Unlock()
	assert.Zero(t, ty.got)
}

// TestDriverHearsConnectionFailures: a socket that fails fails the
// round's pending commands through Hear, with the Conn's error; a Conn
// that is down, and one past MaxPending, fail the commands at once.
func TestDriverHearsConnectionFailures(t *testing.T) {
	c, _, p := newPipeConn(t, Options{MaxPending: 1, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	g := NewGroup([]*Conn{c}, 0)
	defer g.Close()
	b := g.NewBatch(2)
	defer b.Release()
	ty := newTally(2)
	b.Hear = ty.hear

	// Two commands to one Conn that takes one at a time.
	b.Queue(0, c, resp.AppendCommand(nil, "ECHO", "a"))
	b.Queue(1, c, resp.AppendCommand(nil, "ECHO", "b"))
	b.Drive(time.Now().Add(10 * time.Second))
	p.expect("ECHO", "a")
	require.Eventually(t, func() bool {
		ty.mu.Lock()
		defer ty.mu.Unlock()
		return errors.Is(ty.errs[1], ErrTooManyPending)
	}, 5*time.Second, time.Millisecond, "past MaxPending")
	p.nc.Close() // the master goes away
	assert.Equal(t, WokeDecided, b.Await(nil))
	b.End(nil)
	ty.mu.Lock()
	assert.Error(t, ty.errs[0], "the socket's failure")
	ty.mu.Unlock()

	require.Eventually(t, func() bool { return c.Err() != nil }, 5*time.Second, time.Millisecond)
	ty.reset(1)
	b.Queue(0, c, resp.AppendCommand(nil, "ECHO", "c"))
	b.Drive(time.Now().Add(10 * time.Second))
	assert.Equal(t, WokeDecided, b.Await(nil), "a Conn that is down fails fast")
	b.End(nil)
	ty.mu.Lock()
	assert.Error(t, ty.errs[0])
	ty.mu.Unlock()
}

// TestDriverStopsAtClose: closing the Group wakes a round that waits
// (as at its deadline), and a round driven after Close is still served
// by its Conns.
func TestDriverStopsAtClose(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	g := NewGroup([]*Conn{c}, 0)
	b := g.NewBatch(1)
	defer b.Release()
	ty := newTally(1)
	b.Hear = ty.hear

	b.Queue(0, c, resp.AppendCommand(nil, "ECHO", "a"))
	b.Drive(time.Now().Add(time.Hour))
	p.expect("ECHO", "a")
	var closed atomic.Bool
	go func() {
		g.Close()
		closed.Store(true)
	}()
	assert.Equal(t, WokeDeadline, b.Await(nil))
	b.End(nil)
	require.Eventually(t, closed.Load, 5*time.Second, time.Millisecond)

	ty.reset(1)
	go func() {
		// A pipe's write waits for its reader: Drive, which writes
		// itself now, returns once the peer has read.
		p.expect("ECHO", "b")
		p.send("$1\r\na\r\n$1\r\nb\r\n")
	}()
	b.Queue(0, c, resp.AppendCommand(nil, "ECHO", "b"))
	b.Drive(time.Now().Add(10 * time.Second))
	assert.Equal(t, WokeDecided, b.Await(nil))
	b.End(nil)
	ty.mu.Lock()
	defer ty.mu.Unlock()
	assert.Equal(t, map[int]string{0: "b"}, ty.replies)
}

// TestDriverNeverWaitsForOneSocket: a master that stops reading (its
// socket's buffers full) does not hold up the driver's writes to the
// others: what its socket does not take goes to its Conn's writer.
func TestDriverNeverWaitsForOneSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	peers := make(chan *peer, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		peers <- &peer{t: t, nc: nc, rd: resp.NewReader(nc, 0, resp.Limits{})}
	}()
	// Stuck for good: no reset within the test (see Options.stallAfter),
	// which would fail its commands at once and decide a round before
	// the healthy master answered (a loaded machine's 32 rounds took 3 s).
	stuck, err := New(Options{Addr: ln.Addr().String(), ReadTimeout: time.Hour})
	require.NoError(t, err)
	defer stuck.Close()
	p := <-peers
	defer p.nc.Close()
	p.handshake()
	require.NoError(t, stuck.WaitReady(context.Background()))
	healthy, _ := pollerConns(t, 1)

	conns := []*Conn{stuck, healthy[0]}
	g := NewGroup(conns, 0)
	defer g.Close()
	b := g.NewBatch(2)
	defer b.Release()
	ty := newTally(1)
	b.Hear = ty.hear
	big := strings.Repeat("x", 1<<20)
	for round := range 32 { // far more than the socket buffers hold
		ty.reset(1)
		b.Queue(0, stuck, resp.AppendCommand(nil, "ECHO", big))
		b.Queue(1, healthy[0], resp.AppendCommand(nil, "ECHO", "ok"))
		b.Drive(time.Now().Add(10 * time.Second))
		require.Equal(t, WokeDecided, b.Await(nil), "round %d", round)
		b.End(nil)
		ty.mu.Lock()
		assert.Equal(t, "ok", ty.replies[1], "round %d", round)
		ty.mu.Unlock()
	}
}

// TestDriverReadsRepliesThatCameByTheDeadline: without the claim (another
// Group's caller holds the process's one claim), the Conns' readers
// deliver a driven round's replies; replies that reached the sockets by
// the round's deadline while the readers were off the processor (one
// processor, held by the caller) decide the round, as NextOf's grace
// does for a Batch. Without the grace the driver's timer, due first,
// judges them lost.
func TestDriverReadsRepliesThatCameByTheDeadline(t *testing.T) {
	defer func(g time.Duration) { deadlineGrace = g }(deadlineGrace)
	deadlineGrace = time.Second // the readers' chance, on a loaded machine too
	conns, _ := pollerConns(t, 3)
	other, _ := pollerConns(t, 1)
	holder := NewGroup(other, 0)
	defer holder.Close()
	claim := holder.NewBatch(1)
	defer claim.Release()
	if runtime.GOOS == "linux" {
		require.Eventually(t, claim.Claim, 5*time.Second, time.Millisecond)
	}
	g := NewGroup(conns, 0)
	defer g.Close()
	b := g.NewBatch(len(conns))
	defer b.Release()
	ty := newTally(len(conns))
	b.Hear = ty.hear

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for round := range 3 {
		ty.reset(len(conns))
		for i, c := range conns {
			b.Queue(i, c, resp.AppendCommand(nil, "PING"))
		}
		start := time.Now()
		b.Drive(start.Add(5 * time.Millisecond))
		time.Sleep(200 * time.Microsecond) // the driver writes the round
		// Hold the one processor past the deadline while the replies
		// come (well under the runtime's 10 ms preemption).
		for time.Since(start) < 8*time.Millisecond {
		}
		assert.Equal(t, WokeDecided, b.Await(nil), "round %d: replies in the sockets by the deadline", round)
		b.End(nil)
	}
}

// TestDriverQueueWithAndAgain: QueueWith's second command goes right
// behind the first, and its answer to no one (the next answer is still
// the first's); a slot that Hear queues again is written by the driver
// in the same round, and its answer decides it.
func TestDriverQueueWithAndAgain(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	g := NewGroup([]*Conn{c}, 0)
	defer g.Close()
	b := g.NewBatch(1)
	defer b.Release()
	var heard []string
	b.Hear = func(r *Request, late bool) bool {
		if late || r.Err() != nil {
			return false
		}
		got := string(r.Reply()[0].Bytes)
		heard = append(heard, got)
		if got == "refused" {
			b.Queue(r.Tag, c, resp.AppendCommand(nil, "ECHO", "again"))
			return false
		}
		return true
	}

	b.QueueWith(0, c, resp.AppendCommand(nil, "ECHO", "first"), resp.AppendCommand(nil, "ECHO", "then"), nil)
	b.Drive(time.Now().Add(10 * time.Second))
	p.expect("ECHO", "first")
	p.expect("ECHO", "then")
	p.send("$7\r\nrefused\r\n$4\r\nthen\r\n")
	p.expect("ECHO", "again")
	p.send("$5\r\nagain\r\n")
	assert.Equal(t, WokeDecided, b.Await(nil))
	b.End(nil)
	assert.Equal(t, []string{"refused", "again"}, heard, "what Hear read, in order")
}

// TestDriverQueueAfter: QueueAfter's first command goes right before
// its command, with nothing of another round between them, and its
// answer to no one: the slot gets the second command's.
func TestDriverQueueAfter(t *testing.T) {
	c, _, p := newPipeConn(t, Options{})
	g := NewGroup([]*Conn{c}, 0)
	defer g.Close()
	other, tyOther := newTalliedBatch(t, g)
	asked, tyAsked := newTalliedBatch(t, g)

	other.Queue(0, c, resp.AppendCommand(nil, "ECHO", "other"))
	asked.QueueAfter(0, c, resp.AppendCommand(nil, "ASKING"), resp.AppendCommand(nil, "ECHO", "asked"))
	deadline := time.Now().Add(10 * time.Second)
	other.Drive(deadline)
	asked.Drive(deadline)
	p.expect("ECHO", "other")
	p.expect("ASKING")
	p.expect("ECHO", "asked")
	p.send("$5\r\nother\r\n+OK\r\n$5\r\nasked\r\n")
	assert.Equal(t, WokeDecided, other.Await(nil))
	assert.Equal(t, WokeDecided, asked.Await(nil))
	other.End(nil)
	asked.End(nil)
	assert.Equal(t, map[int]string{0: "asked"}, tyAsked.replies, "the slot got the first command's answer")
	assert.Equal(t, map[int]string{0: "other"}, tyOther.replies)
}

// TestDriverQueueAfterPairsStayWhole: a pair that MaxPending has room
// for only half of fails whole (a lone ASKING would apply to whatever
// came next), and one whose caller gave up before it was written is
// left out whole.
func TestDriverQueueAfterPairsStayWhole(t *testing.T) {
	asking := resp.AppendCommand(nil, "ASKING")
	t.Run("MaxPending", func(t *testing.T) {
		c, _, p := newPipeConn(t, Options{MaxPending: 1})
		g := NewGroup([]*Conn{c}, 0)
		defer g.Close()
		b, ty := newTalliedBatch(t, g)

		b.QueueAfter(0, c, asking, resp.AppendCommand(nil, "ECHO", "cut"))
		b.Drive(time.Now().Add(10 * time.Second))
		assert.Equal(t, WokeDecided, b.Await(nil))
		b.End(nil)
		assert.ErrorIs(t, ty.errs[0], ErrTooManyPending)

		ty.reset(1)
		b.Queue(0, c, resp.AppendCommand(nil, "ECHO", "next"))
		b.Drive(time.Now().Add(10 * time.Second))
		p.expect("ECHO", "next") // not the cut pair's ASKING
		p.send("$4\r\nnext\r\n")
		assert.Equal(t, WokeDecided, b.Await(nil))
		b.End(nil)
		assert.Equal(t, map[int]string{0: "next"}, ty.replies)
	})
	t.Run("GaveUp", func(t *testing.T) {
		c, catchUp := newLateConn(t, func(p *peer) {
			p.expect("ASKING") // the kept pair's, not the abandoned one's
			p.expect("ECHO", "kept")
			p.send("+OK\r\n$4\r\nkept\r\n")
		})
		g := NewGroup([]*Conn{c}, 0)
		defer g.Close()
		gaveUp, _ := newTalliedBatch(t, g)
		kept, tyKept := newTalliedBatch(t, g)

		deadline := time.Now().Add(10 * time.Second)
		gaveUp.QueueAfter(0, c, asking, resp.AppendCommand(nil, "ECHO", "abandoned"))
		gaveUp.Drive(deadline)
		kept.QueueAfter(0, c, asking, resp.AppendCommand(nil, "ECHO", "kept"))
		kept.Drive(deadline)
		require.Eventually(t, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.queue) == 4
		}, 5*time.Second, time.Millisecond, "the pairs did not wait in the late socket's queue")
		gaveUp.End(nil) // abandons its ECHO, still queued
		catchUp()
		assert.Equal(t, WokeDecided, kept.Await(nil))
		kept.End(nil)
		assert.Equal(t, map[int]string{0: "kept"}, tyKept.replies)
	})
}
