package fakeredis

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/leakcheck"
	"github.com/volleylock/volley/internal/scripts"
)

// pubsubNS is a namespace as the tests see it: its commands, whose
// lower-case names are the kinds of their confirmations, and the kind of
// its messages, spelled out here rather than taken from frameKinds.
type pubsubNS struct {
	name                  string
	sub, unsub, pub, kind string
}

var (
	globalNS = pubsubNS{"global", "SUBSCRIBE", "UNSUBSCRIBE", "PUBLISH", "message"}
	shardNS  = pubsubNS{"shard", "SSUBSCRIBE", "SUNSUBSCRIBE", "SPUBLISH", "smessage"}
	bothNS   = []pubsubNS{globalNS, shardNS}
)

// message returns the frame of a message published in ns, in RESP2 (*3) or
// RESP3 (>3).
func (ns pubsubNS) message(resp3 bool, channel, payload string) string {
	head := "*3\r\n"
	if resp3 {
		head = ">3\r\n"
	}
	return head + bulk(ns.kind) + bulk(channel) + bulk(payload)
}

// subscribed returns the RESP2 confirmation of ns's SUBSCRIBE command.
func (ns pubsubNS) subscribed(channel string, count int) string {
	return subscription(strings.ToLower(ns.sub), channel, count)
}

// unsubscribed returns the RESP2 confirmation of ns's UNSUBSCRIBE command.
func (ns pubsubNS) unsubscribed(channel string, count int) string {
	return subscription(strings.ToLower(ns.unsub), channel, count)
}

// unsubscribedNone returns the RESP2 reply of ns's UNSUBSCRIBE command
// without arguments from a connection with no subscription in ns.
func (ns pubsubNS) unsubscribedNone() string {
	return "*3\r\n" + bulk(strings.ToLower(ns.unsub)) + "$-1\r\n:0\r\n"
}

// subscribe subscribes c to channels in ns and checks the confirmations.
func (ns pubsubNS) subscribe(t *testing.T, c *testConn, channels ...string) {
	t.Helper()
	c.send(append([]string{ns.sub}, channels...)...)
	head := `^[*>]3\r\n` + regexp.QuoteMeta(bulk(strings.ToLower(ns.sub)))
	for range channels {
		require.Regexp(t, head, c.read())
	}
}

// message returns the frame of a message published with PUBLISH.
func message(resp3 bool, channel, payload string) string {
	return globalNS.message(resp3, channel, payload)
}

// subscription returns a (un)subscribe confirmation frame in RESP2.
func subscription(kind, channel string, count int) string {
	return "*3\r\n" + bulk(kind) + bulk(channel) + ":" + strconv.Itoa(count) + "\r\n"
}

// subscribe subscribes c to channels with SUBSCRIBE and checks the
// confirmations.
func subscribe(t *testing.T, c *testConn, channels ...string) {
	t.Helper()
	globalNS.subscribe(t, c, channels...)
}

// errSubscribed is the error RESP2's subscribed mode answers cmd with.
func errSubscribed(cmd string) string {
	return "-ERR Can't execute '" + cmd + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET " +
		"are allowed in this context\r\n"
}

// TestPubSubDelivery runs the same sequence in each namespace.
func TestPubSubDelivery(t *testing.T) {
	for _, ns := range bothNS {
		t.Run(ns.name, func(t *testing.T) { testPubSubDelivery(t, ns) })
	}
}

