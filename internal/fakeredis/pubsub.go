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

// subscribedLocked reports whether c is in RESP2's subscribed mode, where
// only the commands marked pubsub in the command table run.
func (c *client) subscribedLocked() bool { return c.proto < 3 && len(c.subs) > 0 }

func cmdSubscribe(c *client, args [][]byte) {
	s := c.s
	if c.wake == nil {
		// The first subscription: from now on messages can come while the
		// serve goroutine waits for input, so c gets a goroutine to write them.
		c.wake = make(chan struct{}, 1)
		c.subs = make(map[string]struct{})
		s.wg.Add(1)
		go c.push()
	}
	for _, ch := range args[1:] {
		if _, ok := c.subs[string(ch)]; !ok {
			c.subs[string(ch)] = struct{}{}
			subs := s.channels[string(ch)]
			if subs == nil {
				subs = make(map[*client]struct{})
				s.channels[string(ch)] = subs
			}
			subs[c] = struct{}{}
		}
		c.out = appendSubscription(c.out, c.proto, "subscribe", ch, len(c.subs))
	}
}

// cmdUnsubscribe is UNSUBSCRIBE [channel ...]. Without channels it drops
// every subscription, confirming each, in the order of the channels' names
// (Redis' order is that of its hash table); subscribed to none, it answers
// one confirmation with a null channel.
func cmdUnsubscribe(c *client, args [][]byte) {
	if len(args) > 1 {
		for _, ch := range args[1:] {
			c.s.unsubscribeLocked(c, string(ch))
			c.out = appendSubscription(c.out, c.proto, "unsubscribe", ch, len(c.subs))
		}
		return
	}
	if len(c.subs) == 0 {
		out := appendPushLen(c.out, c.proto, 3)
		out = resp.AppendBulkString(out, "unsubscribe")
		out = appendNull(out, c.proto)
		c.out = append(out, replyZero...)
		return
	}
	for _, ch := range slices.Sorted(maps.Keys(c.subs)) {
		c.s.unsubscribeLocked(c, ch)
		c.out = appendSubscription(c.out, c.proto, "unsubscribe", []byte(ch), len(c.subs))
	}
}

func cmdPublish(c *client, args [][]byte) {
	n := c.s.publishLocked(c, args[1], args[2])
	c.out = resp.AppendInteger(c.out, int64(n))
}

// unsubscribeLocked removes c's subscription to ch, if any.
func (s *Server) unsubscribeLocked(c *client, ch string) {
	if _, ok := c.subs[ch]; !ok {
		return
	}
	delete(c.subs, ch)
	subs := s.channels[ch]
	delete(subs, c)
	if len(subs) == 0 {
		delete(s.channels, ch)
	}
}

// publishLocked delivers msg to every connection subscribed to channel and
// returns how many there are, dropped deliveries (DropMessages) included.
// A message to the publishing connection itself goes straight into its
// replies, before the reply of the command that published, as on Redis.
func (s *Server) publishLocked(from *client, channel, msg []byte) int {
	subs := s.channels[string(channel)]
	n := len(subs)
	for c := range subs { // c may leave subs (dropped): allowed while ranging
		if s.dropMsgs != 0 {
			if s.dropMsgs > 0 {
				s.dropMsgs--
			}
			continue
		}
		if c == from {
			c.out = appendMessage(c.out, c.proto, channel, msg)
			continue
		}
		c.msgs = appendMessage(c.msgs, c.proto, channel, msg)
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

// forgetSubscriptionsLocked removes every subscription of c.
func (s *Server) forgetSubscriptionsLocked(c *client) {
	for ch := range c.subs {
		s.unsubscribeLocked(c, ch)
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
// message, from PUBLISH or a script), or every delivery until
// DropMessages(0) when n is negative. PUBLISH still counts the receivers
// whose delivery was dropped. The setting survives Restart.
func (s *Server) DropMessages(n int) {
	s.mu.Lock()
	s.dropMsgs = n
	s.mu.Unlock()
}

// KillSubscribers closes every connection that has at least one
// subscription, as Redis' CLIENT KILL TYPE pubsub does, and returns how
// many it closed. Messages not yet written to them are lost.
func (s *Server) KillSubscribers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.clients {
		if len(c.subs) > 0 {
			s.disconnectLocked(c)
			n++
		}
	}
	return n
}

// appendSubscription appends a (un)subscribe confirmation: kind, the
// channel and the number of subscriptions left.
func appendSubscription(dst []byte, proto int, kind string, channel []byte, count int) []byte {
	dst = appendPushLen(dst, proto, 3)
	dst = resp.AppendBulkString(dst, kind)
	dst = resp.AppendBulk(dst, channel)
	return resp.AppendInteger(dst, int64(count))
}

// appendMessage appends a published message as a subscriber receives it.
func appendMessage(dst []byte, proto int, channel, msg []byte) []byte {
	dst = appendPushLen(dst, proto, 3)
	dst = resp.AppendBulkString(dst, "message")
	dst = resp.AppendBulk(dst, channel)
	return resp.AppendBulk(dst, msg)
}
