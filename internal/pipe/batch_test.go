package pipe

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/resp"
)

// TestBatchNextEndReuse: a Batch returns each slot's answer once, gives
// up on a slot that does not answer (whose late reply then goes to no
// one: the next request on that Conn gets its own), and a slot sent again
// after End works on a fresh Request.
func TestBatchNextEndReuse(t *testing.T) {
	a, _, pa := newPipeConn(t, Options{Addr: "pipe:a"})
	b, _, pb := newPipeConn(t, Options{Addr: "pipe:b"})
	batch := NewBatch(2)
	defer batch.Release()

	answered := make(chan struct{})
	go func() {
		pa.expect("GET", "k")
		pa.send("$1\r\na\r\n")
		close(answered)
	}()
	heard := make(chan struct{})
	go func() { pb.expect("GET", "k"); close(heard) }() // b answers late, below
	cmd := resp.AppendCommand(nil, "GET", "k")
	batch.Send(0, a, cmd)
	batch.Send(1, b, cmd)
	require.Equal(t, 2, batch.Pending())

	r := batch.Next(time.Time{}, nil)
	require.NotNil(t, r)
	assert.Equal(t, 0, r.Tag)
	assert.Equal(t, "a", string(r.Reply()[0].Bytes))
	<-answered
	<-heard
	assert.Equal(t, 1, batch.Pending())

	assert.Nil(t, batch.Next(time.Now().Add(10*time.Millisecond), nil), "slot 1 has not answered: Next returns at the deadline")
	batch.End(func(*Request) { t.Error("nothing answered meanwhile") })
	assert.Equal(t, 0, batch.Pending())

	// b's late answer to the abandoned GET comes first: it must go to no
	// one, and the next GET on b gets its own answer.
	go func() {
		pb.expect("GET", "k")
		pb.send("$4\r\nlate\r\n$1\r\nb\r\n")
	}()
	batch.Send(1, b, cmd)
	r = batch.Next(time.Time{}, nil)
	require.NotNil(t, r)
	assert.Equal(t, 1, r.Tag)
	assert.Equal(t, "b", string(r.Reply()[0].Bytes))
}

// TestBatchNextOfWakesOnceForN: NextOf(n) does not return before n of
// the pending requests have completed, then returns them one by one
// without waiting; n above what is pending waits for all; and a NextOf
// whose deadline passes returns nil, leaving what came to End.
func TestBatchNextOfWakesOnceForN(t *testing.T) {
	const slots = 3
	conns := make([]*Conn, slots)
	peers := make([]*peer, slots)
	for i := range conns {
		conns[i], _, peers[i] = newPipeConn(t, Options{Addr: "pipe"})
	}
	batch := NewBatch(slots)
	defer batch.Release()
	cmd := resp.AppendCommand(nil, "PING")

	heard := make(chan int, slots)
	answer := make([]chan struct{}, slots)
	for i := range peers {
		answer[i] = make(chan struct{})
		go func() {
			peers[i].expect("PING")
			heard <- i
			<-answer[i]
			peers[i].send("+PONG\r\n")
		}()
	}
	for i := range conns {
		batch.Send(i, conns[i], cmd)
	}
	for range slots {
		<-heard
	}
	got := make(chan *Request, 1)
	go func() { got <- batch.NextOf(2, time.Time{}, nil) }()
	// NextOf returns a completion that is there when it looks; wait
	// until it has looked and waits for two before the first answers.
	require.Eventually(t, func() bool { return batch.want.Load() == 2 }, 5*time.Second, time.Millisecond)
	close(answer[2])
	require.Eventually(t, func() bool { return len(batch.notify) == 1 }, 5*time.Second, time.Millisecond)
	select {
	case <-got:
		t.Fatal("NextOf(2) returned after one completion")
	case <-time.After(20 * time.Millisecond):
	}
	close(answer[0])
	r := <-got
	require.NotNil(t, r)
	r2 := batch.NextOf(2, time.Time{}, nil) // the second is there: at once
	require.NotNil(t, r2)
	assert.ElementsMatch(t, []int{0, 2}, []int{r.Tag, r2.Tag})
	assert.Equal(t, 1, batch.Pending())

	assert.Nil(t, batch.NextOf(5, time.Now().Add(10*time.Millisecond), nil), "slot 1 has not answered: NextOf returns at the deadline")
	close(answer[1])
	var late []int
	require.Eventually(t, func() bool { return len(batch.notify) == 1 }, 5*time.Second, time.Millisecond)
	batch.End(func(r *Request) { late = append(late, r.Tag) })
	assert.Equal(t, []int{1}, late)
	assert.Equal(t, 0, batch.Pending())
}

