package fakeredis

import (
	"maps"
	"slices"

	"github.com/volleylock/volley/resp"
)

// maxPendingMessages bounds the messages published to one connection and
// not yet handed to its socket, as Redis' client-output-buffer-limit for
// pub/sub clients does: a subscriber that lets more pile up (it does not
// read, or it hangs on a fault) is disconnected. Redis' default limits are
// 32 MiB at once, or 8 MiB for 60 seconds; the fake applies 8 MiB at once.
const maxPendingMessages = 8 << 20

// errSubscribedContext ends the error a RESP2 connection with subscriptions
// gets for any command but the pub/sub ones, PING and QUIT.
const errSubscribedContext = "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"

// A namespace is one of Redis' two sets of channels, which never meet: a
// message published in one reaches only the subscribers of its channel in
// that one. Each has its commands, and its own kinds of frames.
type namespace uint8

const (
	global namespace = iota // SUBSCRIBE, UNSUBSCRIBE, PUBLISH
	shard                   // SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH
	numNamespaces
)

// frameKinds are, by namespace, the first elements of the frames a
// subscriber gets: the confirmations and the messages.
var frameKinds = [numNamespaces]struct{ subscribe, unsubscribe, message string }{
	global: {"subscribe", "unsubscribe", "message"},
	shard:  {"ssubscribe", "sunsubscribe", "smessage"},
}

// subscribedLocked reports whether c is in RESP2's subscribed mode, where
// only the commands marked pubsub in the command table run.
func (c *client) subscribedLocked() bool { return c.proto < 3 && c.hasSubscriptionsLocked() }

// hasSubscriptionsLocked reports whether c is subscribed to a channel of
// either namespace.
func (c *client) hasSubscriptionsLocked() bool {
	for _, subs := range c.subs {
		if len(subs) > 0 {
			return true
		}
	}
	return false
}

func cmdSubscribe(c *client, args [][]byte)    { c.subscribe(global, args[1:]) }
func cmdSSubscribe(c *client, args [][]byte)   { c.subscribe(shard, args[1:]) }
func cmdUnsubscribe(c *client, args [][]byte)  { c.unsubscribe(global, args[1:]) }
func cmdSUnsubscribe(c *client, args [][]byte) { c.unsubscribe(shard, args[1:]) }
func cmdPublish(c *client, args [][]byte)      { c.publish(global, args[1], args[2]) }
func cmdSPublish(c *client, args [][]byte)     { c.publish(shard, args[1], args[2]) }

// subscribe is SUBSCRIBE or SSUBSCRIBE channel...: each confirmation
// counts c's subscriptions in ns, as Redis 7 counts those of the two
// namespaces apart.
func (c *client) subscribe(ns namespace, channels [][]byte) {
	s := c.s
	if c.wake == nil {
		// The first subscription: from now on messages can come while the
		// serve goroutine waits for input, so c gets a goroutine to write them.
		c.wake = make(chan struct{}, 1)
		for i := range c.subs {
			c.subs[i] = make(map[string]struct{})
		}
		s.wg.Add(1)
		go c.push()
	}
	for _, ch := range channels {
		if _, ok := c.subs[ns][string(ch)]; !ok {
			c.subs[ns][string(ch)] = struct{}{}
			subs := s.channels[ns][string(ch)]
			if subs == nil {
				subs = make(map[*client]struct{})
				s.channels[ns][string(ch)] = subs
			}
			subs[c] = struct{}{}
		}
		c.out = appendSubscription(c.out, c.proto, frameKinds[ns].subscribe, ch, len(c.subs[ns]))
	}
}

// unsubscribe is UNSUBSCRIBE or SUNSUBSCRIBE [channel ...]. Without
// channels it drops every subscription in ns, confirming each, in the
// order of the channels' names (Redis' order is that of its hash table);
// subscribed to none there, it answers one confirmation with a null
// channel, as Redis 7.0 does.
func (c *client) unsubscribe(ns namespace, channels [][]byte) {
	kind := frameKinds[ns].unsubscribe
	if len(channels) > 0 {
		for _, ch := range channels {
			c.s.unsubscribeLocked(c, ns, string(ch))
			c.out = appendSubscription(c.out, c.proto, kind, ch, len(c.subs[ns]))
		}
		return
	}
	if len(c.subs[ns]) == 0 {
		out := appendPushLen(c.out, c.proto, 3)
		out = resp.AppendBulkString(out, kind)
		out = appendNull(out, c.proto)
		c.out = append(out, replyZero...)
		return
	}
	for _, ch := range slices.Sorted(maps.Keys(c.subs[ns])) {
		c.s.unsubscribeLocked(c, ns, ch)
		c.out = appendSubscription(c.out, c.proto, kind, []byte(ch), len(c.subs[ns]))
	}
}

// publish is PUBLISH or SPUBLISH channel message.
func (c *client) publish(ns namespace, channel, msg []byte) {
	n := c.s.publishLocked(c, ns, channel, msg)
	c.out = resp.AppendInteger(c.out, int64(n))
}

