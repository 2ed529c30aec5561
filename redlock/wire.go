package redlock

import (
	"strconv"

	"github.com/volleylock/volley/resp"
)

// wire is an encoded command. For a Client over a Redis Cluster (see
// cluster.go) each master is a copy of the lock under its own hash tag:
// the command is encoded once, with copy 0's tag before every key, and
// tags notes where each tag starts; master i's command is the same bytes
// with its own tag written there (Client.forMaster). Every copy's tag has
// the same length, so nothing else moves. For other Clients tags stays
// empty and every master gets the bytes as they are.
type wire struct {
	b    []byte
	tags []int
}

func (w *wire) reset() { w.b, w.tags = w.b[:0], w.tags[:0] }

// key appends key as a bulk string: for a cluster Client, behind copy 0's
// hash tag, noted in w.tags.
func (w *wire) key(c *Client, key string) {
	if c.tagLen == 0 {
		w.b = resp.AppendBulkString(w.b, key)
		return
	}
	w.b = append(w.b, '$')
	w.b = strconv.AppendInt(w.b, int64(c.tagLen+len(key)), 10)
	w.b = append(w.b, '\r', '\n')
	w.tags = append(w.tags, len(w.b))
	w.b = append(w.b, c.masters[0].tag...)
	w.b = append(w.b, key...)
	w.b = append(w.b, '\r', '\n')
}

// forMaster returns w's bytes for master i: w.b itself, or a copy in
// *scratch with master i's tag in place of copy 0's.
func (c *Client) forMaster(w *wire, i int, scratch *[]byte) []byte {
	if len(w.tags) == 0 {
		return w.b
	}
	s := append((*scratch)[:0], w.b...)
	for _, at := range w.tags {
		copy(s[at:], c.masters[i].tag)
	}
	*scratch = s
	return s
}
