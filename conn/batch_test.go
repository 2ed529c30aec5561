package conn

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/resp"
)

// TestBatchNextAbandonReuse: a Batch returns each slot's answer once, gives
// up on a slot that does not answer (whose late reply then goes to no
// one: the next request on that Conn gets its own), and a slot sent again
// after Abandon works on a fresh Request.
func TestBatchNextAbandonReuse(t *testing.T) {
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

	r := batch.Next(nil, nil)
	require.NotNil(t, r)
	assert.Equal(t, 0, r.Tag)
	assert.Equal(t, "a", string(r.Reply()[0].Bytes))
	<-answered
	<-heard
	assert.Equal(t, 1, batch.Pending())

	timeout := time.NewTimer(10 * time.Millisecond)
	assert.Nil(t, batch.Next(timeout.C, nil), "slot 1 has not answered: Next returns at the timeout")
	batch.Abandon(func(*Request) { t.Error("nothing answered meanwhile") })
	assert.Equal(t, 0, batch.Pending())

	// b's late answer to the abandoned GET comes first: it must go to no
	// one, and the next GET on b gets its own answer.
	go func() {
		pb.expect("GET", "k")
		pb.send("$4\r\nlate\r\n$1\r\nb\r\n")
	}()
	batch.Send(1, b, cmd)
	r = batch.Next(nil, nil)
	require.NotNil(t, r)
	assert.Equal(t, 1, r.Tag)
	assert.Equal(t, "b", string(r.Reply()[0].Bytes))
}

// TestBatchAbandonHandsOverRacedAnswers: an answer that completed before
// Abandon but was not yet received by Next is passed to late, not lost
// and not abandoned.
func TestBatchAbandonHandsOverRacedAnswers(t *testing.T) {
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
	batch.Abandon(func(r *Request) { got = append(got, string(r.Reply()[0].Bytes)) })
	assert.Equal(t, []string{"PONG"}, got)
	assert.Equal(t, 0, batch.Pending())
}

// TestBatchNextReturnsOnDone: done ends a wait; with nothing pending Next
// returns at once.
func TestBatchNextReturnsOnDone(t *testing.T) {
	a, _, pa := newPipeConn(t, Options{Addr: "pipe:a"})
	batch := NewBatch(1)
	assert.Nil(t, batch.Next(nil, nil), "nothing pending")
	go func() { pa.expect("PING") }() // never answered
	batch.Send(0, a, resp.AppendCommand(nil, "PING"))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	assert.Nil(t, batch.Next(nil, ctx.Done()))
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