func testPubSubDelivery(t *testing.T, ns pubsubNS) {
	s := StartT(t, Options{})
	pub, sub2, sub3 := dial(t, s.Addr()), dial(t, s.Addr()), dial(t, s.Addr())
	require.Regexp(t, `^%7\r\n`, sub3.do("HELLO", "3"))

	sub2.send(ns.sub, "a", "b")
	require.Equal(t, ns.subscribed("a", 1), sub2.read())
	require.Equal(t, ns.subscribed("b", 2), sub2.read())
	ns.subscribe(t, sub3, "a")

	require.Equal(t, ":2\r\n", pub.do(ns.pub, "a", "hello"))
	require.Equal(t, ns.message(false, "a", "hello"), sub2.read())
	require.Equal(t, ns.message(true, "a", "hello"), sub3.read())
	require.Equal(t, ":1\r\n", pub.do(ns.pub, "b", "only sub2"))
	require.Equal(t, ":0\r\n", pub.do(ns.pub, "c", "nobody"))
	require.Equal(t, ns.message(false, "b", "only sub2"), sub2.read())

	// Messages keep their order, also many in a row.
	var batch []byte
	for i := range 100 {
		batch = encodeCommand(batch, ns.pub, "a", strconv.Itoa(i))
	}
	pub.write(batch)
	for i := range 100 {
		require.Equal(t, ":2\r\n", pub.read())
		require.Equal(t, ns.message(false, "a", strconv.Itoa(i)), sub2.read())
		require.Equal(t, ns.message(true, "a", strconv.Itoa(i)), sub3.read())
	}

	// RESP2 refuses other commands while subscribed, publishing included;
	// RESP3 does not.
	require.Equal(t, errSubscribed("get"), sub2.do("GET", "k"))
	require.Equal(t, errSubscribed(strings.ToLower(ns.pub)), sub2.do(ns.pub, "a", "x"))
	require.Equal(t, "*2\r\n"+bulk("pong")+bulk(""), sub2.do("PING"))
	require.Equal(t, "_\r\n", sub3.do("GET", "k"))
	require.Equal(t, "+PONG\r\n", sub3.do("PING"))

	// A connection that leaves its channels gets nothing more.
	sub2.send(ns.unsub)
	require.Equal(t, ns.unsubscribed("a", 1), sub2.read())
	require.Equal(t, ns.unsubscribed("b", 0), sub2.read())
	require.Equal(t, ns.unsubscribedNone(), sub2.do(ns.unsub))
	require.Equal(t, ":1\r\n", pub.do(ns.pub, "a", "sub3 only"))
	require.Equal(t, ns.message(true, "a", "sub3 only"), sub3.read())
	require.Equal(t, "+PONG\r\n", sub2.do("PING"), "a message after "+ns.unsub)
}

// TestPubSubNamespaces checks that channels and shard channels of the same
// name are apart: messages, counts, and leaving all of one namespace, with
// RESP2's subscribed mode lasting while the other has subscriptions.
func TestPubSubNamespaces(t *testing.T) {
	s := StartT(t, Options{})
	pub, sub := dial(t, s.Addr()), dial(t, s.Addr())
	sub.send("SSUBSCRIBE", "a", "b", "a")
	require.Equal(t, shardNS.subscribed("a", 1), sub.read())
	require.Equal(t, shardNS.subscribed("b", 2), sub.read())
	require.Equal(t, shardNS.subscribed("a", 2), sub.read())
	require.Equal(t, globalNS.subscribed("a", 1), sub.do("SUBSCRIBE", "a"), "counted with the shard channels")

	require.Equal(t, ":0\r\n", pub.do("PUBLISH", "b", "to nobody"), "a shard subscriber counted")
	require.Equal(t, ":1\r\n", pub.do("SPUBLISH", "a", "shard"))
	require.Equal(t, shardNS.message(false, "a", "shard"), sub.read())
	require.Equal(t, ":1\r\n", pub.do("PUBLISH", "a", "global"))
	require.Equal(t, message(false, "a", "global"), sub.read())

	// Leaving the channels keeps the shard channels, and subscribed mode.
	require.Equal(t, globalNS.unsubscribed("a", 0), sub.do("UNSUBSCRIBE"))
	require.Equal(t, globalNS.unsubscribedNone(), sub.do("UNSUBSCRIBE"))
	require.Equal(t, shardNS.unsubscribed("zz", 2), sub.do("SUNSUBSCRIBE", "zz"))
	require.Equal(t, "*2\r\n"+bulk("pong")+bulk(""), sub.do("PING"))
	require.Equal(t, errSubscribed("get"), sub.do("GET", "k"))
	require.Equal(t, ":0\r\n", pub.do("PUBLISH", "a", "gone"))
	require.Equal(t, ":1\r\n", pub.do("SPUBLISH", "b", "kept"))
	require.Equal(t, shardNS.message(false, "b", "kept"), sub.read())
	sub.send("SUNSUBSCRIBE")
	require.Equal(t, shardNS.unsubscribed("a", 1), sub.read())
	require.Equal(t, shardNS.unsubscribed("b", 0), sub.read())
	require.Equal(t, shardNS.unsubscribedNone(), sub.do("SUNSUBSCRIBE"))
	require.Equal(t, "+PONG\r\n", sub.do("PING"), "still in subscribed mode")
	require.Equal(t, ":0\r\n", pub.do("SPUBLISH", "a", "x"))

	// The same in RESP3, where the null channel is RESP3's null.
	require.Regexp(t, `^%7\r\n`, sub.do("HELLO", "3"))
	require.Equal(t, ">3\r\n"+bulk("sunsubscribe")+"_\r\n:0\r\n", sub.do("SUNSUBSCRIBE"))
	require.Equal(t, ">3\r\n"+bulk("ssubscribe")+bulk("a")+":1\r\n", sub.do("SSUBSCRIBE", "a"))
	require.Equal(t, ">3\r\n"+bulk("subscribe")+bulk("b")+":1\r\n", sub.do("SUBSCRIBE", "b"))
	require.Equal(t, ":0\r\n", pub.do("SPUBLISH", "b", "x"))
	require.Equal(t, ":1\r\n", pub.do("SPUBLISH", "a", "r3"))
	require.Equal(t, shardNS.message(true, "a", "r3"), sub.read())

	// A subscriber that leaves is forgotten in both namespaces.
	require.Equal(t, "+OK\r\n", sub.do("QUIT"))
	require.Eventually(t, func() bool {
		return pub.do("SPUBLISH", "a", "x") == ":0\r\n" && pub.do("PUBLISH", "b", "x") == ":0\r\n"
	}, 10*time.Second, time.Millisecond)
}

