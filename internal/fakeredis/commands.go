package fakeredis

import (
	"bytes"
	"crypto/subtle"
	"os"
	"runtime"
	"strconv"

	"github.com/volleylock/volley/resp"
)

// defaultVersion is the Redis version the fake reports by default and
// whose replies it copies.
const defaultVersion = "7.0.15"

// command is one entry of the command table.
type command struct {
	name   string // as Redis names it in errors: "get", "client|setname"
	arity  int    // n: exactly n arguments (name included); -n: at least n
	noAuth bool   // allowed before authentication
	pubsub bool   // allowed in RESP2's subscribed mode
	run    func(c *client, args [][]byte)
	subs   map[string]*command // container commands (CLIENT, SCRIPT)
	// since, when not nil, reports whether the server's identity has the
	// command; one without it answers as to an unknown command.
	since func(identity) bool
}

// commands is the command table, by lower-case name.
var commands = map[string]*command{
	"ping":         {name: "ping", arity: -1, pubsub: true, run: cmdPing},
	"echo":         {name: "echo", arity: 2, run: cmdEcho},
	"auth":         {name: "auth", arity: -2, noAuth: true, run: cmdAuth},
	"hello":        {name: "hello", arity: -1, noAuth: true, run: cmdHello},
	"select":       {name: "select", arity: 2, run: cmdSelect},
	"info":         {name: "info", arity: -1, run: cmdInfo},
	"time":         {name: "time", arity: 1, run: cmdTime},
	"get":          {name: "get", arity: 2, run: cmdGet},
	"mget":         {name: "mget", arity: -2, run: cmdMget},
	"set":          {name: "set", arity: -3, run: cmdSet},
	"del":          {name: "del", arity: -2, run: cmdDel},
	"exists":       {name: "exists", arity: -2, run: cmdExists},
	"pexpire":      {name: "pexpire", arity: -3, run: cmdPexpire},
	"pttl":         {name: "pttl", arity: 2, run: cmdPttl},
	"ttl":          {name: "ttl", arity: 2, run: cmdTTL},
	"type":         {name: "type", arity: 2, run: cmdType},
	"hset":         {name: "hset", arity: -4, run: cmdHset},
	"hget":         {name: "hget", arity: 3, run: cmdHget},
	"hgetall":      {name: "hgetall", arity: 2, run: cmdHgetall},
	"zscore":       {name: "zscore", arity: 3, run: cmdZscore},
	"zcard":        {name: "zcard", arity: 2, run: cmdZcard},
	"eval":         {name: "eval", arity: -3, run: cmdEval},
	"evalsha":      {name: "evalsha", arity: -3, run: cmdEvalSha},
	"publish":      {name: "publish", arity: 3, run: cmdPublish},
	"subscribe":    {name: "subscribe", arity: -2, pubsub: true, run: cmdSubscribe},
	"unsubscribe":  {name: "unsubscribe", arity: -1, pubsub: true, run: cmdUnsubscribe},
	"spublish":     {name: "spublish", arity: 3, run: cmdSPublish},
	"delifeq":      {name: "delifeq", arity: 3, run: cmdDelIfEq, since: valkey9},
	"delex":        {name: "delex", arity: -2, run: cmdDelex, since: redis84},
	"ssubscribe":   {name: "ssubscribe", arity: -2, pubsub: true, run: cmdSSubscribe},
	"sunsubscribe": {name: "sunsubscribe", arity: -1, pubsub: true, run: cmdSUnsubscribe},
	"client": {name: "client", arity: -2, subs: map[string]*command{
		"setname": {name: "client|setname", arity: 3, run: cmdClientSetName},
		"getname": {name: "client|getname", arity: 2, run: cmdClientGetName},
		"id":      {name: "client|id", arity: 2, run: cmdClientID},
	}},
	"script": {name: "script", arity: -2, subs: map[string]*command{
		"load":   {name: "script|load", arity: 3, run: cmdScriptLoad},
		"exists": {name: "script|exists", arity: -3, run: cmdScriptExists},
		"flush":  {name: "script|flush", arity: -2, run: cmdScriptFlush},
	}},
}

