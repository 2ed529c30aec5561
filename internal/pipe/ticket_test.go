package pipe

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// oldestIsTicket reports whether c's oldest command in flight is a
// ticket (see ticket.go), and whether its command is in the replay log.
func oldestIsTicket(c *Conn) (ticket, logged bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight.len() == 0 {
		return false, false
	}
	e := &c.inflight.buf[c.inflight.head]
	return e.r == nil, e.logLen > 0
}

// getKey returns key's value on c's master ("" for none).
func getKey(t *testing.T, c *Conn, key string) string {
	t.Helper()
	vals, err := c.Do(context.Background(), "GET", key)
	require.NoError(t, err)
	return string(vals[0].Bytes)
}

// A driven round's command that asked for replay, written as a ticket
// and dropped unanswered by a reset after its round ended, is sent again
// after the reconnect, from the Conn's replay log; one that did not ask
// is not.
func TestTicketReplayedAfterReset(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr(), ReadTimeout: time.Hour, ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	admin := dialT(t, Options{Addr: srv.Addr()})
	g := NewGroup([]*Conn{c}, 0)
	defer g.Close()
	b := g.NewBatch(2)
	defer b.Release()
	ty := newTally(2)
	b.Hear = ty.hear

	require.NoError(t, srv.Command("CLIENT", "PAUSE", "10000", "WRITE"))
	b.ReplayUntil = time.Now().Add(time.Hour)
	b.Queue(0, c, resp.AppendCommand(nil, "SET", "replayed", "yes"))
	b.ReplayUntil = time.Time{}
	b.Queue(1, c, resp.AppendCommand(nil, "SET", "dropped", "yes"))
	b.Drive(time.Now().Add(100 * time.Millisecond))
	assert.Equal(t, WokeDeadline, b.Await(nil))
	if runtime.GOOS == "linux" {
		ticket, logged := oldestIsTicket(c)
		assert.True(t, ticket, "a driven command on a detached socket goes as a ticket")
		assert.True(t, logged, "its command is in the replay log")
	}
	b.End(nil)

	// The master drops the connection with both commands unanswered.
	_, err := admin.Do(context.Background(), "CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
	require.NoError(t, err)
	_, err = admin.Do(context.Background(), "CLIENT", "UNPAUSE")
	require.NoError(t, err)
	replayedNotDropped(t, c, admin, ty, "after the reconnect")
}

// replayedNotDropped asserts that the ended round's command that asked
// for replay set its key ("replayed") how, that the other ("dropped")
// did not, and that the round's Hear (ty's) heard nothing.
func replayedNotDropped(t *testing.T, c, admin *Conn, ty *tally, how string) {
	t.Helper()
	require.Eventually(t, func() bool { return getKey(t, admin, "replayed") == "yes" }, 5*time.Second, 10*time.Millisecond,
		"the command that asked for replay runs %s", how)
	_, err := c.Do(context.Background(), "PING") // after anything sent again, on the same socket
	require.NoError(t, err)
	assert.Empty(t, getKey(t, admin, "dropped"), "the command that did not ask is not sent again")
	ty.mu.Lock()
	defer ty.mu.Unlock()
	assert.Zero(t, ty.got+ty.late, "the ended round hears nothing")
}

// A -NOSCRIPT answer to a ticket's EVALSHA of one of Options.Scripts is
// answered with the EVAL form while the round goes on (Hear gets the
// EVAL's answer), and, after the round ended, for a command that asked
// for replay (from the replay log), not for one that did not.
func TestTicketNoScriptIsEvaluated(t *testing.T) {
	const script = "return redis.call('SET', KEYS[1], ARGV[1])"
	sum := sha1.Sum([]byte(script))
	sha := hex.EncodeToString(sum[:])
	srv := redistest.Start(t, redistest.Options{})
	// Answers nobody waits for are read within a quarter of ReadTimeout
	// (see poller.readBy).
	c := dialT(t, Options{Addr: srv.Addr(), ReadTimeout: 400 * time.Millisecond, Scripts: []string{script}})
	admin := dialT(t, Options{Addr: srv.Addr()})
	g := NewGroup([]*Conn{c}, 0)
	defer g.Close()
	b := g.NewBatch(2)
	defer b.Release()
	ty := newTally(1)
	b.Hear = ty.hear
	evalsha := func(key string) []byte { return resp.AppendCommand(nil, "EVALSHA", sha, "1", key, "yes") }

	// While the round goes on.
	require.NoError(t, srv.Command("SCRIPT", "FLUSH"))
	b.Queue(0, c, evalsha("waited"))
	b.Drive(time.Now().Add(10 * time.Second))
	require.Equal(t, WokeDecided, b.Await(nil))
	b.End(nil)
	ty.mu.Lock()
	assert.Equal(t, map[int]string{0: "OK"}, ty.replies, "Hear gets the EVAL's answer")
	ty.mu.Unlock()
	assert.Equal(t, "yes", getKey(t, admin, "waited"))

	// After the round ended.
	ty.reset(2)
	require.NoError(t, srv.Command("SCRIPT", "FLUSH"))
	require.NoError(t, srv.Command("CLIENT", "PAUSE", "10000", "WRITE"))
	b.ReplayUntil = time.Now().Add(time.Hour)
	b.Queue(0, c, evalsha("replayed"))
	b.ReplayUntil = time.Time{}
	b.Queue(1, c, evalsha("dropped"))
	b.Drive(time.Now().Add(100 * time.Millisecond))
	assert.Equal(t, WokeDeadline, b.Await(nil))
	if runtime.GOOS == "linux" {
		ticket, _ := oldestIsTicket(c)
		assert.True(t, ticket, "a driven command on a detached socket goes as a ticket")
	}
	b.End(nil)
	require.NoError(t, srv.Command("CLIENT", "UNPAUSE"))
	replayedNotDropped(t, c, admin, ty, "as EVAL")
}

// The replay log gives each command back as it was logged, and keeps no
// more than about twice what is owed, however many went through it.
func TestReplayLogKeepsWhatIsOwed(t *testing.T) {
	var c Conn
	var owed []entry
	cmd := func(i int) []byte { return resp.AppendCommand(nil, "SET", "k", string(rune('a'+i%26))) }
	for i := range 10000 {
		c.mu.Lock()
		e := entry{logLen: int32(len(cmd(i)))}
		e.logAt = c.logForReplay(cmd(i))
		owed = append(owed, e)
		if len(owed) > 8 { // answered, oldest first
			assert.Equal(t, string(cmd(i-8)), string(c.logged(&owed[0], true)))
			owed = owed[1:]
		}
		for j := range owed {
			require.Equal(t, string(cmd(i-len(owed)+1+j)), string(c.logged(&owed[j], false)))
		}
		assert.LessOrEqual(t, len(c.replayLog.log), 2*9*len(cmd(i))+len(cmd(i)))
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.clearReplayLog()
	e := entry{logLen: int32(len(cmd(0)))}
	e.logAt = c.logForReplay(cmd(0))
	assert.Equal(t, string(cmd(0)), string(c.logged(&e, true)), "after a reset")
	c.mu.Unlock()
}

// A driven round decided while the driver still writes it (the first
// masters answered before it reached the others) is written all the
// same, and its End waits for that: a command its caller sends after
// End (a release) comes after it on the connection, never before.
func TestEndWaitsForTheDriversWrite(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := dialT(t, Options{Addr: srv.Addr()})
	g := NewGroup([]*Conn{c}, 0)
	defer g.Close()
	b, _ := newTalliedBatch(t, g)
	set := resp.AppendCommand(nil, "SET", "k", "locked")
	b.Queue(0, c, set)

	// The driver's write, as driver.write does it, stopped after staging.
	g.d.writing.Lock()
	b.mu.Lock()
	b.driven = true
	b.staged.Store(true)
	b.mu.Unlock()

	var ended atomic.Bool
	released := make(chan error, 1)
	go func() {
		b.End(nil)
		ended.Store(true)
		_, err := c.Do(context.Background(), "APPEND", "k", "+released")
		released <- err
	}()
	time.Sleep(50 * time.Millisecond)
	assert.False(t, ended.Load(), "End returned while the driver still wrote its round")

	tix := []staged{{entry: entry{b: b, sent: monoNow(), gen: b.gen.Load()}, end: len(set)}}
	c.sendTickets(set, tix, monoNow(), nil)
	b.staged.Store(false)
	g.d.writing.Unlock()
	require.NoError(t, <-released)
	assert.Equal(t, "locked+released", getKey(t, c, "k"), "the round's command, then the release")
}