// TestPubSubMessagesBetweenReplies publishes to a RESP3 subscriber that
// pipelines commands with big replies at the same time: every frame it
// reads must be whole, its replies in order, and its messages in order.
func TestPubSubMessagesBetweenReplies(t *testing.T) {
	s := StartT(t, Options{})
	sub, pub := dial(t, s.Addr()), dial(t, s.Addr())
	big := strings.Repeat("v", 64<<10)
	require.Equal(t, "+OK\r\n", pub.do("SET", "big", big))
	require.Regexp(t, `^%7\r\n`, sub.do("HELLO", "3"))
	subscribe(t, sub, "ch")

	const gets, msgs = 200, 500
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() {
		var batch []byte
		for range gets {
			batch = encodeCommand(batch, "GET", "big")
		}
		_, err := sub.nc.Write(batch)
		errs <- err
	})
	wg.Go(func() {
		var batch []byte
		for i := range msgs {
			batch = encodeCommand(batch, "PUBLISH", "ch", strconv.Itoa(i))
		}
		_, err := pub.nc.Write(batch)
		errs <- err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	replies, next := 0, 0
	for replies < gets || next < msgs {
		frame := sub.read()
		if strings.HasPrefix(frame, ">") {
			require.Equal(t, message(true, "ch", strconv.Itoa(next)), frame)
			next++
			continue
		}
		require.Equal(t, bulk(big), frame, "reply %d", replies)
		replies++
	}
	for range msgs {
		require.Equal(t, ":1\r\n", pub.read())
	}
}

// TestPubSubPublishToSelf checks that a RESP3 connection receives its own
// message before the reply of the command that published it, as on Redis
// 7.0, in both namespaces.
func TestPubSubPublishToSelf(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s.Addr())
	require.Regexp(t, `^%7\r\n`, c.do("HELLO", "3"))
	subscribe(t, c, "volley:released:lock")
	require.Equal(t, message(true, "volley:released:lock", "x"), c.do("PUBLISH", "volley:released:lock", "x"))
	require.Equal(t, ":1\r\n", c.read())

	shardNS.subscribe(t, c, "volley:released:lock")
	require.Equal(t, shardNS.message(true, "volley:released:lock", "y"), c.do("SPUBLISH", "volley:released:lock", "y"))
	require.Equal(t, ":1\r\n", c.read())

	require.Equal(t, "+OK\r\n", c.do("SET", "lock", "tok"))
	require.Equal(t, "+OK\r\n", c.do("SET", "lock"+scripts.ListenSuffix, "1", "PX", "60000"))
	c.send("EVAL", scripts.Release.Source, "1", "lock", "tok", holderID([]byte("tok")))
	require.Equal(t, shardNS.message(true, "volley:released:lock", holderID([]byte("tok"))), c.read())
	require.Equal(t, ":1\r\n", c.read())
}

