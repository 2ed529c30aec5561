package pipe

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/resp"
)

// A -NOSCRIPT answer to an EVALSHA of a loaded script is answered by the
// Conn itself with the EVAL form while the request is wanted: its caller
// still waits (it completes with the EVAL's reply), or it asked for replay
// and its caller gave it up (SendForget): a release's effect is not lost.
// A request given up without replay, or whose script the Conn does not
// know, completes with the NOSCRIPT and is not sent again.
func TestNoScriptIsEvaluatedWhileWanted(t *testing.T) {
	const script = "return redis.call('DEL', KEYS[1])"
	sum := sha1.Sum([]byte(script))
	sha := hex.EncodeToString(sum[:])
	d := newPipeDialer()
	c, err := New(Options{Addr: "pipe:1", Dialer: d.dial, Scripts: []string{script}})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	p := d.accept(t)
	p.handshake()
	p.expect("SCRIPT", "LOAD", script)
	p.send("$40\r\n" + sha + "\r\n")
	require.NoError(t, c.WaitReady(context.Background()))

	evalsha := func(sha string, until time.Time) *Request {
		r := NewRequest()
		r.Cmd = resp.AppendCommand(r.Cmd[:0], "EVALSHA", sha, "1", "k")
		r.ReplayUntil = until
		return r
	}
	const noscript = "-NOSCRIPT No matching script. Please use EVAL.\r\n"
	later := time.Now().Add(time.Hour)

	// Waited for: the caller sees the EVAL's answer.
	// The peer runs beside the Conn: a pipe's write waits for its read.
	peer := func(script func()) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			script()
		}()
		return done
	}
	evaluated := func(sha string) func() {
		return func() {
			p.expect("EVALSHA", sha, "1", "k")
			p.send(noscript)
			p.expect("EVAL", script, "1", "k")
			p.send(":1\r\n")
		}
	}
	done := peer(evaluated(sha))
	r := evalsha(sha, later)
	c.Send(r, nil)
	<-r.own
	<-done
	require.NoError(t, r.Err())
	require.Len(t, r.Reply(), 1)
	assert.EqualValues(t, 1, r.Reply()[0].Int)
	r.Release()

	// Given up on: the EVAL is sent all the same.
	done = peer(evaluated(sha))
	c.SendForget(evalsha(sha, later))
	<-done

	// Waited for without replay, or after its deadline: evaluated too.
	for _, until := range []time.Time{{}, time.Now().Add(-time.Second)} {
		done = peer(evaluated(sha))
		r := evalsha(sha, until)
		c.Send(r, nil)
		<-r.own
		<-done
		require.NoError(t, r.Err())
		assert.False(t, isNoScript(r.Reply()), "until %v", until)
		r.Release()
	}

	// Given up without replay, or after its deadline: the NOSCRIPT
	// stands and nothing is sent again (the PING below is the next
	// command the master reads).
	for _, until := range []time.Time{{}, time.Now().Add(-time.Second)} {
		done = peer(func() {
			p.expect("EVALSHA", sha, "1", "k")
			p.send(noscript)
		})
		c.SendForget(evalsha(sha, until))
		<-done
	}

	// A script the Conn never loaded: the NOSCRIPT is the caller's.
	other := hex.EncodeToString(make([]byte, 20))
	done = peer(func() {
		p.expect("EVALSHA", other, "1", "k")
		p.send(noscript)
	})
	r = evalsha(other, later)
	c.Send(r, nil)
	<-done
	<-r.own
	require.NoError(t, r.Err())
	assert.True(t, isNoScript(r.Reply()))
	r.Release()

	done = peer(func() {
		p.expect("PING")
		p.send("+PONG\r\n")
	})
	r = NewRequest()
	r.Cmd = resp.AppendCommand(r.Cmd[:0], "PING")
	c.Send(r, nil)
	<-done
	<-r.own
	require.NoError(t, r.Err())
	r.Release()
}