// exec runs one command whose lower-case name is name, appending its reply
// to c.out, with the checks Redis' processCommand makes, in its order:
// QUIT, unknown command or subcommand, arity, authentication, RESP2's
// subscribed mode.
func (c *client) exec(name []byte, args [][]byte) {
	c.replyAt = len(c.out)
	if string(name) == "quit" {
		c.out = append(c.out, replyOK...)
		c.quit = true
		return
	}
	cmd := commands[string(name)]
	if cmd == nil || cmd.since != nil && !cmd.since(c.s.id) {
		c.out = appendError(c.out, unknownCommand(args))
		return
	}
	if cmd.subs != nil && len(args) >= 2 {
		sub, ok := lowerInto(c.lower2[:], args[1])
		var sc *command
		if ok {
			sc = cmd.subs[string(sub)]
		}
		if sc == nil {
			c.out = appendError(c.out, "ERR unknown subcommand '"+cString(args[1], 128)+
				"'. Try "+string(bytes.ToUpper(args[0]))+" HELP.")
			return
		}
		cmd = sc
	}
	if n := len(args); (cmd.arity > 0 && n != cmd.arity) || n < -cmd.arity {
		c.out = appendError(c.out, "ERR wrong number of arguments for '"+cmd.name+"' command")
		return
	}
	if !c.authed && !cmd.noAuth {
		c.out = append(c.out, replyNoAuth...)
		return
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.dead {
		return
	}
	if len(c.msgs) > 0 {
		c.takeMessagesLocked() // published before this command ran
		c.replyAt = len(c.out)
	}
	if !cmd.pubsub && c.subscribedLocked() {
		c.out = appendError(c.out, "ERR Can't execute '"+cmd.name+errSubscribedContext)
		return
	}
	s.ops++
	if s.ops%sweepEvery == 0 {
		s.sweepLocked()
	}
	cmd.run(c, args)
}

// unknownCommand formats Redis 7.0's unknown-command error: the name and the
// first arguments, quoted, up to 128 bytes of them.
func unknownCommand(args [][]byte) string {
	b := []byte("ERR unknown command '")
	b = append(b, cString(args[0], 128)...)
	b = append(b, "', with args beginning with: "...)
	var list []byte
	for i := 1; i < len(args) && len(list) < 128; i++ {
		prec := 128 - len(list)
		list = append(list, '\'')
		list = append(list, cString(args[i], prec)...)
		list = append(list, '\'', ' ')
	}
	return string(append(b, list...))
}

// cString returns b as C's printf("%.*s", max, b) prints it: cut at the
// first NUL byte and at max bytes.
func cString(b []byte, max int) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) > max {
		b = b[:max]
	}
	return string(b)
}

// cmdPing is PING [message]. In RESP2's subscribed mode it answers as a
// message would come: an array of "pong" and the message, empty if none.
func cmdPing(c *client, args [][]byte) {
	if len(args) > 2 {
		c.out = appendError(c.out, "ERR wrong number of arguments for 'ping' command")
		return
	}
	if c.subscribedLocked() {
		out := resp.AppendArrayHeader(c.out, 2)
		out = resp.AppendBulkString(out, "pong")
		if len(args) == 2 {
			c.out = resp.AppendBulk(out, args[1])
		} else {
			c.out = resp.AppendBulkString(out, "")
		}
		return
	}
	if len(args) == 2 {
		c.out = resp.AppendBulk(c.out, args[1])
		return
	}
	c.out = append(c.out, replyPong...)
}

func cmdEcho(c *client, args [][]byte) { c.out = resp.AppendBulk(c.out, args[1]) }

// checkUser reports whether user/pass are valid credentials.
func (s *Server) checkUser(user, pass []byte) bool {
	if string(user) == "default" {
		return s.opts.Password == "" ||
			subtle.ConstantTimeCompare(pass, []byte(s.opts.Password)) == 1
	}
	want, ok := s.opts.Users[string(user)]
	return ok && subtle.ConstantTimeCompare(pass, []byte(want)) == 1
}

