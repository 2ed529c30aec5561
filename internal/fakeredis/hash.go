package fakeredis

import "github.com/volleylock/volley/resp"

// Hashes, as far as the fencing scripts (see fence.go) and tests that
// look at their hash need them: HSET, HGET, HGETALL.

// hashValue is a hash's fields in the order they were first set: the order
// in which Redis keeps a small hash (a listpack: up to 128 fields, values
// up to 64 bytes) and HGETALL lists it. Past that size Redis converts it to
// a hash table and lists it in that table's order, which the fake does not
// copy.
type hashValue struct {
	fields []hashField
}

type hashField struct {
	name, val string
}

// get returns the field's value.
func (h *hashValue) get(name []byte) (string, bool) {
	for _, f := range h.fields {
		if f.name == string(name) {
			return f.val, true
		}
	}
	return "", false
}

// set sets the field and reports whether it is new.
func (h *hashValue) set(name, val []byte) bool {
	for i := range h.fields {
		if h.fields[i].name == string(name) {
			h.fields[i].val = string(val)
			return false
		}
	}
	h.fields = append(h.fields, hashField{string(name), string(val)})
	return true
}

// lookupHashLocked returns the hash at key, nil if there is none; wrongType
// if the key holds another type (a string, a sorted set).
func (s *Server) lookupHashLocked(db int, key []byte, now int64) (h *hashValue, wrongType bool) {
	e, ok := s.lookupLocked(db, key, now)
	if !ok {
		return nil, false
	}
	return e.hash, e.hash == nil
}

// hsetLocked sets the fields of the hash at key, given as name, value,
// name..., creating the hash if needed, and returns how many fields are
// new; wrongType if the key holds another type. A new hash has no expiry; an
// existing one keeps its own.
func (s *Server) hsetLocked(db int, key []byte, pairs [][]byte, now int64) (created int64, wrongType bool) {
	h, wrongType := s.lookupHashLocked(db, key, now)
	if wrongType {
		return 0, true
	}
	if h == nil {
		h = &hashValue{}
		s.dbs[db][string(key)] = entry{hash: h}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if h.set(pairs[i], pairs[i+1]) {
			created++
		}
	}
	return created, false
}

// cmdHset is HSET key field value [field value ...].
func cmdHset(c *client, args [][]byte) {
	if len(args)%2 == 1 {
		c.out = appendError(c.out, "ERR wrong number of arguments for 'hset' command")
		return
	}
	n, wrongType := c.s.hsetLocked(c.db, args[1], args[2:], c.s.nowMs())
	if wrongType {
		c.out = appendError(c.out, errWrongType)
		return
	}
	c.out = resp.AppendInteger(c.out, n)
}

func cmdHget(c *client, args [][]byte) {
	h, wrongType := c.s.lookupHashLocked(c.db, args[1], c.s.nowMs())
	if wrongType {
		c.out = appendError(c.out, errWrongType)
		return
	}
	if h != nil {
		if v, ok := h.get(args[2]); ok {
			c.out = resp.AppendBulkString(c.out, v)
			return
		}
	}
	c.out = appendNull(c.out, c.proto)
}

// cmdHgetall lists the hash's fields and values: a map in RESP3, a flat
// array in RESP2; empty for a missing key.
func cmdHgetall(c *client, args [][]byte) {
	h, wrongType := c.s.lookupHashLocked(c.db, args[1], c.s.nowMs())
	if wrongType {
		c.out = appendError(c.out, errWrongType)
		return
	}
	if h == nil {
		c.out = appendMapLen(c.out, c.proto, 0)
		return
	}
	out := appendMapLen(c.out, c.proto, len(h.fields))
	for _, f := range h.fields {
		out = resp.AppendBulkString(out, f.name)
		out = resp.AppendBulkString(out, f.val)
	}
	c.out = out
}

// cmdType is TYPE key: string, hash, zset, or none.
func cmdType(c *client, args [][]byte) {
	e, ok := c.s.lookupLocked(c.db, args[1], c.s.nowMs())
	switch {
	case !ok:
		c.out = append(c.out, "+none\r\n"...)
	case e.hash != nil:
		c.out = append(c.out, "+hash\r\n"...)
	case e.zset != nil:
		c.out = append(c.out, "+zset\r\n"...)
	default:
		c.out = append(c.out, "+string\r\n"...)
	}
}