// TestReleaseScriptsPublish checks that the release scripts publish on the
// keys' shard channels, and nothing on the channels of the same names.
func TestReleaseScriptsPublish(t *testing.T) {
	s := StartT(t, Options{})
	c, sub, global := dial(t, s.Addr()), dial(t, s.Addr()), dial(t, s.Addr())
	shardNS.subscribe(t, sub, "volley:released:a", "volley:released:b")
	subscribe(t, global, "volley:released:a", "volley:released:b")
	id := holderID([]byte("tok"))
	require.Equal(t, "79bead8e6d65862a", id, "the first 16 hex digits of sha1(tok), as Redis 7.0.15 computes them")

	// The quiet releases publish nothing; the others publish per key.
	for _, args := range [][]string{
		{"EVAL", scripts.ReleaseQuiet.Source, "1", "a", "tok"},
		{"EVAL", scripts.ReleaseMultiQuiet.Source, "2", "a", "b", "tok"},
	} {
		require.Equal(t, "+OK\r\n", c.do("SET", "a", "tok"))
		require.Equal(t, "+OK\r\n", c.do("SET", "b", "tok"))
		require.Equal(t, ":1\r\n", c.do(args...), "%v", args)
	}
	// Release publishes only when someone waits: the key's waiters'
	// set or its mark (scripts.ListenSuffix) exists.
	require.Equal(t, "+OK\r\n", c.do("SET", "a", "tok"))
	require.Equal(t, ":1\r\n", c.do("EVAL", scripts.Release.Source, "1", "a", "tok", holderID([]byte("tok"))))
	require.Equal(t, "*2\r\n"+bulk("pong")+bulk(""), sub.do("PING"), "a release nobody waited for published")
	require.Equal(t, "+OK\r\n", c.do("SET", "a", "tok"))
	require.Equal(t, "+OK\r\n", c.do("SET", "a"+scripts.ListenSuffix, "1", "PX", "60000"))
	require.Equal(t, ":1\r\n", c.do("EVAL", scripts.Release.Source, "1", "a", "tok", holderID([]byte("tok"))))
	require.Equal(t, shardNS.message(false, "volley:released:a", id), sub.read())
	require.Equal(t, ":0\r\n", c.do("EVAL", scripts.Release.Source, "1", "a", "tok", holderID([]byte("tok"))), "released twice")

	require.Equal(t, "+OK\r\n", c.do("SET", "a", "tok"))
	require.Equal(t, "+OK\r\n", c.do("SET", "b", "tok"))
	require.Equal(t, ":1\r\n", c.do("EVAL", scripts.ReleaseMulti.Source, "2", "a", "b", "tok"))
	require.Equal(t, shardNS.message(false, "volley:released:a", id), sub.read())
	require.Equal(t, shardNS.message(false, "volley:released:b", id), sub.read())
	require.Equal(t, "*2\r\n"+bulk("pong")+bulk(""), sub.do("PING"), "a quiet release published")
	require.Equal(t, "*2\r\n"+bulk("pong")+bulk(""), global.do("PING"), "a release published on a channel")
}

func TestLockWaitScript(t *testing.T) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	s := StartT(t, Options{Clock: clock})
	c := dial(t, s.Addr())
	sha := c.do("SCRIPT", "LOAD", scripts.LockWait.Source)
	require.Equal(t, bulk(scripts.LockWait.SHA), sha)
	sha = sha[len("$40\r\n") : len(sha)-2]

	require.Equal(t, ":1\r\n", c.do("EVALSHA", sha, "1", "lock", "tok", "1000"))
	clock.Advance(250 * time.Millisecond)
	holder := "*2\r\n" + bulk(holderID([]byte("tok"))) + ":750\r\n"
	require.Equal(t, holder, c.do("EVALSHA", sha, "1", "lock", "other", "1000"))
	require.Equal(t, holder, c.do("EVAL", scripts.LockMulti.Source, "2", "free", "lock", "other", "1000"))
	require.Equal(t, ":0\r\n", c.do("EXISTS", "free"), "scripts.LockMulti set a key though one was taken")
	require.Regexp(t, `^%7\r\n`, c.do("HELLO", "3"))
	require.Equal(t, holder, c.do("EVALSHA", sha, "1", "lock", "other", "1000"), "RESP3")
	clock.Advance(751 * time.Millisecond)
	require.Equal(t, ":1\r\n", c.do("EVALSHA", sha, "1", "lock", "other", "1000"), "after the holder expired")
}