// TestBatchEndHandsOverRacedAnswers: an answer that completed before
// End but was not yet received by Next is passed to late, not lost
// and not abandoned.
func TestBatchEndHandsOverRacedAnswers(t *testing.T) {
	a, _, pa := newPipeConn(t, Options{Addr: "pipe:a"})
	batch := NewBatch(1)
	defer batch.Release()
	go func() {
		pa.expect("PING")
		pa.send("+PONG\r\n")
	}()
	batch.Send(0, a, resp.AppendCommand(nil, "PING"))
	require.Eventually(t, func() bool { return len(batch.notify) == 1 }, 5*time.Second, time.Millisecond)
	var got []string
	batch.End(func(r *Request) { got = append(got, string(r.Reply()[0].Bytes)) })
	assert.Equal(t, []string{"PONG"}, got)
	assert.Equal(t, 0, batch.Pending())
}

// TestBatchNextReturnsOnDone: done ends a wait; with nothing pending Next
// returns at once.
func TestBatchNextReturnsOnDone(t *testing.T) {
	a, _, pa := newPipeConn(t, Options{Addr: "pipe:a"})
	batch := NewBatch(1)
	assert.Nil(t, batch.Next(time.Time{}, nil), "nothing pending")
	go func() { pa.expect("PING") }() // never answered
	batch.Send(0, a, resp.AppendCommand(nil, "PING"))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	assert.Nil(t, batch.Next(time.Time{}, ctx.Done()))
	batch.Release() // abandons the PING: the Conn recycles it when it fails at Close
}

// TestBatchSendToPendingSlotPanics: sending a slot whose request is still
// owned by a Conn is a bug in the caller.
func TestBatchSendToPendingSlotPanics(t *testing.T) {
	a, _, pa := newPipeConn(t, Options{Addr: "pipe:a"})
	batch := NewBatch(1)
	defer batch.Release()
	go func() { pa.expect("PING") }()
	cmd := resp.AppendCommand(nil, "PING")
	batch.Send(0, a, cmd)
	assert.Panics(t, func() { batch.Send(0, a, cmd) })
}

// TestGroupBatchClaimsForItsRound: a Batch of a Group claims the Group's
// Conns on Linux (elsewhere it declines), reads its round's replies
// itself, and lets go at End: another Batch claims next. Without the
// claim the round is served the same.
func TestGroupBatchClaimsForItsRound(t *testing.T) {
	conns, _ := pollerConns(t, 3)
	g := NewGroup(conns, 0)
	defer g.Close()
	a, b := g.NewBatch(len(conns)), g.NewBatch(len(conns))
	defer a.Release()
	defer b.Release()
	cmd := resp.AppendCommand(nil, "ECHO", "x")
	for round := range 3 {
		claimed := a.Claim()
		assert.Equal(t, runtime.GOOS == "linux", claimed, "round %d", round)
		if claimed {
			assert.False(t, b.Claim(), "one claim at a time")
			for _, c := range conns {
				assert.Equal(t, readByCaller, role(c))
			}
		}
		for i, c := range conns {
			a.Send(i, c, cmd)
		}
		for range conns {
			r := a.Next(time.Now().Add(5*time.Second), nil)
			require.NotNil(t, r, "round %d", round)
			require.NoError(t, r.Err())
			assert.Equal(t, "x", string(r.Reply()[0].Bytes))
		}
		a.End(nil)
		assert.False(t, a.claimed, "End lets go of the claim")
		if claimed {
			require.Eventually(t, b.Claim, 5*time.Second, time.Millisecond, "the claim is free again")
			b.End(nil)
		}
	}
	g.Close()
	assert.False(t, a.Claim(), "closed")
}

