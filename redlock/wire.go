package redlock

import (
	"strconv"

	"github.com/volleylock/volley/internal/scripts"
	"github.com/volleylock/volley/resp"
)

// wire is an encoded command. For a Client over a Redis Cluster (see
// placement.go) each master is a copy of the lock under a hash tag of its
// own, that of the copy's slot at the lock's place: the command is encoded
// once, with copy 0's tag before every key, and tags notes where each tag
// starts; master i's command is the same bytes with its own tag written
// there (Client.forMaster). Every tag has the same length, so nothing else
// moves. For other Clients tags stays empty and every master gets the
// bytes as they are.
type wire struct {
	b     []byte
	tags  []int
	place int // the lock's place (see Client.placement), set before the first key
}

func (w *wire) reset() { w.b, w.tags, w.place = w.b[:0], w.tags[:0], 0 }

// key appends key followed by suffix ("" for the key alone) as a bulk
// string: for a cluster Client, behind copy 0's hash tag at w.place, noted
// in w.tags. Every key of one command shares the place, the lock's (see
// Client.placement), which the encoder sets before the first key.
func (w *wire) key(c *Client, key, suffix string) {
	w.b = append(w.b, '$')
	w.b = strconv.AppendInt(w.b, int64(c.tagLen+len(key)+len(suffix)), 10)
	w.b = append(w.b, '\r', '\n')
	if c.tagLen > 0 {
		w.tags = append(w.tags, len(w.b))
		w.b = append(w.b, c.tagFor(0, w.place)...)
	}
	w.b = append(w.b, key...)
	w.b = append(w.b, suffix...)
	w.b = append(w.b, '\r', '\n')
}

// forMaster returns w's bytes for master i: w.b itself, or a copy in
// *scratch with master i's tag in place of copy 0's.
func (c *Client) forMaster(w *wire, i int, scratch *[]byte) []byte {
	if len(w.tags) == 0 {
		return w.b
	}
	s := append((*scratch)[:0], w.b...)
	tag := c.tagFor(i, w.place)
	for _, at := range w.tags {
		copy(s[at:], tag)
	}
	*scratch = s
	return s
}

// channel appends the shard channel of key's releases, releasedChannelPrefix
// and key, as a bulk string: for a cluster Client with copy 0's hash tag
// before the key, noted in w.tags, as Release's script makes it (see
// waitRoom.channel).
func (w *wire) channel(c *Client, key string) {
	w.b = append(w.b, '$')
	w.b = strconv.AppendInt(w.b, int64(len(releasedChannelPrefix)+c.tagLen+len(key)), 10)
	w.b = append(w.b, '\r', '\n')
	w.b = append(w.b, releasedChannelPrefix...)
	if c.tagLen > 0 {
		w.tags = append(w.tags, len(w.b))
		w.b = append(w.b, c.tagFor(0, w.place)...)
	}
	w.b = append(w.b, key...)
	w.b = append(w.b, '\r', '\n')
}

// The commands below are encoded here and nowhere else in the package but
// command.go (a burst's command) and native.go (its native forms): every
// other request redlock sends is one of these.

// askingCmd is ASKING, encoded: it goes before a command a cluster node
// answered with ASK (see fanout.go).
var askingCmd = resp.AppendCommand(nil, "ASKING")

// verbKey appends "verb key": a GET or a PTTL of key (Inspect, a leader's
// record, the fencing counter).
func (w *wire) verbKey(c *Client, verb, key string) {
	w.b = resp.AppendArrayHeader(w.b, 2)
	w.b = resp.AppendBulkString(w.b, verb)
	w.key(c, key, "")
}

// eval appends "EVAL script len(keys) keys... args...", the script's
// source sent whole (the fencing counter's repairs, rare enough that a
// NOSCRIPT round is not worth saving).
func (w *wire) eval(c *Client, script *scripts.Script, keys []string, args []string) {
	w.b = resp.AppendArrayHeader(w.b, 3+len(keys)+len(args))
	w.b = resp.AppendBulkString(w.b, "EVAL")
	w.b = resp.AppendBulkString(w.b, script.Source)
	w.b = resp.AppendBulkInt(w.b, int64(len(keys)))
	for _, k := range keys {
		w.key(c, k, "")
	}
	for _, a := range args {
		w.b = resp.AppendBulkString(w.b, a)
	}
}

// setNX appends "SET key tok NX PX ttl", ttl in milliseconds: a plain
// lock's attempt (see op.encode), or a copy of a held value restored (see
// restore.go).
func (w *wire) setNX(c *Client, key string, tok *token, ttl []byte) {
	w.b = resp.AppendArrayHeader(w.b, 6)
	w.b = resp.AppendBulkString(w.b, "SET")
	w.key(c, key, "")
	w.b = resp.AppendBulk(w.b, tok[:])
	w.b = resp.AppendBulkString(w.b, "NX")
	w.b = resp.AppendBulkString(w.b, "PX")
	w.b = resp.AppendBulk(w.b, ttl)
}

// leave appends "EVAL <scripts.Leave> 1 key id release": a Client, id,
// leaving a key's waiters unless the key still holds the holder whose
// release woke it (see leaveWaiters); release is empty when none did.
// It goes with SendForget and no ReplayUntil (a replay after a reset
// could take off a Client that has enrolled again), and the Conn answers
// NOSCRIPT with EVAL only for requests with one: hence EVAL, not EVALSHA.
func (w *wire) leave(c *Client, key string, id, release []byte) {
	w.b = resp.AppendArrayHeader(w.b, 6)
	w.b = resp.AppendBulkString(w.b, "EVAL")
	w.b = resp.AppendBulkString(w.b, scripts.Leave.Source)
	w.b = resp.AppendBulkString(w.b, "1")
	w.key(c, key, "")
	w.b = resp.AppendBulk(w.b, id)
	w.b = resp.AppendBulk(w.b, release)
}

// appendShardSub appends "verb channel" to dst: an SSUBSCRIBE or
// SUNSUBSCRIBE of a waiting room's channel (see subscriptions.go).
func appendShardSub(dst []byte, verb, channel string) []byte {
	return resp.AppendCommand(dst, verb, channel)
}