func TestDropMessages(t *testing.T) {
	for _, ns := range bothNS {
		t.Run(ns.name, func(t *testing.T) {
			s := StartT(t, Options{})
			pub, sub := dial(t, s.Addr()), dial(t, s.Addr())
			ns.subscribe(t, sub, "ch")

			s.DropMessages(1)
			require.Equal(t, ":1\r\n", pub.do(ns.pub, "ch", "dropped"), "a dropped delivery still counts")
			require.Equal(t, ":1\r\n", pub.do(ns.pub, "ch", "kept"))
			require.Equal(t, ns.message(false, "ch", "kept"), sub.read())

			s.DropMessages(-1)
			for range 3 {
				require.Equal(t, ":1\r\n", pub.do(ns.pub, "ch", "dropped"))
			}
			s.DropMessages(0)
			require.Equal(t, ":1\r\n", pub.do(ns.pub, "ch", "kept again"))
			require.Equal(t, ns.message(false, "ch", "kept again"), sub.read())
		})
	}
}

func TestKillSubscribers(t *testing.T) {
	s := StartT(t, Options{})
	pub, sub2, sub3 := dial(t, s.Addr()), dial(t, s.Addr()), dial(t, s.Addr())
	shard, left := dial(t, s.Addr()), dial(t, s.Addr())
	subscribe(t, sub2, "a")
	require.Regexp(t, `^%7\r\n`, sub3.do("HELLO", "3"))
	subscribe(t, sub3, "b")
	shardNS.subscribe(t, shard, "a")
	subscribe(t, left, "a")
	shardNS.subscribe(t, left, "a")
	left.send("UNSUBSCRIBE")
	require.Equal(t, subscription("unsubscribe", "a", 0), left.read())
	left.send("SUNSUBSCRIBE")
	require.Equal(t, shardNS.unsubscribed("a", 0), left.read())

	require.Equal(t, 3, s.KillSubscribers())
	for _, c := range []*testConn{sub2, sub3, shard} {
		_, err := c.readAll()
		require.True(t, isClosed(err), "want EOF, got %v", err)
	}
	require.Equal(t, ":0\r\n", pub.do("PUBLISH", "a", "x"))
	require.Equal(t, ":0\r\n", pub.do("SPUBLISH", "a", "x"))
	require.Equal(t, "+PONG\r\n", left.do("PING"), "a connection without subscriptions was closed")
	require.Equal(t, 0, s.KillSubscribers())
}

func TestRestartForgetsSubscriptions(t *testing.T) {
	s := StartT(t, Options{})
	sub := dial(t, s.Addr())
	subscribe(t, sub, "a")
	shardNS.subscribe(t, sub, "a")
	s.Restart()
	_, err := sub.readAll()
	require.True(t, isClosed(err), "want EOF, got %v", err)
	pub := dial(t, s.Addr())
	require.Equal(t, ":0\r\n", pub.do("PUBLISH", "a", "x"))
	require.Equal(t, ":0\r\n", pub.do("SPUBLISH", "a", "x"))
}

// TestStuckSubscribers checks that a subscriber hung on a fault, or one
// that does not read, delays neither the publisher nor other subscribers,
// and that the one that does not read is disconnected once the messages
// waiting for it pass the limit, in each namespace.
func TestStuckSubscribers(t *testing.T) {
	for _, ns := range bothNS {
		t.Run(ns.name, func(t *testing.T) { testStuckSubscribers(t, ns) })
	}
}