// TestBatchReadsRepliesThatCameByItsDeadline: replies that reached the
// sockets by a Batch's deadline, but that nobody had read when the caller
// ran again, are returned (see deadlineGrace), both when the caller held
// the claim (nobody else reads) and when the reader goroutines had not
// had the processor (one processor, the caller holding it while the
// replies came). Without the grace, NextOf judges them lost.
func TestBatchReadsRepliesThatCameByItsDeadline(t *testing.T) {
	defer func(g time.Duration) { deadlineGrace = g }(deadlineGrace)
	deadlineGrace = time.Second // the reader goroutines' chance, on a loaded machine too
	conns, _ := pollerConns(t, 3)
	g := NewGroup(conns, 0)
	defer g.Close()
	cmd := resp.AppendCommand(nil, "PING")
	collect := func(b *Batch, what string) {
		t.Helper()
		for range conns {
			r := b.NextOf(1, time.Now().Add(-time.Millisecond), nil)
			require.NotNil(t, r, "%s: a reply in the socket at the deadline is read", what)
			require.NoError(t, r.Err())
			assert.Equal(t, "PONG", string(r.Reply()[0].Bytes))
		}
		b.End(func(*Request) { t.Errorf("%s: every reply was returned", what) })
	}

	claimer := g.NewBatch(len(conns))
	defer claimer.Release()
	for round := range 3 {
		claimed := false
		if runtime.GOOS == "linux" {
			require.Eventually(t, claimer.Claim, 5*time.Second, time.Millisecond)
			claimed = true
		}
		for i, c := range conns {
			claimer.Send(i, c, cmd)
		}
		if claimed {
			time.Sleep(20 * time.Millisecond) // the replies come; the claim reads nothing until Next
		}
		collect(claimer, "claimed, round "+strconv.Itoa(round))
	}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	plain := NewBatch(len(conns))
	defer plain.Release()
	for round := range 3 {
		for i, c := range conns {
			plain.Send(i, c, cmd) // an idle socket: written inline
		}
		// Hold the one processor while the replies come (well under the
		// runtime's 10 ms preemption): the reader goroutines cannot run.
		for start := time.Now(); time.Since(start) < 3*time.Millisecond; {
		}
		collect(plain, "readers starved, round "+strconv.Itoa(round))
	}
}

// TestBatchSendAfter: SendAfter writes its first command right before the
// slot's, in one write on an idle socket, and the slot gets the second
// answer, not the first.
func TestBatchSendAfter(t *testing.T) {
	c, p, writes := newCountedConn(t)

	batch := NewBatch(1)
	defer batch.Release()
	go func() {
		p.expect("ASKING")
		p.expect("GET", "k")
		p.send("+OK\r\n$1\r\nv\r\n")
	}()
	batch.SendAfter(0, c, resp.AppendCommand(nil, "ASKING"), resp.AppendCommand(nil, "GET", "k"))
	r := batch.Next(time.Now().Add(5*time.Second), nil)
	require.NotNil(t, r, "the GET was not answered")
	require.NoError(t, r.Err())
	assert.Equal(t, "v", string(r.Reply()[0].Bytes), "the slot got the first command's answer")
	assert.Equal(t, int32(1), writes.Load(), "the pair took more than one write")
}

// TestBatchSendAfterDropsThePairTogether: on a late socket the pair waits
// in the queue; when the slot's caller gives up meanwhile, neither is
// written (a lone ASKING would prepare the next caller's command), and a
// pair whose caller still waits is written whole.
func TestBatchSendAfterDropsThePairTogether(t *testing.T) {
	c, catchUp := newLateConn(t, func(p *peer) {
		p.expect("ASKING") // the kept pair's, not the abandoned one's
		p.expect("GET", "kept")
		p.send("+OK\r\n$4\r\nkept\r\n")
	})

	asking := resp.AppendCommand(nil, "ASKING")
	gaveUp, kept := NewBatch(1), NewBatch(1)
	defer kept.Release()
	gaveUp.SendAfter(0, c, asking, resp.AppendCommand(nil, "GET", "abandoned"))
	kept.SendAfter(0, c, asking, resp.AppendCommand(nil, "GET", "kept"))
	c.mu.Lock()
	held := len(c.queue)
	c.mu.Unlock()
	require.Equal(t, 4, held, "the pairs did not wait in the late socket's queue")
	gaveUp.End(nil) // abandons its GET, still queued
	gaveUp.Release()
	catchUp()
	got := kept.Next(time.Now().Add(5*time.Second), nil)
	require.NotNil(t, got, "the kept pair's GET was not answered")
	require.NoError(t, got.Err())
	assert.Equal(t, "kept", string(got.Reply()[0].Bytes))
}
