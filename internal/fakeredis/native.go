package fakeredis

import (
	"strconv"

	"github.com/volleylock/volley/resp"
)

// identity is the server a fake reports and answers as: Redis 7.0.15 by
// default, or the Redis or Valkey that Options names. Only the native
// compare-and-set commands depend on it: SET's IFEQ (Valkey 8.1, Redis
// 8.4), DELIFEQ (Valkey 9.0) and DELEX (Redis 8.4).
type identity struct {
	server, version string
	major, minor    int
}

func newIdentity(server, version string) identity {
	if server == "" {
		server = "redis"
	}
	if version == "" {
		version = defaultVersion
	}
	id := identity{server: server, version: version}
	maj, rest, _ := cutNumber(version)
	mnr, _, _ := cutNumber(rest)
	id.major, id.minor = maj, mnr
	return id
}

// cutNumber reads the number at the start of s and skips the dot after
// it.
func cutNumber(s string) (n int, rest string, ok bool) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	if i < len(s) && s[i] == '.' {
		i++
	}
	return n, s[i:], err == nil
}

func (id identity) atLeast(server string, major, minor int) bool {
	return id.server == server && (id.major > major || id.major == major && id.minor >= minor)
}

func (id identity) valkey() bool { return id.server == "valkey" }

// The commands and options each server added.
func valkey9(id identity) bool    { return id.atLeast("valkey", 9, 0) }
func redis84(id identity) bool    { return id.atLeast("redis", 8, 4) }
func hasSetIfEq(id identity) bool { return id.atLeast("valkey", 8, 1) || redis84(id) }

// appendInfo appends INFO server's version lines: Valkey reports
// redis_version 7.2.4 (the Redis it forked), then its name and its own
// version.
func (id identity) appendInfo(b []byte) []byte {
	if id.valkey() {
		b = append(b, "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:"...)
		b = append(b, id.version...)
		return append(b, "\r\n"...)
	}
	b = append(b, "redis_version:"...)
	b = append(b, id.version...)
	return append(b, "\r\n"...)
}

// DELIFEQ key value (Valkey 9.0): deletes key if it holds value; 1 if it
// did, else 0; WRONGTYPE for a key that is not a string.
func cmdDelIfEq(c *client, args [][]byte) {
	s := c.s
	e, found := s.lookupLocked(c.db, args[1], s.nowMs())
	switch {
	case found && !e.isString():
		c.out = appendError(c.out, errWrongType)
	case found && e.val == string(args[2]):
		delete(s.dbs[c.db], string(args[1]))
		c.out = resp.AppendInteger(c.out, 1)
	default:
		c.out = resp.AppendInteger(c.out, 0)
	}
}

// DELEX key [IFEQ value | IFNE value] (Redis 8.4): without a condition,
// DEL of one key; with one, deletes a string key if the condition holds.
// 1 if it deleted, else 0. The digest conditions (IFDEQ, IFDNE) are not
// emulated: they answer as an invalid condition.
func cmdDelex(c *client, args [][]byte) {
	if len(args) != 2 && len(args) != 4 {
		c.out = appendError(c.out, "ERR wrong number of arguments for 'delex' command")
		return
	}
	s := c.s
	eq := true
	if len(args) == 4 {
		switch {
		case equalFold(args[2], "ifeq"):
		case equalFold(args[2], "ifne"):
			eq = false
		default:
			c.out = appendError(c.out, "ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE")
			return
		}
	}
	e, found := s.lookupLocked(c.db, args[1], s.nowMs())
	if !found {
		c.out = resp.AppendInteger(c.out, 0)
		return
	}
	if len(args) == 4 {
		if !e.isString() {
			c.out = appendError(c.out, "ERR Key should be of string type if conditions are specified")
			return
		}
		if (e.val == string(args[3])) != eq {
			c.out = resp.AppendInteger(c.out, 0)
			return
		}
	}
	delete(s.dbs[c.db], string(args[1]))
	c.out = resp.AppendInteger(c.out, 1)
}