func testStuckSubscribers(t *testing.T, ns pubsubNS) {
	s := StartT(t, Options{})
	s.SetFault("ECHO", Fault{Hang: true})
	pub, hung, good := dial(t, s.Addr()), dial(t, s.Addr()), dial(t, s.Addr())
	ns.subscribe(t, good, "ch")
	require.Regexp(t, `^%7\r\n`, hung.do("HELLO", "3"))
	ns.subscribe(t, hung, "ch")
	hung.send("ECHO", "x")

	// A connection that stops reading, on a small socket buffer.
	slow := dial(t, s.Addr())
	if tcp, ok := slow.nc.(*net.TCPConn); ok {
		require.NoError(t, tcp.SetReadBuffer(4096))
	}
	ns.subscribe(t, slow, "ch")
	require.Equal(t, ":3\r\n", pub.do(ns.pub, "ch", "first"))
	require.Equal(t, ns.message(false, "ch", "first"), good.read())

	// Socket buffers take some before the server's buffer fills.
	payload := strings.Repeat("m", 1<<20)
	n := 0
	for ; n < 8*maxPendingMessages/len(payload); n++ {
		reply := pub.do(ns.pub, "ch", payload)
		require.Equal(t, ns.message(false, "ch", payload), good.read(), "message %d", n)
		if reply == ":1\r\n" {
			break // both stuck ones are gone
		}
	}
	require.Equal(t, ":1\r\n", pub.do(ns.pub, "ch", "last"), "after %d messages of 1 MiB", n)
	require.Equal(t, ns.message(false, "ch", "last"), good.read())
	_, err := hung.readAll()
	require.True(t, isClosed(err), "want EOF, got %v", err)
}

// TestCloseWithBlockedSubscriber closes a server whose push goroutine is
// blocked writing to a subscriber that does not read.
func TestCloseWithBlockedSubscriber(t *testing.T) {
	s, err := Start(Options{})
	require.NoError(t, err)
	pub, sub := dial(t, s.Addr()), dial(t, s.Addr())
	if tcp, ok := sub.nc.(*net.TCPConn); ok {
		require.NoError(t, tcp.SetReadBuffer(4096))
	}
	subscribe(t, sub, "ch")
	payload := strings.Repeat("m", 1<<20)
	// More than the socket buffers take, less than maxPendingMessages.
	for range maxPendingMessages/len(payload) - 1 {
		require.Equal(t, ":1\r\n", pub.do("PUBLISH", "ch", payload))
	}
	start := time.Now()
	require.NoError(t, s.Close())
	require.Less(t, time.Since(start), 5*time.Second)
	require.Empty(t, leakcheck.Wait(5*time.Second), "goroutines left after Close")
}

// TestPubSubFaults checks that a fault's cut or delay applies to the
// reply, not to a message that comes before it.
func TestPubSubFaults(t *testing.T) {
	s := StartT(t, Options{})
	c, pub := dial(t, s.Addr()), dial(t, s.Addr())
	require.Equal(t, "+OK\r\n", c.do("SET", "k", "v"))
	require.Regexp(t, `^%7\r\n`, c.do("HELLO", "3"))
	subscribe(t, c, "ch")
	s.SetFault("ECHO", Fault{Latency: 2 * time.Second})
	s.SetFault("GET", Fault{CloseMidReply: true})
	before := s.Commands()
	var batch []byte
	batch = encodeCommand(batch, "ECHO", "slow")
	batch = encodeCommand(batch, "GET", "k")
	c.write(batch)
	waitCommands(t, s, before+1)
	// The count goes up as the ECHO is read, before it runs: a message
	// published at once can come before it (it did under make
	// test-stress's CPU hogs). Its reply waits 2 s; publish well inside.
	time.Sleep(300 * time.Millisecond)
	// Published while the ECHO's reply waits: after it, before the GET's.
	require.Equal(t, ":1\r\n", pub.do("PUBLISH", "ch", "m"))
	got, err := c.readAll()
	require.True(t, isClosed(err), "want EOF, got %v", err)
	require.Equal(t, bulk("slow")+message(true, "ch", "m")+"$1\r", got)
}

