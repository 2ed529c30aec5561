package pipe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/resp"
)

// A request that asked for replay and that a reset dropped, written but
// unanswered, is sent again after the reconnect; one whose deadline
// passed, and one that did not ask, are not. The requests themselves fail
// as usual.
func TestResetReplaysWhatItDropped(t *testing.T) {
	c, d, p := newPipeConn(t, Options{ReadTimeout: 50 * time.Millisecond, ReconnectMin: time.Millisecond, ReconnectMax: time.Millisecond})
	read := make(chan struct{})
	go func() {
		defer close(read)
		p.expect("ECHO", "replay me")
		p.expect("ECHO", "too late")
		p.expect("ECHO", "forget me")
	}()
	send := func(arg string, until time.Time) *Request {
		r := NewRequest()
		r.Cmd = resp.AppendCommand(r.Cmd[:0], "ECHO", arg)
		r.ReplayUntil = until
		c.Send(r, nil)
		return r
	}
	rs := []*Request{
		send("replay me", time.Now().Add(time.Hour)),
		send("too late", time.Now().Add(10*time.Millisecond)),
		send("forget me", time.Time{}),
	}
	<-read // written, never answered: the watch resets the socket
	for _, r := range rs {
		<-r.own
		assert.ErrorIs(t, r.Err(), ErrReadTimeout)
		r.Release()
	}
	p2 := d.accept(t)
	p2.handshake()
	p2.expect("ECHO", "replay me")
	p2.send("$9\r\nreplay me\r\n")
	// The next command on the socket is ours: nothing else was replayed.
	require.Eventually(t, func() bool { return c.Err() == nil }, 5*time.Second, time.Millisecond)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p2.expect("PING")
		p2.send("+PONG\r\n")
	}()
	r := NewRequest()
	r.Cmd = resp.AppendCommand(r.Cmd[:0], "PING")
	c.Send(r, nil)
	<-r.own
	require.NoError(t, r.Err())
	r.Release()
	<-done
	assert.Zero(t, c.kept())
}

// A request that asked for replay and was sent while the Conn was down
// (it fails at once) is sent after the connect that follows.
func TestReplayOfASendWhileDown(t *testing.T) {
	c, d, p := newPipeConn(t, Options{ReconnectMin: 50 * time.Millisecond, ReconnectMax: 50 * time.Millisecond})
	p.nc.Close() // the master hangs up: the Conn is down until it redials
	require.Eventually(t, func() bool { return c.Err() != nil }, 5*time.Second, time.Millisecond)
	r := NewRequest()
	r.Cmd = resp.AppendCommand(r.Cmd[:0], "ECHO", "release")
	r.ReplayUntil = time.Now().Add(time.Hour)
	c.Send(r, nil)
	<-r.own
	require.Error(t, r.Err())
	r.Release()
	assert.Equal(t, 1, c.kept())
	p2 := d.accept(t)
	p2.handshake()
	p2.expect("ECHO", "release")
	p2.send("$7\r\nrelease\r\n")
}