// unsubscribeLocked removes c's subscription to ch in ns, if any.
func (s *Server) unsubscribeLocked(c *client, ns namespace, ch string) {
	if _, ok := c.subs[ns][ch]; !ok {
		return
	}
	delete(c.subs[ns], ch)
	subs := s.channels[ns][ch]
	delete(subs, c)
	if len(subs) == 0 {
		delete(s.channels[ns], ch)
	}
}

// publishLocked delivers msg to every connection subscribed to channel in
// ns and returns how many there are, dropped deliveries (DropMessages)
// included. A message to the publishing connection itself goes straight
// into its replies, before the reply of the command that published, as on
// Redis 7.0.
func (s *Server) publishLocked(from *client, ns namespace, channel, msg []byte) int {
	kind := frameKinds[ns].message
	subs := s.channels[ns][string(channel)]
	n := len(subs)
	for c := range subs { // c may leave subs (dropped): allowed while ranging
		if s.dropMsgs != 0 {
			if s.dropMsgs > 0 {
				s.dropMsgs--
			}
			continue
		}
		if c == from {
			c.out = appendMessage(c.out, c.proto, kind, channel, msg)
			continue
		}
		c.msgs = appendMessage(c.msgs, c.proto, kind, channel, msg)
		if len(c.msgs) > maxPendingMessages {
			s.disconnectLocked(c)
			continue
		}
		if c.idle {
			select {
			case c.wake <- struct{}{}:
			default: // already woken
			}
		}
	}
	return n
}

// push writes the messages published to c while its serve goroutine waits
// for input (while it handles commands, it writes them itself, between
// replies). It returns when c is dropped.
func (c *client) push() {
	defer c.s.wg.Done()
	for {
		select {
		case <-c.wake:
			c.writeMessages()
		case <-c.kill:
			return
		}
	}
}

// writeMessages writes the pending messages if the serve goroutine is idle.
// It holds the write lock from before it takes them until they are written,
// so that replies to commands read later cannot overtake them.
func (c *client) writeMessages() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	s := c.s
	s.mu.Lock()
	var msgs []byte
	if c.idle {
		msgs, c.msgs = c.msgs, nil
	}
	s.mu.Unlock()
	if len(msgs) == 0 {
		return
	}
	if _, err := c.nc.Write(msgs); err != nil {
		c.nc.Close() // the serve goroutine's read fails, which ends c
	}
}

// setIdle tells whether the serve goroutine is about to wait for input
// (idle) or has commands to handle. Going idle, it hands the pending
// messages to the push goroutine; leaving it, it takes them before any
// reply, as they were published before those commands ran.
func (c *client) setIdle(idle bool) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c.idle = idle
	switch {
	case len(c.msgs) == 0:
	case idle:
		select {
		case c.wake <- struct{}{}:
		default:
		}
	default:
		c.takeMessagesLocked()
	}
}

// takeMessagesLocked moves the pending messages into c.out, ahead of the
// reply about to be appended. Only c's serve goroutine calls it.
func (c *client) takeMessagesLocked() {
	c.out = append(c.out, c.msgs...)
	if cap(c.msgs) > maxKeptOutput {
		c.msgs = nil
	} else {
		c.msgs = c.msgs[:0]
	}
}

// forgetSubscriptionsLocked removes every subscription of c, in both
// namespaces.
func (s *Server) forgetSubscriptionsLocked(c *client) {
	for ns := range numNamespaces {
		for ch := range c.subs[ns] {
			s.unsubscribeLocked(c, ns, ch)
		}
	}
	c.msgs = nil
}

// disconnectLocked closes c's connection and forgets it, as Redis'
// CLIENT KILL does.
func (s *Server) disconnectLocked(c *client) {
	c.dropLocked()
	delete(s.clients, c)
}

// DropMessages makes the server drop the next n deliveries of published
// messages to subscribers (one delivery per subscribed connection and
// message, from PUBLISH, SPUBLISH or a script), or every delivery until
// DropMessages(0) when n is negative. PUBLISH and SPUBLISH still count the
// receivers whose delivery was dropped. The setting survives Restart.
func (s *Server) DropMessages(n int) {
	s.mu.Lock()
	s.dropMsgs = n
	s.mu.Unlock()
}

// KillSubscribers closes every connection that has at least one
// subscription, to a channel or a shard channel, as Redis' CLIENT KILL
// TYPE pubsub does, and returns how many it closed. Messages not yet
// written to them are lost.
func (s *Server) KillSubscribers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.clients {
		if c.hasSubscriptionsLocked() {
			s.disconnectLocked(c)
			n++
		}
	}
	return n
}

// appendSubscription appends a (un)subscribe confirmation: kind, the
// channel and the number of subscriptions in its namespace.
func appendSubscription(dst []byte, proto int, kind string, channel []byte, count int) []byte {
	dst = appendPushLen(dst, proto, 3)
	dst = resp.AppendBulkString(dst, kind)
	dst = resp.AppendBulk(dst, channel)
	return resp.AppendInteger(dst, int64(count))
}

// appendMessage appends a published message as a subscriber receives it;
// kind is "message" or "smessage".
func appendMessage(dst []byte, proto int, kind string, channel, msg []byte) []byte {
	dst = appendPushLen(dst, proto, 3)
	dst = resp.AppendBulkString(dst, kind)
	dst = resp.AppendBulk(dst, channel)
	return resp.AppendBulk(dst, msg)
}