func cmdAuth(c *client, args [][]byte) {
	if len(args) > 3 {
		c.out = appendError(c.out, "ERR syntax error")
		return
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 3 {
		user, pass = args[1], args[2]
	} else if c.s.opts.Password == "" {
		c.out = appendError(c.out, "ERR AUTH <password> called without any password configured "+
			"for the default user. Are you sure your configuration is correct?")
		return
	}
	if !c.s.checkUser(user, pass) {
		c.out = appendError(c.out, "WRONGPASS invalid username-password pair or user is disabled.")
		return
	}
	c.authed = true
	c.out = append(c.out, replyOK...)
}

// validName reports whether a client name is acceptable: printable ASCII
// without spaces.
func validName(name []byte) bool {
	for _, b := range name {
		if b < '!' || b > '~' {
			return false
		}
	}
	return true
}

const errBadName = "ERR Client names cannot contain spaces, newlines or special characters."

func cmdHello(c *client, args [][]byte) {
	var ver int64
	next := 1
	if len(args) >= 2 {
		v, ok := parseInt64(args[1])
		if !ok {
			c.out = appendError(c.out, "ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.out = appendError(c.out, "NOPROTO unsupported protocol version")
			return
		}
		ver, next = v, 2
	}
	for j := next; j < len(args); j++ {
		more := len(args) - 1 - j
		switch opt := args[j]; {
		case equalFold(opt, "auth") && more >= 2:
			if !c.s.checkUser(args[j+1], args[j+2]) {
				c.out = appendError(c.out, "WRONGPASS invalid username-password pair or user is disabled.")
				return
			}
			c.authed = true
			j += 2
		case equalFold(opt, "setname") && more >= 1:
			if !validName(args[j+1]) {
				c.out = appendError(c.out, errBadName)
				return
			}
			c.name = string(args[j+1])
			j++
		default:
			c.out = appendError(c.out, "ERR Syntax error in HELLO option '"+cString(opt, len(opt))+"'")
			return
		}
	}
	if !c.authed {
		c.out = appendError(c.out, "NOAUTH HELLO must be called with the client already authenticated, "+
			"otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and "+
			"select the RESP protocol version at the same time")
		return
	}
	if ver != 0 {
		c.proto = int(ver)
	}
	out := appendMapLen(c.out, c.proto, 7)
	out = resp.AppendBulkString(out, "server")
	out = resp.AppendBulkString(out, c.s.id.server)
	out = resp.AppendBulkString(out, "version")
	out = resp.AppendBulkString(out, c.s.id.version)
	out = resp.AppendBulkString(out, "proto")
	out = resp.AppendInteger(out, int64(c.proto))
	out = resp.AppendBulkString(out, "id")
	out = resp.AppendInteger(out, c.id)
	out = resp.AppendBulkString(out, "mode")
	out = resp.AppendBulkString(out, "standalone")
	out = resp.AppendBulkString(out, "role")
	out = resp.AppendBulkString(out, "master")
	out = resp.AppendBulkString(out, "modules")
	c.out = resp.AppendArrayHeader(out, 0)
}

func cmdSelect(c *client, args [][]byte) {
	id, ok := parseInt64(args[1])
	if !ok || id != int64(int32(id)) {
		c.out = appendError(c.out, "ERR value is not an integer or out of range")
		return
	}
	if id < 0 || id >= numDBs {
		c.out = appendError(c.out, "ERR DB index is out of range")
		return
	}
	c.db = int(id)
	c.out = append(c.out, replyOK...)
}

func cmdClientSetName(c *client, args [][]byte) {
	if !validName(args[2]) {
		c.out = appendError(c.out, errBadName)
		return
	}
	c.name = string(args[2])
	c.out = append(c.out, replyOK...)
}

func cmdClientGetName(c *client, args [][]byte) {
	if c.name == "" {
		c.out = appendNull(c.out, c.proto)
		return
	}
	c.out = resp.AppendBulkString(c.out, c.name)
}

func cmdClientID(c *client, args [][]byte) { c.out = resp.AppendInteger(c.out, c.id) }

func cmdTime(c *client, args [][]byte) {
	now := c.s.clock.Now()
	out := resp.AppendArrayHeader(c.out, 2)
	out = resp.AppendBulkInt(out, now.Unix())
	c.out = resp.AppendBulkInt(out, int64(now.Nanosecond()/1000))
}

// cmdInfo supports the sections server and keyspace; "default", "all" and
// "everything" (and no argument) mean both. Other sections are empty.
func cmdInfo(c *client, args [][]byte) {
	server, replication, keyspace := len(args) == 1, len(args) == 1, len(args) == 1
	for _, a := range args[1:] {
		switch {
		case equalFold(a, "server"):
			server = true
		case equalFold(a, "replication"):
			replication = true
		case equalFold(a, "keyspace"):
			keyspace = true
		case equalFold(a, "default"), equalFold(a, "all"), equalFold(a, "everything"):
			server, replication, keyspace = true, true, true
		}
	}
	var text []byte
	if server {
		text = c.s.appendInfoServer(text)
	}
	if replication {
		if len(text) > 0 {
			text = append(text, "\r\n"...)
		}
		text = append(text, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:"...)
		text = append(text, c.s.replID()...)
		text = append(text, "\r\n"...)
	}
	if keyspace {
		if len(text) > 0 {
			text = append(text, "\r\n"...)
		}
		text = c.s.appendInfoKeyspace(text)
	}
	c.out = appendVerbatim(c.out, c.proto, text)
}

// appendInfoServer appends INFO's "# Server" section, the fields of Redis
// 7.0 in its order, less those that describe a build or a process the fake
// does not have. Callers hold mu.
func (s *Server) appendInfoServer(b []byte) []byte {
	now := s.clock.Now()
	up := int64(s.uptimeLocked().Seconds())
	b = append(b, "# Server\r\n"...)
	b = s.id.appendInfo(b)
	b = append(b, "redis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:fakeredis\r\n"...)
	b = append(b, "redis_mode:standalone\r\nos:"+runtime.GOOS+" "+runtime.GOARCH+"\r\n"...)
	b = append(b, "arch_bits:"+strconv.Itoa(strconv.IntSize)+"\r\n"...)
	b = append(b, "multiplexing_api:go\r\n"...)
	b = append(b, "process_id:"...)
	b = strconv.AppendInt(b, int64(os.Getpid()), 10)
	b = append(b, "\r\nprocess_supervised:no\r\nrun_id:"...)
	b = append(b, s.runID...)
	b = append(b, "\r\ntcp_port:"...)
	b = append(b, s.portString()...)
	b = append(b, "\r\nserver_time_usec:"...)
	b = strconv.AppendInt(b, now.UnixMicro(), 10)
	b = append(b, "\r\nuptime_in_seconds:"...)
	b = strconv.AppendInt(b, up, 10)
	b = append(b, "\r\nuptime_in_days:"...)
	b = strconv.AppendInt(b, up/86400, 10)
	b = append(b, "\r\nhz:10\r\nconfigured_hz:10\r\nexecutable:fakeredis\r\nconfig_file:\r\nio_threads_active:0\r\n"...)
	return b
}

// appendInfoKeyspace appends INFO's "# Keyspace" section: one line per
// database that has live keys. Callers hold mu.
func (s *Server) appendInfoKeyspace(b []byte) []byte {
	b = append(b, "# Keyspace\r\n"...)
	now := s.nowMs()
	for i, db := range s.dbs {
		keys, expires := 0, 0
		for _, e := range db {
			if e.live(now) {
				keys++
				if e.exp != 0 {
					expires++
				}
			}
		}
		if keys == 0 {
			continue
		}
		b = append(b, "db"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ":keys="...)
		b = strconv.AppendInt(b, int64(keys), 10)
		b = append(b, ",expires="...)
		b = strconv.AppendInt(b, int64(expires), 10)
		b = append(b, ",avg_ttl=0\r\n"...)
	}
	return b
}