// TestPubSubChurn subscribes and unsubscribes on many connections, half of
// them in each namespace, while messages are published in both and
// subscribers are killed, checking every frame a subscriber reads (none
// from the other namespace): the race detector watches the rest.
func TestPubSubChurn(t *testing.T) {
	s := StartT(t, Options{})
	const subscribers, rounds = 8, 100
	errs := make(chan error, subscribers+1)
	stop := make(chan struct{})
	var subs, pubs sync.WaitGroup
	for i := range subscribers {
		subs.Go(func() { errs <- churn(s.Addr(), i%2 == 1, bothNS[i/2%2], rounds) })
	}
	pubs.Go(func() { errs <- publishUntil(s.Addr(), stop) })
	for k := range int64(3) {
		waitCommands(t, s, 300*(k+1))
		s.KillSubscribers()
	}
	subs.Wait()
	close(stop)
	pubs.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// churn runs rounds of SUBSCRIBE, PING, UNSUBSCRIBE (those of ns) in one
// write each on a connection subscribed to another channel, and checks the
// frames that come back, messages included. A connection killed on the way
// is dialled again.
func churn(addr string, resp3 bool, ns pubsubNS, rounds int) error {
	var nc net.Conn
	defer func() {
		if nc != nil {
			nc.Close()
		}
	}()
	var br *bufio.Reader
	head, pong := "*3\r\n", "*2\r\n"+bulk("pong")+bulk("")
	if resp3 {
		head, pong = ">3\r\n", "+PONG\r\n"
	}
	batch := encodeCommand(nil, ns.sub, "ch")
	batch = encodeCommand(batch, "PING")
	batch = encodeCommand(batch, ns.unsub, "ch")
	for range rounds {
		if nc == nil {
			var err error
			if nc, err = net.Dial("tcp", addr); err != nil {
				return err
			}
			if err := nc.SetDeadline(time.Now().Add(time.Minute)); err != nil {
				return err
			}
			br = bufio.NewReader(nc)
			var hello []byte
			if resp3 {
				hello = encodeCommand(hello, "HELLO", "3")
			}
			// A lasting subscription, so that kills find it: one may come
			// as soon as the server registered it, before its confirmation
			// is read (a busy machine widens that moment). A connection
			// killed here is dialled again, as one killed later is.
			hello = encodeCommand(hello, ns.sub, "keep")
			if _, err := nc.Write(hello); err != nil {
				nc.Close()
				nc = nil
				continue
			}
			killed := false
			for range countCommands(hello) {
				if frame, err := readFrame(nil, br); err != nil {
					if errors.Is(err, errFrame) {
						return fmt.Errorf("malformed frame %q", frame)
					}
					killed = true
					break
				}
			}
			if killed {
				nc.Close()
				nc = nil
				continue
			}
		}
		if _, err := nc.Write(batch); err != nil {
			nc.Close()
			nc = nil
			continue
		}
		want := []string{head + bulk(strings.ToLower(ns.sub)) + bulk("ch") + ":2\r\n", pong,
			head + bulk(strings.ToLower(ns.unsub)) + bulk("ch") + ":1\r\n"}
		for len(want) > 0 {
			frame, err := readFrame(nil, br)
			if err != nil {
				if errors.Is(err, errFrame) {
					return fmt.Errorf("malformed frame %q", frame)
				}
				nc.Close() // killed
				nc = nil
				break
			}
			switch string(frame) {
			case want[0]:
				want = want[1:]
			case head + bulk(ns.kind) + bulk("ch") + bulk("payload"):
				if len(want) == 3 {
					return errors.New("a message before the subscribe confirmation")
				}
			default:
				return fmt.Errorf("unexpected frame %q, want %q", frame, want[0])
			}
		}
	}
	return nil
}

// publishUntil publishes on "ch", in turn with PUBLISH and SPUBLISH, until
// stop is closed.
func publishUntil(addr string, stop <-chan struct{}) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return err
	}
	br := bufio.NewReader(nc)
	cmds := [][]byte{encodeCommand(nil, "PUBLISH", "ch", "payload"), encodeCommand(nil, "SPUBLISH", "ch", "payload")}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		if _, err := nc.Write(cmds[i%2]); err != nil {
			return err
		}
		reply, err := readFrame(nil, br)
		if err != nil {
			return err
		}
		if reply[0] != ':' {
			return fmt.Errorf("%q: %q", cmds[i%2], reply)
		}
	}
}
