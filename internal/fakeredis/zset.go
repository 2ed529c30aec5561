package fakeredis

import "github.com/volleylock/volley/resp"

// Sorted sets, as far as the read-write lock's scripts (see rwlock.go)
// and tests that look at their readers need them: ZSCORE and ZCARD as
// commands; ZADD, ZSCORE, ZREM, ZREMRANGEBYSCORE and ZRANGE -1 -1 inside
// the scripts (see lua.go). As in Redis, a sorted set is deleted when its
// last member goes.

// zsetValue is a sorted set: its members and their scores, doubles that
// are never NaN (ZADD refuses NaN).
type zsetValue struct {
	scores map[string]float64
}

// last returns what ZRANGE key -1 -1 WITHSCORES lists: the member of the
// highest score and, of those, the greatest bytewise, as Redis orders
// equal scores; ok is false for an empty set.
func (z *zsetValue) last() (member string, score float64, ok bool) {
	for m, sc := range z.scores {
		if !ok || sc > score || (sc == score && m > member) {
			member, score, ok = m, sc, true
		}
	}
	return member, score, ok
}

// has reports whether member is in z.
func (z *zsetValue) has(member []byte) bool {
	_, ok := z.scores[string(member)]
	return ok
}

// first returns what ZPOPMIN key takes: the member of the lowest score
// and, of those, the least bytewise; ok is false for an empty set.
func (z *zsetValue) first() (member string, ok bool) {
	member, _, ok = z.head()
	return member, ok
}

// head returns what ZRANGE key 0 0 WITHSCORES lists: the member of the
// lowest score (of those, the least bytewise) and its score; ok is false
// for an empty set.
func (z *zsetValue) head() (member string, score float64, ok bool) {
	for m, sc := range z.scores {
		if !ok || sc < score || (sc == score && m < member) {
			member, score, ok = m, sc, true
		}
	}
	return member, score, ok
}

// zpopminLocked is redis.call("zpopmin", key)[1]: it takes the member of
// the lowest score off the set at key (deleting a set it empties) and
// returns it, "" when there is no set; wrongType for a key of another
// type.
func (s *Server) zpopminLocked(db int, key []byte, now int64) (member string, wrongType bool) {
	z, wrongType := s.lookupZsetLocked(db, key, now)
	if z == nil {
		return "", wrongType
	}
	member, _ = z.first()
	delete(z.scores, member)
	if len(z.scores) == 0 {
		delete(s.dbs[db], string(key))
	}
	return member, false
}

// removeUpTo removes the members whose score is at most max, as
// ZREMRANGEBYSCORE key -inf max does, and returns how many there were.
func (z *zsetValue) removeUpTo(max float64) int {
	n := 0
	for m, sc := range z.scores {
		if sc <= max {
			delete(z.scores, m)
			n++
		}
	}
	return n
}

// lookupZsetLocked returns the sorted set at key, nil if there is none;
// wrongType if the key holds another type (a string, a hash).
func (s *Server) lookupZsetLocked(db int, key []byte, now int64) (z *zsetValue, wrongType bool) {
	e, ok := s.lookupLocked(db, key, now)
	if !ok {
		return nil, false
	}
	return e.zset, e.zset == nil
}

// cmdZscore is ZSCORE key member: the member's score (see appendDouble),
// null if the key or the member does not exist.
func cmdZscore(c *client, args [][]byte) {
	z, wrongType := c.s.lookupZsetLocked(c.db, args[1], c.s.nowMs())
	if wrongType {
		c.out = appendError(c.out, errWrongType)
		return
	}
	if z != nil {
		if sc, ok := z.scores[string(args[2])]; ok {
			c.out = appendDouble(c.out, c.proto, sc)
			return
		}
	}
	c.out = appendNull(c.out, c.proto)
}

// cmdZcard is ZCARD key: how many members the sorted set has, 0 if the key
// does not exist.
func cmdZcard(c *client, args [][]byte) {
	z, wrongType := c.s.lookupZsetLocked(c.db, args[1], c.s.nowMs())
	switch {
	case wrongType:
		c.out = appendError(c.out, errWrongType)
	case z == nil:
		c.out = append(c.out, replyZero...)
	default:
		c.out = resp.AppendInteger(c.out, int64(len(z.scores)))
	}
}
