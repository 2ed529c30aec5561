package fakeredis

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/scripts"
)

// step is one command of a differential script.
type step struct {
	args []string
	raw  string // sent as is instead of args, e.g. an inline command
	// shape, when set, checks a reply that legitimately differs between two
	// servers (run_id, TIME, client ids, elapsed milliseconds); it is applied
	// to both replies instead of comparing them.
	shape func(t *testing.T, reply string)
	// mask, when set, rewrites both replies before they are compared,
	// replacing what legitimately differs (see maskFence).
	mask func(t *testing.T, reply string) string
	// on is the connection, by index, that sends the command and reads
	// frames reply frames (0 meaning 1), compared as one string.
	on     int
	frames int
	// recv sends nothing: the step reads frames the server sends on its
	// own, such as published messages.
	recv bool
}

func cmd(args ...string) step { return step{args: args} }

func shaped(shape func(t *testing.T, reply string), args ...string) step {
	return step{args: args, shape: shape}
}

// on sends args on connection i and reads frames reply frames.
func on(i, frames int, args ...string) step { return step{args: args, on: i, frames: frames} }

// recv reads frames frames that connection i receives without asking.
func recv(i, frames int) step { return step{on: i, frames: frames, recv: true} }

// helloID matches the client id field of a HELLO reply, which depends on
// how many connections the server has had.
var helloID = regexp.MustCompile(`\$2\r\nid\r\n:([0-9]+)\r\n`)

// runDifferentialFresh runs steps over conns connections to each of a
// fresh redis-server and a fresh fake (see runDifferentialConns).
func runDifferentialFresh(t *testing.T, conns int, steps []step) {
	real := redistest.Start(t, redistest.Options{})
	fake := StartT(t, Options{})
	var fakes, reals []*testConn
	for range conns {
		fakes = append(fakes, dial(t, fake.Addr()))
		reals = append(reals, dial(t, real.Addr()))
	}
	runDifferentialConns(t, fakes, reals, steps)
}

// runDifferential sends every step to both servers over raw TCP and
// requires byte-identical replies.
func runDifferential(t *testing.T, fake, real *testConn, steps []step) {
	t.Helper()
	runDifferentialConns(t, []*testConn{fake}, []*testConn{real}, steps)
}

// runDifferentialConns is runDifferential over several connections to
// each server: fakes[i] and reals[i] play step.on == i.
func runDifferentialConns(t *testing.T, fakes, reals []*testConn, steps []step) {
	t.Helper()
	for i, st := range steps {
		what := strconv.Quote(st.raw)
		switch {
		case st.recv:
			what = "(receive)"
		case st.raw == "":
			what = strings.Join(st.args, " ")
		}
		what = "conn " + strconv.Itoa(st.on) + ": " + what
		fake, real := fakes[st.on], reals[st.on]
		switch {
		case st.recv:
		case st.raw != "":
			fake.write([]byte(st.raw))
			real.write([]byte(st.raw))
		default:
			fake.send(st.args...)
			real.send(st.args...)
		}
		got, err := fake.readFrames(max(st.frames, 1), 10*time.Second)
		require.NoError(t, err, "fake, step %d: %s", i, what)
		want, err := real.readFrames(max(st.frames, 1), 10*time.Second)
		require.NoError(t, err, "redis, step %d: %s", i, what)
		if st.shape != nil {
			t.Run("", func(t *testing.T) {
				st.shape(t, got)
				st.shape(t, want)
			})
			continue
		}
		got = helloID.ReplaceAllString(got, "$$2\r\nid\r\n:ID\r\n")
		want = helloID.ReplaceAllString(want, "$$2\r\nid\r\n:ID\r\n")
		if st.mask != nil {
			got, want = st.mask(t, got), st.mask(t, want)
		}
		assert.Equal(t, want, got, "step %d: %s", i, what)
	}
}

// intBetween checks an integer reply in [lo, hi].
func intBetween(lo, hi int64) func(t *testing.T, reply string) {
	return func(t *testing.T, reply string) {
		require.True(t, strings.HasPrefix(reply, ":") && strings.HasSuffix(reply, "\r\n"), "reply %q", reply)
		n, err := strconv.ParseInt(reply[1:len(reply)-2], 10, 64)
		require.NoError(t, err)
		require.True(t, lo <= n && n <= hi, "%d not in [%d, %d]", n, lo, hi)
	}
}

var timeReply = regexp.MustCompile(`^\*2\r\n\$[0-9]+\r\n[0-9]{10}\r\n\$[0-9]+\r\n[0-9]{1,6}\r\n$`)

func timeShape(t *testing.T, reply string) { require.Regexp(t, timeReply, reply) }

// infoShape checks an INFO server reply: a bulk string (RESP2) or a txt
// verbatim string (RESP3) of CRLF-terminated lines with the fields clients
// read.
func infoShape(resp3 bool) func(t *testing.T, reply string) {
	return func(t *testing.T, reply string) {
		var text string
		if resp3 {
			require.Regexp(t, `^=[0-9]+\r\ntxt:`, reply)
			text = reply[strings.Index(reply, "txt:")+4 : len(reply)-2]
		} else {
			require.Regexp(t, `^\$[0-9]+\r\n`, reply)
			text = reply[strings.Index(reply, "\r\n")+2 : len(reply)-2]
		}
		require.True(t, strings.HasPrefix(text, "# Server\r\nredis_version:7.0.15\r\n"), "info %q", text)
		require.True(t, strings.HasSuffix(text, "\r\n"))
		require.NotContains(t, strings.ReplaceAll(text, "\r\n", ""), "\n")
		for _, re := range []string{
			`\r\nrun_id:[0-9a-f]{40}\r\n`,
			`\r\ntcp_port:[0-9]+\r\n`,
			`\r\nuptime_in_seconds:[0-9]+\r\n`,
			`\r\nuptime_in_days:0\r\n`,
			`\r\nredis_mode:standalone\r\n`,
		} {
			require.Regexp(t, re, text)
		}
	}
}

func clientIDShape(t *testing.T, reply string) { require.Regexp(t, `^:[0-9]+\r\n$`, reply) }

// diffScript covers every supported command on a server without password.
func diffScript() []step {
	del, ext := scripts.ReleaseQuiet.Source, scripts.Extend.Source
	lockM, relM, extM := scripts.LockMulti.Source, scripts.ReleaseMultiQuiet.Source, scripts.ExtendMulti.Source
	batch := scripts.ExtendBatch.Source
	delSHA, extSHA := sha1Hex([]byte(del)), sha1Hex([]byte(ext))
	return []step{
		// connection
		cmd("PING"),
		cmd("ping", "hello world"),
		cmd("PING", "a", "b"),
		{raw: "PING\r\n"},
		cmd("ECHO", "x\r\ny"),
		cmd("ECHO"),
		cmd("FOO", "a", "b"),
		cmd("foo"),
		cmd("GET"),
		cmd("AUTH", "x"),
		cmd("AUTH", "default", "x"),
		cmd("AUTH", "bob", "x"),
		cmd("AUTH", "a", "b", "c"),
		cmd("SELECT", "16"),
		cmd("SELECT", "-1"),
		cmd("SELECT", "x"),
		cmd("SELECT", "1"),
		cmd("SET", "dbkey", "in-db-1"),
		cmd("SELECT", "0"),
		cmd("GET", "dbkey"),
		cmd("SELECT", "1"),
		cmd("DEL", "dbkey"),
		cmd("SELECT", "0"),
		cmd("CLIENT"),
		cmd("CLIENT", "SETNAME"),
		cmd("CLIENT", "FOO", "x"),
		cmd("client", "setinfo", "lib-name", "volley"),
		cmd("CLIENT", "SETNAME", "a b"),
		cmd("CLIENT", "SETNAME", "volley"),
		cmd("client", "getname"),
		cmd("CLIENT", "SETNAME", ""),
		cmd("CLIENT", "GETNAME"),
		cmd("CLIENT", "GETNAME", "x"),
		shaped(clientIDShape, "CLIENT", "ID"),
		shaped(timeShape, "TIME"),
		cmd("TIME", "x"),
		shaped(infoShape(false), "INFO", "server"),
		cmd("INFO", "nosuchsection"),

		// strings and expiry
		cmd("GET", "k"),
		cmd("SET", "k"),
		cmd("SET", "k", "v", "NX", "XX"),
		cmd("SET", "k", "v", "XX", "NX"),
		cmd("SET", "k", "v", "EX"),
		cmd("SET", "k", "v", "EX", "0"),
		cmd("SET", "k", "v", "PX", "-5"),
		cmd("SET", "k", "v", "PX", "abc"),
		cmd("SET", "k", "v", "EX", "007"),
		cmd("SET", "k", "v", "EX", "+5"),
		cmd("SET", "k", "v", "EX", "10", "PX", "10"),
		cmd("SET", "k", "v", "KEEPTTL", "EX", "10"),
		cmd("SET", "k", "v", "PXAT", "10", "KEEPTTL"),
		cmd("SET", "k", "v", "FOO"),
		cmd("SET", "k", "v", "EX", "9223372036854775807"),
		cmd("SET", "k", "v", "EX", "9223372036854775"),
		cmd("SET", "k", "v", "PX", "9223372036854775807"),
		cmd("SET", "k", "v", "PX", "99999999999999999999"),
		cmd("SET", "k", "v", "XX"),
		cmd("SET", "k", "v", "GET"),
		cmd("SET", "k", "v2", "NX"),
		cmd("SET", "k", "v2", "NX", "GET"),
		cmd("SET", "k", "v3", "get", "xx", "px", "100000"),
		shaped(intBetween(90000, 100000), "PTTL", "k"),
		shaped(intBetween(90, 100), "TTL", "k"),
		cmd("SET", "k", "v4", "KEEPTTL"),
		shaped(intBetween(90000, 100000), "PTTL", "k"),
		cmd("SET", "k", "v5", "ex", "10", "ex", "20", "nx", "nx"),
		cmd("SET", "k", "v5"),
		cmd("PTTL", "k"),
		cmd("TTL", "k"),
		cmd("GET", "k"),
		cmd("PTTL", "missing"),
		cmd("TTL", "missing"),
		cmd("SET", "k", "v", "PXAT", "1"),
		cmd("EXISTS", "k"),
		cmd("SET", "k", "v", "EXAT", "9223372036854775"),
		cmd("TTL", "k"),
		cmd("SET", "k", "v"),
		cmd("PEXPIRE", "k"),
		cmd("PEXPIRE", "k", "abc"),
		cmd("PEXPIRE", "k", "abc", "FOO"),
		cmd("PEXPIRE", "k", "100", "NX", "XX"),
		cmd("PEXPIRE", "k", "100", "GT", "LT"),
		cmd("PEXPIRE", "k", "100", "nx", "gt"),
		cmd("PEXPIRE", "k", "9223372036854775807"),
		cmd("PEXPIRE", "missing", "100"),
		cmd("PEXPIRE", "k", "100000", "GT"),
		cmd("PEXPIRE", "k", "100000", "XX"),
		cmd("PEXPIRE", "k", "100000", "LT"),
		cmd("PEXPIRE", "k", "100000", "NX"),
		cmd("PEXPIRE", "k", "200000", "GT"),
		cmd("PEXPIRE", "k", "300000", "LT"),
		cmd("PEXPIRE", "k", "100000", "lt"),
		cmd("PEXPIRE", "k", "100000", "NX"),
		shaped(intBetween(90, 100), "TTL", "k"),
		cmd("PEXPIRE", "k", "0"),
		cmd("EXISTS", "k"),
		cmd("SET", "a", "1"),
		cmd("SET", "b", "2"),
		cmd("EXISTS", "a", "a", "b", "missing"),
		cmd("DEL", "a", "b", "missing"),
		cmd("DEL"),
		cmd("EXISTS"),

		// the lock scripts
		cmd("SET", "lock", "tok", "NX", "PX", "30000"),
		cmd("SET", "lock", "other", "NX", "PX", "30000"),
		cmd("EVAL", del, "1", "lock", "other"),
		cmd("EVAL", ext, "1", "lock", "other", "60000"),
		cmd("EVAL", ext, "1", "lock", "tok", "60000"),
		shaped(intBetween(50000, 60000), "PTTL", "lock"),
		cmd("EVAL", ext, "1", "lock", "tok", "abc"),
		cmd("EVAL", ext, "1", "lock", "tok"),
		cmd("EVAL", ext, "0"),
		cmd("EVAL", ext, "1", "lock", "tok", "9223372036854775807"),
		cmd("EVAL", ext, "5", "lock", "tok"),
		cmd("EVAL", ext, "-1", "lock", "tok"),
		cmd("EVAL", ext, "x", "lock", "tok"),
		cmd("EVAL", ext),
		cmd("EVAL", del, "1", "missing", "tok"),
		cmd("EVAL", del, "1", "lock"),
		cmd("EVAL", del, "1", "lock", "tok"),
		cmd("EXISTS", "lock"),
		cmd("SCRIPT", "EXISTS", delSHA, extSHA, "nope"),
		cmd("SCRIPT", "FLUSH"),
		cmd("SCRIPT", "EXISTS", delSHA, extSHA),
		cmd("EVALSHA", delSHA, "1", "lock", "tok"),
		cmd("SCRIPT", "LOAD", del),
		cmd("SCRIPT", "LOAD", ext),
		cmd("SCRIPT", "EXISTS", strings.ToUpper(delSHA), extSHA),
		cmd("SET", "lock", "tok", "NX", "PX", "30000"),
		cmd("EVALSHA", extSHA, "1", "lock", "tok", "0"),
		cmd("EXISTS", "lock"),
		cmd("SET", "lock", "tok", "NX", "PX", "30000"),
		cmd("EVALSHA", strings.ToUpper(delSHA), "1", "lock", "other"),
		cmd("EVALSHA", delSHA, "1", "lock", "tok"),
		cmd("EVALSHA", "abc", "1", "lock", "tok"),
		cmd("EVALSHA", "abc", "x", "lock"),
		cmd("EVALSHA", strings.Repeat("0", 40), "1", "lock", "tok"),
		cmd("EVALSHA", strings.Repeat("0", 40), "x", "lock"),
		cmd("EVALSHA", strings.Repeat("0", 40), "3", "lock"),
		cmd("SCRIPT"),
		cmd("SCRIPT", "FOO"),
		cmd("SCRIPT", "LOAD"),
		cmd("SCRIPT", "EXISTS"),
		cmd("SCRIPT", "FLUSH", "x"),
		cmd("SCRIPT", "FLUSH", "ASYNC"),
		cmd("SCRIPT", "FLUSH", "sync", "x"),
		cmd("EVALSHA", extSHA, "1", "lock", "tok", "1000"),

		// the multi-key lock scripts
		cmd("EVAL", lockM, "3", "m1", "m2", "m3", "tok", "30000"),
		cmd("GET", "m1"),
		cmd("GET", "m3"),
		shaped(intBetween(29000, 30000), "PTTL", "m3"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", lockM, "2", "m3", "m4", "other", "30000"),
		cmd("EXISTS", "m4"),
		cmd("EVAL", extM, "3", "m1", "m2", "m3", "tok", "60000"),
		shaped(intBetween(59000, 60000), "PTTL", "m2"),
		cmd("EVAL", extM, "3", "m1", "m2", "m3", "other", "90000"),
		cmd("EVAL", extM, "2", "m1", "m4", "tok", "90000"),
		shaped(intBetween(59000, 60000), "PTTL", "m1"),
		cmd("EVAL", extM, "2", "m1", "m2", "tok", "abc"),
		cmd("EVAL", extM, "2", "m1", "m2", "tok"),
		cmd("EVAL", extM, "2", "m1", "m2"),
		cmd("EVAL", extM, "0"),
		cmd("EVAL", relM, "2", "m1", "m2", "other"),
		cmd("EVAL", relM, "2", "m1", "m4", "tok"),
		cmd("EXISTS", "m1", "m2", "m3"),
		cmd("EVAL", relM, "2", "m2", "m3", "tok"),
		cmd("EXISTS", "m1", "m2", "m3"),
		cmd("EVAL", relM, "1", "m2"),
		cmd("EVAL", relM, "0"),
		cmd("EVAL", lockM, "2", "m5", "m6", "tok", "abc"),
		cmd("EVAL", lockM, "2", "m5", "m6", "tok", "0"),
		cmd("EVAL", lockM, "2", "m5", "m6", "tok"),
		cmd("EVAL", lockM, "0"),
		cmd("EXISTS", "m5", "m6"),

		// the batch extension of Do's renewer
		cmd("SET", "b1", "t1", "PX", "10000"),
		cmd("SET", "b2", "t2", "PX", "10000"),
		cmd("SET", "b3", "t2", "PX", "10000"),
		cmd("EVAL", batch, "4", "b1", "b2", "b3", "b9", "3", "t1", "60000", "1", "t2", "70000", "2", "t9", "80000", "1"),
		shaped(intBetween(59000, 60000), "PTTL", "b1"),
		shaped(intBetween(69000, 70000), "PTTL", "b3"),
		cmd("EVAL", batch, "2", "b1", "b2", "2", "t1", "5000", "1", "wrong", "5000", "1"),
		shaped(intBetween(4000, 5000), "PTTL", "b1"),
		shaped(intBetween(69000, 70000), "PTTL", "b2"),
		cmd("EVAL", batch, "0", "0"),
		cmd("EVAL", batch, "1", "b1", "1", "t1", "abc", "1"),
		cmd("SCRIPT", "LOAD", batch),
		cmd("EVALSHA", sha1Hex([]byte(batch)), "1", "b1", "1", "t1", "0", "1"),
		cmd("EXISTS", "b1"),
		cmd("SCRIPT", "LOAD", lockM),
		cmd("EVALSHA", sha1Hex([]byte(lockM)), "2", "m5", "m6", "tok", "30000"),
		cmd("EVALSHA", sha1Hex([]byte(extM)), "2", "m5", "m6", "tok", "30000"),
		cmd("SCRIPT", "LOAD", extM),
		cmd("EVALSHA", sha1Hex([]byte(extM)), "2", "m5", "m6", "tok", "0"),
		cmd("EXISTS", "m5", "m6"),

		// the batch extension of Do's renewer
		cmd("SET", "b1", "t1", "PX", "10000"),
		cmd("SET", "b2", "t2", "PX", "10000"),
		cmd("SET", "b3", "t2", "PX", "10000"),
		cmd("EVAL", batch, "4", "b1", "b2", "b3", "b9", "3", "t1", "60000", "1", "t2", "70000", "2", "t9", "80000", "1"),
		shaped(intBetween(59000, 60000), "PTTL", "b1"),
		shaped(intBetween(69000, 70000), "PTTL", "b3"),
		cmd("EVAL", batch, "2", "b1", "b2", "2", "t1", "5000", "1", "wrong", "5000", "1"),
		shaped(intBetween(4000, 5000), "PTTL", "b1"),
		shaped(intBetween(69000, 70000), "PTTL", "b2"),
		cmd("EVAL", batch, "0", "0"),
		cmd("EVAL", batch, "1", "b1", "1", "t1", "abc", "1"),
		cmd("SCRIPT", "LOAD", batch),
		cmd("EVALSHA", sha1Hex([]byte(batch)), "1", "b1", "1", "t1", "0", "1"),
		cmd("EXISTS", "b1"),

		// HELLO and RESP3
		cmd("HELLO", "4"),
		cmd("HELLO", "x"),
		cmd("HELLO", "3", "FOO"),
		cmd("HELLO", "3", "AUTH", "default"),
		cmd("HELLO", "3", "SETNAME", "a b"),
		cmd("HELLO", "3", "SETNAME", "resp3"),
		cmd("CLIENT", "GETNAME"),
		cmd("GET", "missing"),
		cmd("SET", "r3", "v", "NX"),
		cmd("SET", "r3", "v", "NX"),
		cmd("SET", "r3-missing", "v", "XX", "GET"),
		cmd("GET", "r3"),
		cmd("CLIENT", "SETNAME", ""),
		cmd("CLIENT", "GETNAME"),
		cmd("EXISTS", "r3"),
		cmd("ECHO", "resp3"),
		cmd("PING"),
		shaped(timeShape, "TIME"),
		shaped(infoShape(true), "INFO", "server"),
		cmd("INFO", "nosuchsection"),
		cmd("EVAL", del, "1", "r3", "v"),
		cmd("FOO"),
		cmd("HELLO"),
		cmd("HELLO", "2"),
		cmd("GET", "missing"),
		cmd("QUIT", "x"),
	}
}

func TestDifferentialAgainstRedis(t *testing.T) {
	real := redistest.Start(t, redistest.Options{})
	fake := StartT(t, Options{})
	fc, rc := dial(t, fake.Addr()), dial(t, real.Addr())
	runDifferential(t, fc, rc, diffScript())
	// QUIT closed both connections after its reply.
	_, ferr := fc.readAll()
	_, rerr := rc.readAll()
	require.Error(t, ferr)
	require.Error(t, rerr)
}

func TestDifferentialWithPassword(t *testing.T) {
	real := redistest.Start(t, redistest.Options{Args: []string{
		"--requirepass", "pw", "--user", "bob", "on", ">secret", "~*", "&*", "+@all",
	}})
	fake := StartT(t, Options{Password: "pw", Users: map[string]string{"bob": "secret"}})
	fc, rc := dial(t, fake.Addr()), dial(t, real.Addr())
	runDifferential(t, fc, rc, []step{
		cmd("GET", "k"),
		cmd("GET"),
		cmd("FOO", "bar"),
		cmd("PING"),
		cmd("CLIENT", "ID"),
		cmd("SCRIPT", "FLUSH"),
		cmd("HELLO"),
		cmd("HELLO", "3"),
		cmd("HELLO", "3", "SETNAME", "n1"),
		cmd("HELLO", "3", "AUTH", "default", "bad"),
		cmd("AUTH", "bad"),
		cmd("AUTH", "default", "bad"),
		cmd("AUTH", "bob", "bad"),
		cmd("AUTH", "nobody", "secret"),
		cmd("AUTH", "a", "b", "c"),
		cmd("AUTH"),
		cmd("GET", "k"),
		cmd("AUTH", "bob", "secret"),
		cmd("GET", "k"),
		cmd("AUTH", "bob", "bad"), // a failed AUTH keeps the earlier login
		cmd("GET", "k"),
		cmd("AUTH", "pw"),
		cmd("HELLO", "3", "AUTH", "default", "pw", "SETNAME", "zz"),
		cmd("CLIENT", "GETNAME"),
		cmd("HELLO", "2", "AUTH", "bob", "secret"),
		cmd("GET", "k"),
	})
	// A fresh connection authenticates and switches to RESP3 at once.
	fc, rc = dial(t, fake.Addr()), dial(t, real.Addr())
	runDifferential(t, fc, rc, []step{
		cmd("HELLO", "3", "AUTH", "default", "pw"),
		cmd("GET", "k"),
		cmd("QUIT"),
	})
}

// TestDifferentialProtocolErrors checks the replies to malformed input,
// each on a fresh connection, which both servers then close.
func TestDifferentialProtocolErrors(t *testing.T) {
	real := redistest.Start(t, redistest.Options{})
	fake := StartT(t, Options{})
	for _, raw := range []string{
		"*abc\r\n",
		"*1\r\nx\r\n",
		"*1\r\n$x\r\n",
	} {
		fc, rc := dial(t, fake.Addr()), dial(t, real.Addr())
		fc.write([]byte(raw))
		rc.write([]byte(raw))
		got, _ := fc.readAll()
		want, _ := rc.readAll()
		assert.Equal(t, want, got, "input %q", raw)
	}
}

// holderShape checks the reply of a lock script that found its key taken:
// the holder's id, from its token, and a PTTL in [lo, hi].
func holderShape(token string, lo, hi int64) func(t *testing.T, reply string) {
	return idShape(holderID([]byte(token)), lo, hi)
}

// idShape checks the reply of a lock script that must wait: the id of the
// holder (or waitHolder) and a number of milliseconds in [lo, hi].
func idShape(id string, lo, hi int64) func(t *testing.T, reply string) {
	return func(t *testing.T, reply string) {
		head := "*2\r\n" + bulk(id)
		require.True(t, strings.HasPrefix(reply, head), "reply %q, want it to start %q", reply, head)
		intBetween(lo, hi)(t, reply[len(head):])
	}
}

// unsubscribeAllShape checks the reply to UNSUBSCRIBE or SUNSUBSCRIBE (kind
// names it in lower case) without arguments from a connection subscribed
// to channels in that namespace: one confirmation per channel, counting
// down to 0, in an order that Redis takes from its hash table.
func unsubscribeAllShape(resp3 bool, kind string, channels ...string) func(t *testing.T, reply string) {
	return func(t *testing.T, reply string) {
		head := "*3\r\n"
		if resp3 {
			head = ">3\r\n"
		}
		br := bufio.NewReader(strings.NewReader(reply))
		var got []string
		for i := range channels {
			frame, err := readFrame(nil, br)
			require.NoError(t, err)
			prefix := head + bulk(kind)
			require.True(t, strings.HasPrefix(string(frame), prefix), "frame %q", frame)
			rest := string(frame[len(prefix):])
			count := ":" + strconv.Itoa(len(channels)-1-i) + "\r\n"
			require.True(t, strings.HasSuffix(rest, count), "frame %q, want count %q", frame, count)
			got = append(got, rest[:len(rest)-len(count)])
		}
		_, err := br.ReadByte()
		require.ErrorIs(t, err, io.EOF, "more than %d frames", len(channels))
		want := make([]string, len(channels))
		for i, ch := range channels {
			want[i] = bulk(ch)
		}
		require.ElementsMatch(t, want, got)
	}
}

// diffPubSubScript covers pub/sub, channels and shard channels, and the
// scripts of waiting over three connections: 0 sends commands and
// publishes (RESP2), 1 subscribes in RESP2 and 2 in RESP3. Each part ends
// with a PING on the subscribers, so a message one server sent and the
// other did not shows as a difference. Subscribers of the released
// channels subscribe in both namespaces, so that a release's message
// published on the wrong one shows too.
func diffPubSubScript() []step {
	rel, relM, quiet := scripts.Release.Source, scripts.ReleaseMulti.Source, scripts.ReleaseQuiet.Source
	wake := scripts.Wake.Source
	wait, lockM, leave := scripts.LockWait.Source, scripts.LockMulti.Source, scripts.Leave.Source
	relSHA, relMSHA, waitSHA := sha1Hex([]byte(rel)), sha1Hex([]byte(relM)), sha1Hex([]byte(wait))
	return []step{
		// RESP2: confirmations, PING, and every other command refused
		on(1, 1, "UNSUBSCRIBE"),
		on(1, 2, "UNSUBSCRIBE", "nope", ""),
		on(1, 1, "SUBSCRIBE"),
		on(1, 1, "PUBLISH", "a"),
		on(1, 1, "PUBLISH", "a", "b", "c"),
		on(1, 1, "PUBLISH", "a", "nobody listens"),
		on(1, 3, "SUBSCRIBE", "a", "b", "a"),
		on(1, 1, "PING"),
		on(1, 1, "PING", "hi"),
		on(1, 1, "PING", ""),
		on(1, 1, "PING", "a", "b"),
		on(1, 1, "GET", "k"),
		on(1, 1, "get"),
		on(1, 1, "FOO", "x"),
		on(1, 1, "CLIENT", "ID"),
		on(1, 1, "CLIENT", "FOO"),
		on(1, 1, "CLIENT"),
		on(1, 1, "HELLO", "3"),
		on(1, 1, "AUTH", "x"),
		on(1, 1, "SELECT", "1"),
		on(1, 1, "ECHO", "x"),
		on(1, 1, "PUBLISH", "a", "x"),
		on(1, 1, "EVAL", rel, "1", "k", "v", holderID([]byte("v"))),
		on(1, 1, "SCRIPT", "LOAD", rel),
		{raw: "PING\r\n", on: 1},
		{raw: "GET k\r\n", on: 1},

		// RESP2: messages
		cmd("PUBLISH", "a", "hello"),
		recv(1, 1),
		cmd("PUBLISH", "b", ""),
		recv(1, 1),
		cmd("PUBLISH", "a", "x\r\ny\x00z"),
		recv(1, 1),
		cmd("PUBLISH", "c", "nobody"),
		on(1, 1, "SUBSCRIBE", ""),
		cmd("PUBLISH", "", "empty channel"),
		recv(1, 1),
		on(1, 3, "UNSUBSCRIBE", "b", "zz", ""),
		cmd("PUBLISH", "b", "gone"),
		cmd("PUBLISH", "a", "still"),
		recv(1, 1),
		on(1, 1, "UNSUBSCRIBE"),
		on(1, 1, "UNSUBSCRIBE"),
		on(1, 1, "PING"),
		on(1, 1, "GET", "k"),
		on(1, 4, "SUBSCRIBE", "x", "y", "z", "a"),
		{args: []string{"UNSUBSCRIBE"}, on: 1, frames: 4, shape: unsubscribeAllShape(false, "unsubscribe", "x", "y", "z", "a")},
		on(1, 1, "PING"),

		// RESP2: shard channels, counted apart from channels
		on(1, 1, "SUNSUBSCRIBE"),
		on(1, 2, "SUNSUBSCRIBE", "nope", ""),
		on(1, 1, "SSUBSCRIBE"),
		on(1, 1, "SPUBLISH", "a"),
		on(1, 1, "SPUBLISH", "a", "b", "c"),
		on(1, 1, "SPUBLISH", "a", "nobody listens"),
		on(1, 3, "SSUBSCRIBE", "a", "b", "a"),
		on(1, 1, "PING"),
		on(1, 1, "PING", "hi"),
		on(1, 1, "GET", "k"),
		on(1, 1, "SPUBLISH", "a", "x"),
		on(1, 1, "PUBLISH", "a", "x"),
		on(1, 1, "SUBSCRIBE", "a"),
		on(1, 1, "SUNSUBSCRIBE", "zz"),
		on(1, 1, "UNSUBSCRIBE", "zz"),
		cmd("SPUBLISH", "a", "shard"),
		recv(1, 1),
		cmd("PUBLISH", "a", "global"),
		recv(1, 1),
		cmd("PUBLISH", "b", "to no channel"),
		cmd("SPUBLISH", "b", "x\r\ny\x00z"),
		recv(1, 1),
		cmd("SPUBLISH", "c", "nobody"),
		on(1, 1, "UNSUBSCRIBE"),
		on(1, 1, "UNSUBSCRIBE"),
		on(1, 1, "PING"), // still subscribed to shard channels
		on(1, 1, "GET", "k"),
		cmd("PUBLISH", "a", "gone"),
		cmd("SPUBLISH", "a", "kept"),
		recv(1, 1),
		on(1, 1, "SSUBSCRIBE", ""),
		cmd("SPUBLISH", "", "empty channel"),
		recv(1, 1),
		on(1, 3, "SUNSUBSCRIBE", "b", "zz", ""),
		cmd("SPUBLISH", "b", "gone"),
		on(1, 1, "SUNSUBSCRIBE"),
		on(1, 1, "SUNSUBSCRIBE"),
		on(1, 1, "PING"),
		on(1, 1, "GET", "k"),
		on(1, 4, "SSUBSCRIBE", "x", "y", "z", "a"),
		on(1, 1, "UNSUBSCRIBE"),
		{args: []string{"SUNSUBSCRIBE"}, on: 1, frames: 4, shape: unsubscribeAllShape(false, "sunsubscribe", "x", "y", "z", "a")},
		on(1, 1, "PING"),

		// RESP3: push frames, and commands allowed
		on(2, 1, "HELLO", "3"),
		on(2, 1, "UNSUBSCRIBE"),
		on(2, 1, "UNSUBSCRIBE", "nope"),
		on(2, 2, "SUBSCRIBE", "a", "volley:released:lock"),
		on(2, 1, "SUNSUBSCRIBE"),
		on(2, 1, "SUNSUBSCRIBE", "nope"),
		on(2, 2, "SSUBSCRIBE", "a", "volley:released:lock"),
		on(2, 1, "PING"),
		on(2, 1, "PING", "x"),
		on(2, 1, "GET", "missing"),
		on(2, 1, "CLIENT", "GETNAME"),
		on(2, 1, "SPUBLISH", "zz", "x"),
		on(1, 1, "SUBSCRIBE", "a"),
		cmd("PUBLISH", "a", "both"),
		recv(1, 1),
		recv(2, 1),
		on(2, 2, "PUBLISH", "a", "self"), // the message to itself comes first
		recv(1, 1),
		cmd("PUBLISH", "volley:released:lock", "one"),
		recv(2, 1),
		on(1, 1, "SSUBSCRIBE", "a"),
		cmd("SPUBLISH", "a", "both"),
		recv(1, 1),
		recv(2, 1),
		on(2, 2, "SPUBLISH", "a", "self"),
		recv(1, 1),
		cmd("SPUBLISH", "volley:released:lock", "one"),
		recv(2, 1),
		on(1, 1, "PING"),
		on(2, 1, "PING"),

		// scripts.Release and what the subscribers receive: nothing while
		// nobody waits (no mark of a waiting Client), the release's id
		// once the mark is there
		cmd("SET", "lock", "tok", "PX", "30000"),
		cmd("EVAL", rel, "1", "lock", "other", holderID([]byte("other"))),
		cmd("EVAL", rel, "1", "lock"),
		cmd("EVAL", rel, "0"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok"))),
		on(2, 1, "PING"), // a message would come before the answer
		cmd("SET", "lock", "tok", "PX", "30000"),
		cmd("SET", "lock:volley:listen", "1", "PX", "600000"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok"))),
		recv(2, 1),
		cmd("EXISTS", "lock"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok"))),
		cmd("EVAL", rel, "1", "missing", "tok", holderID([]byte("tok"))),
		on(2, 1, "SET", "lock", "tok2"),
		on(2, 2, "EVAL", rel, "1", "lock", "tok2", holderID([]byte("tok2"))), // from a subscriber
		cmd("SCRIPT", "EXISTS", relSHA),
		cmd("SET", "lock", "", "PX", "30000"),
		cmd("EVALSHA", relSHA, "1", "lock", "", holderID([]byte(""))),
		recv(2, 1),
		on(2, 1, "PING"),
		on(1, 1, "PING"),

		// the waiters: LockWait enrolls a Client, Release names the one
		// that waited longest, takes it off and tells it on its channel;
		// for NamedMs the other Clients' waiting attempts leave the free
		// key to it
		on(2, 2, "SSUBSCRIBE", "volley:released:lock:early", "volley:released:lock:first"),
		cmd("SET", "lock", "tok", "PX", "30000"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "1:first"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "2:second"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "1:first"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "0:early"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "no colon"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", ":noscore"),
		cmd("ZCARD", "lock:volley:waiters"),
		shaped(intBetween(59000, 60000), "PTTL", "lock:volley:waiters"),
		cmd("ZSCORE", "lock:volley:waiters", "second"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok"))),
		recv(2, 1),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("GET", "lock:volley:named"),
		shaped(intBetween(1, 200), "PTTL", "lock:volley:named"),
		shaped(idShape(holderID([]byte("early")), 1, 200), "EVAL", wait, "1", "lock", "x", "30000", "2:second"),
		cmd("EXISTS", "lock"),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("EVAL", wait, "1", "lock", "x", "30000"),
		cmd("DEL", "lock"),
		cmd("EVAL", wait, "1", "lock", "x", "30000", "0:early"),
		cmd("EXISTS", "lock:volley:named"),
		cmd("SET", "lock", "tok", "PX", "30000"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok"))),
		recv(2, 1),
		cmd("GET", "lock:volley:named"),
		cmd("SET", "lock", "tok2", "PX", "30000"),
		shaped(holderShape("tok2", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "1:first"),
		cmd("EXISTS", "lock:volley:named"),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("SET", "lock", "tok", "PX", "30000"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok"))),
		recv(2, 1),
		cmd("EXISTS", "lock:volley:waiters"),
		cmd("DEL", "lock:volley:named"),
		on(2, 2, "SUNSUBSCRIBE", "volley:released:lock:early", "volley:released:lock:first"),
		cmd("SET", "lock:volley:waiters", "x"),
		cmd("SET", "lock", "tok", "PX", "30000"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "3:third"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok"))),
		recv(2, 1),
		cmd("EVAL", wait, "1", "lock", "x", "30000", "3:third"),
		cmd("GET", "lock:volley:waiters"),
		cmd("DEL", "lock:volley:waiters", "lock"),
		cmd("SET", "lock", "tok", "PX", "30000"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "4:fourth"),
		cmd("DEL", "lock"),
		cmd("EVAL", wait, "1", "lock", "x", "30000", "4:fourth"),
		cmd("EXISTS", "lock:volley:waiters"),
		cmd("DEL", "lock"),

		// Leave: a Client stays while the key holds the value whose
		// release woke it, and leaves otherwise
		cmd("SET", "lock", "tok", "PX", "30000"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "5:fifth"),
		cmd("EVAL", leave, "1", "lock", "fifth", holderID([]byte("tok"))),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("EVAL", leave, "1", "lock", "fifth", holderID([]byte("other"))),
		cmd("EVAL", leave, "1", "lock", "fifth", ""),
		cmd("EXISTS", "lock:volley:waiters"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "5:fifth"),
		cmd("DEL", "lock"),
		cmd("EVAL", leave, "1", "lock", "fifth", holderID([]byte("tok"))),
		cmd("EXISTS", "lock:volley:waiters"),
		cmd("HSET", "lock", "f", "v"),
		cmd("EVAL", leave, "1", "lock", "fifth", holderID([]byte("tok"))),
		cmd("SET", "lock:volley:waiters", "x"),
		cmd("EVAL", leave, "1", "lock", "fifth", ""),
		cmd("DEL", "lock:volley:waiters", "lock"),

		// turns: Release with a cutoff answers 1 with no waiter, 3 (waking
		// nobody) while the longest waiter joined after the cutoff, 2 when
		// it woke one; Wake wakes a waiter of a free key only
		on(2, 2, "SSUBSCRIBE", "volley:released:lock:a", "volley:released:lock:b"),
		cmd("SET", "lock", "tok", "PX", "30000"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok")), "100"),
		recv(2, 1),
		cmd("SET", "lock", "tok", "PX", "30000"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "50:a"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "60:b"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok")), "49"),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("EXISTS", "lock", "lock:volley:named"),
		cmd("EVAL", wait, "1", "lock", "y", "30000", "60:b"),
		cmd("EVAL", rel, "1", "lock", "y", holderID([]byte("y")), "50"),
		recv(2, 1),
		cmd("GET", "lock:volley:named"),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("EVAL", wait, "1", "lock", "x", "30000", "50:a"),
		cmd("EVAL", rel, "1", "lock", "x", holderID([]byte("x")), "nan"), // no waiter: the cutoff is not read
		recv(2, 1),
		cmd("EVAL", rel, "1", "lock", "x", holderID([]byte("x")), "x"),
		cmd("EXISTS", "lock"),
		cmd("EVAL", wake, "1", "lock", "tok"),
		recv(2, 1),
		cmd("SET", "lock", "tok", "PX", "30000"),
		cmd("EVAL", wake, "1", "lock", "tok"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "70:a"),
		cmd("DEL", "lock"),
		cmd("EVAL", wake, "1", "lock", "tok"),
		recv(2, 1),
		cmd("GET", "lock:volley:named"),
		cmd("EXISTS", "lock:volley:waiters"),
		cmd("DEL", "lock:volley:named"),
		cmd("EVAL", wake, "1", "lock", "tok"),
		recv(2, 1),

		// the waiters in step: a release with a cutoff changes nothing
		// where another's value holds the key or none does; the quiet
		// release of a waiting attempt puts its Client back
		cmd("DEL", "lock", "lock:volley:named"),
		cmd("SET", "lock", "other", "PX", "30000"),
		shaped(holderShape("other", 29000, 30000), "EVAL", wait, "1", "lock", "x", "30000", "80:a"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok")), "100"),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("DEL", "lock"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok")), "79"),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok")), "100"),
		cmd("EVAL", rel, "1", "lock", "tok", holderID([]byte("tok"))),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("DEL", "lock:volley:waiters"),
		cmd("SET", "lock", "tok", "PX", "30000"),
		cmd("EVAL", quiet, "1", "lock", "tok", "30000", "90:b"),
		cmd("ZSCORE", "lock:volley:waiters", "b"),
		shaped(intBetween(29000, 30000), "PTTL", "lock:volley:waiters"),
		cmd("EVAL", quiet, "1", "lock", "tok", "30000", "91:c"),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("SET", "lock", "tok", "PX", "30000"),
		cmd("EVAL", quiet, "1", "lock", "tok", "30000", "95:b"),
		cmd("ZSCORE", "lock:volley:waiters", "b"),
		cmd("SET", "lock", "tok", "PX", "30000"),
		cmd("EVAL", quiet, "1", "lock", "tok", "30000", "no score"),
		cmd("ZCARD", "lock:volley:waiters"),
		cmd("EVAL", quiet, "1", "lock", "tok", "30000"),
		cmd("DEL", "lock:volley:waiters"),
		on(2, 2, "SUNSUBSCRIBE", "volley:released:lock:a", "volley:released:lock:b"),
		on(2, 1, "PING"),
		on(1, 1, "PING"),

		// scripts.ReleaseMulti
		on(1, 2, "SUBSCRIBE", "volley:released:m2", "volley:released:m3"),
		on(1, 2, "SSUBSCRIBE", "volley:released:m2", "volley:released:m3"),
		cmd("SET", "m1", "tok", "PX", "30000"),
		cmd("SET", "m2", "tok", "PX", "30000"),
		cmd("SET", "m3", "other", "PX", "30000"),
		cmd("EVAL", relM, "4", "m1", "m2", "m3", "m4", "tok"),
		recv(1, 1), // m2 only: m3 held another token
		cmd("EXISTS", "m1", "m2", "m3"),
		cmd("EVAL", relM, "2", "m3", "m3", "other"),
		recv(1, 1),
		cmd("EVAL", relM, "0"),
		cmd("EVAL", relM, "1", "m1"),
		cmd("SCRIPT", "LOAD", relM),
		cmd("SET", "m2", "tok", "PX", "30000"),
		cmd("EVALSHA", relMSHA, "1", "m2", "tok"),
		recv(1, 1),
		on(1, 1, "PING"),
		on(2, 1, "PING"),

		// scripts.LockWait
		cmd("EVAL", wait, "0"),
		cmd("EVAL", wait, "1", "w"),
		cmd("EVAL", wait, "1", "w", "tok"),
		cmd("EVAL", wait, "1", "w", "tok", "abc"),
		cmd("EVAL", wait, "1", "w", "tok", "0"),
		cmd("EVAL", wait, "1", "w", "tok", "-1"),
		cmd("EVAL", wait, "1", "w", "tok", "9223372036854775807"),
		cmd("EXISTS", "w"),
		cmd("EVAL", wait, "1", "w", "tok", "30000"),
		shaped(intBetween(29000, 30000), "PTTL", "w"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", wait, "1", "w", "tok2", "30000"),
		cmd("SET", "w", "tok"),
		cmd("EVAL", wait, "1", "w", "other", "30000"),
		cmd("EVAL", wait, "2", "w", "ignored", "other", "30000"),
		cmd("SET", "w", ""),
		cmd("EVAL", wait, "1", "w", "other", "30000"),
		on(2, 1, "EVAL", wait, "1", "w", "other", "30000"), // RESP3: an array too
		cmd("SCRIPT", "LOAD", wait),
		cmd("DEL", "w"),
		cmd("EVALSHA", waitSHA, "1", "w", "tok", "20000"),
		shaped(holderShape("tok", 19000, 20000), "EVALSHA", waitSHA, "1", "w", "tok", "20000"),
		cmd("PEXPIRE", "w", "0"),
		cmd("EVALSHA", waitSHA, "1", "w", "tok", "20000"),

		// scripts.LockMulti reports the first key taken
		cmd("EVAL", lockM, "0"),
		cmd("EVAL", lockM, "2", "n1", "n2"),
		cmd("EVAL", lockM, "2", "n1", "n2", "tok"),
		cmd("EVAL", lockM, "2", "n1", "n2", "tok", "abc"),
		cmd("EVAL", lockM, "2", "n1", "n2", "tok", "30000"),
		shaped(holderShape("tok", 29000, 30000), "EVAL", lockM, "2", "n3", "n2", "other", "30000"),
		cmd("EXISTS", "n3"),
		cmd("SET", "n4", "v"),
		cmd("EVAL", lockM, "3", "n5", "n4", "n1", "other", "30000"),
		cmd("EVAL", relM, "2", "n1", "n2", "tok"),
		cmd("EVAL", lockM, "2", "n1", "n2", "other", "30000"),
		shaped(holderShape("other", 29000, 30000), "EVAL", lockM, "2", "n1", "n1", "x", "30000"),
		cmd("EVAL", lockM, "2", "n6", "n6", "x", "30000"),
		cmd("GET", "n6"),

		// RESP3 to RESP2 while subscribed: now in subscribed mode
		on(2, 1, "HELLO", "2"),
		on(2, 1, "GET", "k"),
		on(2, 1, "PING"),
		cmd("PUBLISH", "a", "resp2 now"),
		recv(1, 1),
		recv(2, 1),
		cmd("SPUBLISH", "a", "resp2 now"),
		recv(1, 1),
		recv(2, 1),
		on(2, 1, "HELLO", "3"),
		{args: []string{"UNSUBSCRIBE"}, on: 2, frames: 2, shape: unsubscribeAllShape(false, "unsubscribe", "a", "volley:released:lock")},
		on(2, 1, "HELLO", "3"), // shard channels left: still refused
		on(2, 1, "PING"),
		{args: []string{"SUNSUBSCRIBE"}, on: 2, frames: 2, shape: unsubscribeAllShape(false, "sunsubscribe", "a", "volley:released:lock")},
		on(2, 1, "HELLO", "3"),
		on(2, 2, "SUBSCRIBE", "p", "q"),
		{args: []string{"UNSUBSCRIBE"}, on: 2, frames: 2, shape: unsubscribeAllShape(true, "unsubscribe", "p", "q")},
		on(2, 2, "SSUBSCRIBE", "p", "q"),
		{args: []string{"SUNSUBSCRIBE"}, on: 2, frames: 2, shape: unsubscribeAllShape(true, "sunsubscribe", "p", "q")},
		on(2, 1, "UNSUBSCRIBE"),
		on(2, 1, "SUNSUBSCRIBE"),
		on(1, 1, "PING"),
		on(1, 1, "QUIT"),
	}
}

func TestDifferentialPubSub(t *testing.T) {
	runDifferentialFresh(t, 3, diffPubSubScript())
}

// fenceMicros matches the TIME in microseconds the fencing scripts store
// and return (since, now): 16 digits while the clock reads 2001 to 2286.
var fenceMicros = regexp.MustCompile(`\$16\r\n([0-9]{16})\r\n`)

// fenceRunID matches a run_id as a bulk string.
var fenceRunID = regexp.MustCompile(`\$40\r\n[0-9a-f]{40}\r\n`)

// maskFence replaces, in a reply, each TIME in microseconds by "<usec>",
// after checking it is within a minute of the test's clock, and each
// run_id by "<run_id>": the two things a fencing script's reply or keys
// hold that differ from one server to another.
func maskFence(t *testing.T, reply string) string {
	now := time.Now().UnixMicro()
	reply = fenceMicros.ReplaceAllStringFunc(reply, func(m string) string {
		us, err := strconv.ParseInt(fenceMicros.FindStringSubmatch(m)[1], 10, 64)
		require.NoError(t, err)
		assert.InDelta(t, now, us, float64(time.Minute.Microseconds()), "TIME in microseconds %d", us)
		return "$16\r\n<usec>\r\n"
	})
	return fenceRunID.ReplaceAllString(reply, "$$40\r\n<run_id>\r\n")
}

// masked is a step whose replies are compared after maskFence.
func masked(args ...string) step { return step{args: args, mask: maskFence} }

// The fencing keys, as redlock names them.
const (
	fenceKey       = "volley:fence"
	fenceRunKey    = "volley:fence:run"
	fenceUnsureKey = "volley:fence:unsure"
)

// diffHashScript covers the hash commands, TYPE, MGET, and what a key of
// the wrong type does to GET, SET ... GET and the lock scripts.
func diffHashScript() []step {
	del, ext, rel := scripts.ReleaseQuiet.Source, scripts.Extend.Source, scripts.Release.Source
	wait, lockM, relM, relMP := scripts.LockWait.Source, scripts.LockMulti.Source, scripts.ReleaseMultiQuiet.Source, scripts.ReleaseMulti.Source
	extM, batch := scripts.ExtendMulti.Source, scripts.ExtendBatch.Source
	return []step{
		cmd("HSET", "h", "a", "1", "b", "2"),
		cmd("HSET", "h", "a", "3", "c", "4", "c", "5"),
		cmd("HSET", "h", "a"),
		cmd("HSET", "h", "a", "1", "b"),
		cmd("HSET", "h"),
		cmd("HGET", "h", "a"),
		cmd("HGET", "h", "c"),
		cmd("HGET", "h", "zz"),
		cmd("HGET", "nope", "a"),
		cmd("HGET", "h"),
		cmd("HGETALL", "h"),
		cmd("HGETALL", "nope"),
		cmd("HGETALL"),
		cmd("TYPE", "h"),
		cmd("TYPE", "nope"),
		cmd("SET", "s", "v"),
		cmd("TYPE", "s"),
		cmd("TYPE"),
		cmd("MGET", "s", "h", "nope", "s"),
		cmd("MGET"),
		cmd("TYPE", "s", "h"),
		cmd("GET", "h"),
		cmd("SET", "h", "x", "GET"),
		cmd("SET", "h", "x", "NX", "GET"),
		cmd("SET", "h", "x", "PX", "abc", "GET"),
		cmd("SET", "h", "x", "NX"),
		cmd("HSET", "s", "a", "1"),
		cmd("HSET", "s", "a"),
		cmd("HGET", "s", "a"),
		cmd("HGETALL", "s"),
		cmd("EXISTS", "h", "s", "nope"),
		cmd("PEXPIRE", "h", "100000"),
		shaped(intBetween(99000, 100000), "PTTL", "h"),
		cmd("HSET", "h", "d", "6"),
		shaped(intBetween(99000, 100000), "PTTL", "h"),
		cmd("HGETALL", "h"),
		cmd("SET", "h", "x", "KEEPTTL"),
		shaped(intBetween(99000, 100000), "PTTL", "h"),
		cmd("TYPE", "h"),
		cmd("GET", "h"),
		cmd("HSET", "h2", "f", "v"),
		cmd("PEXPIRE", "h2", "0"),
		cmd("HGETALL", "h2"),
		cmd("HSET", "h2", "f", "v"),
		cmd("PTTL", "h2"),
		cmd("DEL", "h2", "nope"),
		cmd("EXISTS", "h2"),

		// the lock scripts, given a hash: Redis' error, raised by the GET,
		// after what the script did before it
		cmd("HSET", "hh", "f", "v"),
		cmd("EVAL", del, "1", "hh", "tok"),
		cmd("EVAL", ext, "1", "hh", "tok", "1000"),
		cmd("EVAL", scripts.Handover.Source, "1", "hh", "tok", "next", "1000"),
		cmd("EVAL", rel, "1", "hh", "tok", holderID([]byte("tok"))),
		cmd("EVAL", wait, "1", "hh", "tok", "1000"),
		cmd("EVAL", lockM, "2", "free", "hh", "tok", "1000"),
		cmd("EXISTS", "free"),
		cmd("SET", "r1", "tok"),
		cmd("SET", "r2", "tok"),
		cmd("EVAL", relM, "3", "r1", "hh", "r2", "tok"),
		cmd("EXISTS", "r1", "r2"),
		cmd("SET", "r1", "tok"),
		cmd("EVAL", relMP, "3", "r1", "hh", "r2", "tok"),
		cmd("EXISTS", "r1", "r2"),
		cmd("EVAL", extM, "2", "r2", "hh", "tok", "1000"),
		cmd("PTTL", "r2"),
		cmd("SET", "b1", "t1"),
		cmd("EVAL", batch, "2", "b1", "hh", "2", "t1", "50000", "1", "t1", "50000", "1"),
		shaped(intBetween(49000, 50000), "PTTL", "b1"),
		cmd("DEL", "hh", "s", "h", "r2", "b1"),
	}
}

// diffHandoverScript covers scripts.Handover in every branch, by EVAL,
// EVALSHA and SCRIPT LOAD, in RESP2 and then RESP3, over two connections:
// 0 runs the script, 1 is subscribed to the key's channel and shard channel
// and PINGs at the end of each protocol, so a message either server
// published would show.
func diffHandoverScript() []step {
	ho := scripts.Handover.Source
	hoSHA := sha1Hex([]byte(ho))
	eval := func(args ...string) step { return cmd(append([]string{"EVAL", ho}, args...)...) }
	evalSHA := func(args ...string) step { return cmd(append([]string{"EVALSHA", hoSHA}, args...)...) }
	// branches runs every branch by call: "lock" holds tok, then next.
	branches := func(call func(args ...string) step) []step {
		steps := []step{
			cmd("SET", "lock", "tok", "PX", "30000"),
			// not the holder, or no key: 0, and nothing created
			call("1", "lock", "other", "next", "60000"),
			call("1", "lock"),
			call("1", "missing", "tok", "next", "60000"),
			call("1", "missing"),
			cmd("EXISTS", "missing"),
			// GET's errors: no key argument, a hash
			call("0"),
			call("0", "tok", "next", "60000"),
			call("1", "h", "tok", "next", "60000"),
			call("1", "h"),
			cmd("HGETALL", "h"),
			// SET's errors once the token matched
			call("1", "lock", "tok"),
			call("1", "lock", "tok", "next"),
		}
		for _, ttl := range []string{"abc", "1.5", "+5", "007", "-0", " 5", "", "1e3",
			"9223372036854775808", "0", "-5", "9223372036854775807"} {
			steps = append(steps, call("1", "lock", "tok", "next", ttl))
		}
		return append(steps,
			cmd("GET", "lock"),
			shaped(intBetween(29000, 30000), "PTTL", "lock"),
			// the handover, and again from the old holder
			call("1", "lock", "tok", "next", "60000"),
			cmd("GET", "lock"),
			shaped(intBetween(59000, 60000), "PTTL", "lock"),
			call("1", "lock", "tok", "again", "60000"),
			cmd("GET", "lock"),
			// to the same holder, with a second key that is ignored
			call("2", "lock", "ignored", "next", "next", "90000"),
			shaped(intBetween(89000, 90000), "PTTL", "lock"),
			cmd("EXISTS", "ignored"),
			// a key without a TTL, an empty token
			cmd("SET", "lock", ""),
			call("1", "lock", "", "next", "60000"),
			cmd("GET", "lock"),
			shaped(intBetween(59000, 60000), "PTTL", "lock"),
		)
	}
	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }
	add(
		on(1, 1, "SUBSCRIBE", releasedChannelPrefix+"lock"),
		on(1, 1, "SSUBSCRIBE", releasedChannelPrefix+"lock"),
		cmd("HSET", "h", "f", "tok"),
		cmd("SCRIPT", "EXISTS", hoSHA),
		evalSHA("1", "lock", "tok", "next", "60000"),
	)
	add(branches(eval)...)
	add(
		cmd("SCRIPT", "EXISTS", hoSHA),
		cmd("SCRIPT", "FLUSH"),
		evalSHA("1", "lock", "next", "tok", "60000"),
		cmd("SCRIPT", "LOAD", ho),
	)
	add(branches(evalSHA)...)
	add(
		cmd("EVALSHA", strings.ToUpper(hoSHA), "1", "lock", "next", "tok", "60000"),
		cmd("GET", "lock"),
		on(1, 1, "PING"),
		cmd("HELLO", "3"),
	)
	add(branches(eval)...)
	add(branches(evalSHA)...)
	add(
		on(1, 1, "PING"),
		cmd("HELLO", "2"),
		cmd("DEL", "lock", "h"),
	)
	return steps
}

// diffFenceScript covers the fencing scripts in every branch, by EVAL,
// EVALSHA and SCRIPT LOAD, in RESP2 and RESP3, on a server that has not run
// them yet.
func diffFenceScript() []step {
	check, lock, write := scripts.FenceCheck.Source, scripts.FenceLock.Source, scripts.FenceWrite.Source
	state, repair := scripts.FenceState.Source, scripts.FenceRepair.Source
	F, R, U := fenceKey, fenceRunKey, fenceUnsureKey
	otherRun := strings.Repeat("ab", 20)
	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }
	// Counters as Lua reads them: scripts.FenceWrite raises the counter from
	// g to arg, or not, or fails to compare. k holds tok throughout.
	numbers := func(g, arg string) []step {
		return []step{
			cmd("SET", F, g),
			cmd("EVAL", write, "2", "k", F, "tok", arg),
			cmd("GET", F),
		}
	}
	add(
		// a fresh master: no counter, no run key
		cmd("EVAL", check, "3", F, R, U),
		masked("HGETALL", U),
		masked("GET", R),
		cmd("EXISTS", F),
		// vouched since: nothing changes
		cmd("EVAL", check, "3", F, R, U),
		masked("HGETALL", U),
		masked("EVAL", state, "2", F, U),

		// neither a counter nor a since (FLUSHALL, an eviction): the
		// state script makes the master unsure
		cmd("DEL", U),
		masked("EVAL", state, "2", F, U),
		cmd("TYPE", U),
		masked("EVAL", state, "2", F, U),

		// a master without a counter sets the keys and says so
		cmd("EVAL", lock, "2", "k", F, "tok", "30000"),
		shaped(intBetween(29000, 30000), "PTTL", "k"),
		cmd("EVAL", write, "2", "k", F, "tok", "5"),
		cmd("EXISTS", F),

		// repair: since does not match, then matches
		cmd("EVAL", repair, "2", F, U, "123", "7"),
		cmd("EVAL", repair, "2", F, U, "", "7"),
		cmd("EXISTS", F),
		cmd("HSET", U, "since", "42"),
		cmd("EVAL", repair, "2", F, U, "42", "7"),
		cmd("GET", F),
		cmd("EXISTS", U),
		cmd("EVAL", repair, "2", F, U, "42", "7"),

		// a vouched master: the lock reads the counter, the write raises it
		// and never lowers it
		cmd("EVAL", lock, "3", "k2", "k3", F, "tok", "30000", "2"),
		cmd("EVAL", write, "3", "k2", "k3", F, "tok", "8"),
		cmd("GET", F),
		cmd("EVAL", write, "3", "k2", "k3", F, "tok", "3"),
		cmd("EVAL", write, "3", "k2", "k3", F, "tok", "8"),
		cmd("GET", F),
		cmd("EVAL", lock, "2", "k4", F, "tok", "30000", "1"),
		// the proposal: raised to when larger, never lowered, read before
		cmd("GET", F),
		cmd("EVAL", lock, "2", "p1", F, "tok", "30000", "100"),
		cmd("GET", F),
		cmd("EVAL", lock, "2", "p2", F, "tok", "30000", "99"),
		cmd("EVAL", lock, "2", "p3", F, "tok", "30000", "100"),
		cmd("GET", F),
		cmd("EVAL", lock, "2", "p4", F, "tok", "30000", "1e3"),
		cmd("GET", F),
		cmd("EVAL", lock, "2", "p5", F, "tok", "30000", "x"),
		cmd("EXISTS", "p5"),
		cmd("EVAL", lock, "2", "p6", F, "tok", "30000"),
		cmd("EXISTS", "p6"),
		cmd("GET", F),
		cmd("SET", F, "8"),
		// a key not ours
		cmd("EVAL", write, "3", "k2", "k3", F, "other", "9"),
		cmd("EVAL", write, "3", "k2", "missing", F, "tok", "9"),
		cmd("EVAL", write, "3", "missing", "k3", F, "tok", "9"),
		cmd("GET", F),
		// a key taken
		shaped(holderShape("tok", 29000, 30000), "EVAL", lock, "2", "k2", F, "other", "30000"),
		cmd("SET", "kept", "tok"),
		cmd("EVAL", lock, "3", "free", "kept", F, "other", "30000"),
		cmd("EXISTS", "free"),
		masked("EVAL", state, "2", F, U),
		// repair of a master with a counter: raise, never lower
		cmd("EVAL", repair, "2", F, U, "x", "5"),
		cmd("GET", F),
		cmd("EVAL", repair, "2", F, U, "x", "20"),
		cmd("GET", F),
		cmd("EXISTS", U),

		// restarted, keeping its data: the run key names another run_id;
		// the counter becomes stale
		cmd("SET", R, otherRun),
		cmd("EVAL", check, "3", F, R, U),
		cmd("EXISTS", F),
		cmd("HGET", U, "stale"),
		masked("HGETALL", U),
		masked("GET", R),
		cmd("EVAL", check, "3", F, R, U),
		masked("EVAL", state, "2", F, U),
		cmd("EVAL", lock, "2", "k5", F, "tok", "30000", "20"),
		cmd("EVAL", write, "2", "k5", F, "tok", "21"),
		cmd("HSET", U, "since", "1"),
		cmd("EVAL", repair, "2", F, U, "2", "21"),
		cmd("EVAL", repair, "2", F, U, "1", "21"),
		cmd("GET", F),
		cmd("EXISTS", U),
		// again, with a larger stale counter there: it stays
		cmd("HSET", U, "stale", "99"),
		cmd("SET", R, otherRun),
		cmd("EVAL", check, "3", F, R, U),
		masked("HGETALL", U),
		// again, with a smaller one: the counter replaces it
		cmd("SET", F, "150"),
		cmd("SET", R, otherRun),
		cmd("EVAL", check, "3", F, R, U),
		masked("HGETALL", U),
		// with an equal one
		cmd("SET", F, "150"),
		cmd("SET", R, otherRun),
		cmd("HSET", U, "stale", "150.0"),
		cmd("EVAL", check, "3", F, R, U),
		masked("HGETALL", U),
		// with one Lua cannot read: the comparison fails, nothing changed
		cmd("SET", F, "5"),
		cmd("SET", R, otherRun),
		cmd("HSET", U, "stale", "abc"),
		cmd("EVAL", check, "3", F, R, U),
		cmd("GET", F),
		cmd("GET", R),
		cmd("HSET", U, "stale", "7"),
		cmd("SET", F, "x"),
		cmd("EVAL", check, "3", F, R, U),
		cmd("DEL", U),
		cmd("EVAL", check, "3", F, R, U),
		masked("HGETALL", U),
		cmd("EXISTS", F),
		masked("GET", R),
		cmd("DEL", U),
	)

	// Lua's numbers
	add(cmd("SET", "k", "tok"))
	for _, c := range [][2]string{
		{"7", "8"}, {"8", "8"}, {"9", "8"}, {"1e3", "999"}, {"1e3", " 1001 "},
		{"9007199254740993", "9007199254740992"}, {"9007199254740992", "9007199254740993"},
		{"9007199254740992", "9007199254740994"}, {"18446744073709551617", "18446744073709551616"},
		{"0x10", "17"}, {"0X1p4", "15"}, {"-0x10", "-15"}, {"0x1.8", "2"}, {"0x.8p1", "1.5"},
		{"\t12\v", "13"}, {"12\x00junk", "13"}, {"12 junk", "13"}, {"+5", "6"}, {"5.", "6"},
		{".5", "0.6"}, {"1e400", "5"}, {"-1e400", "5"}, {"1e-400", "1e-300"}, {"inf", "5"},
		{"-Infinity", "5"}, {"INFINITE", "5"}, {"nan", "5"}, {"-NaN(x_1)", "5"}, {"nan(", "5"},
		{"abc", "5"}, {"", "5"}, {"5", "abc"}, {"5", ""}, {"x", "y"}, {"1e", "5"}, {"1e+", "5"},
		{"1_0", "11"}, {"0x", "5"}, {"0x1p", "5"}, {"1.5.5", "5"}, {"- 5", "5"}, {"0x1g", "5"},
		{"5", "0x1p3"}, {"5", "1e1"},
	} {
		add(numbers(c[0], c[1])...)
	}
	add(
		cmd("SET", F, "5"),
		cmd("EVAL", write, "2", "k", F, "tok"),
		cmd("EVAL", repair, "2", F, U, "x"),
		cmd("EVAL", repair, "2", F, U, "x", "abc"),
		cmd("EVAL", repair, "2", F, U, "x", "0x10"),
		cmd("GET", F),

		// missing keys and arguments
		cmd("EVAL", check, "0"),
		cmd("EVAL", check, "1", F),
		cmd("SET", R, otherRun),
		cmd("EVAL", check, "2", F, R),
		cmd("DEL", F),
		cmd("EVAL", check, "2", F, R),
		cmd("EVAL", lock, "0"),
		cmd("EVAL", lock, "1", F),
		cmd("SET", F, "12"),
		cmd("EVAL", lock, "1", F),
		cmd("EVAL", lock, "1", F, "tok", "abc"),
		cmd("EVAL", lock, "2", "k6", F, "tok"),
		cmd("EVAL", lock, "2", "k6", F, "tok", "abc"),
		cmd("EVAL", lock, "2", "k6", F, "tok", "0"),
		cmd("EVAL", lock, "2", "k6", F),
		cmd("EXISTS", "k6"),
		cmd("EVAL", write, "0"),
		cmd("EVAL", write, "1", F, "tok", "13"),
		cmd("GET", F),
		cmd("EVAL", write, "2", "k", F),
		cmd("EVAL", write, "2", "k", F, "tok"),
		cmd("EVAL", state, "0"),
		cmd("EVAL", state, "1", F),
		cmd("EVAL", repair, "0"),
		cmd("EVAL", repair, "1", F, "x", "14"),
		cmd("GET", F),
		cmd("DEL", F),
		cmd("EVAL", repair, "1", F, "x", "14"),
		cmd("HSET", U, "since", "42"),
		cmd("EVAL", repair, "2", F, U, "42"),
		cmd("EVAL", repair, "2", F, U),
		cmd("EXISTS", F, U),
		cmd("DEL", U),

		// keys of the wrong type, and keys passed twice
		cmd("HSET", F, "a", "b"),
		cmd("EVAL", lock, "2", "k7", F, "tok", "30000", "9"),
		cmd("EXISTS", "k7"),
		cmd("EVAL", write, "2", "k7", F, "tok", "5"),
		cmd("EVAL", state, "2", F, U),
		cmd("EVAL", repair, "2", F, U, "x", "5"),
		cmd("SET", R, otherRun),
		cmd("EVAL", check, "3", F, R, U),
		cmd("EVAL", lock, "2", F, "k8", "tok", "30000"),
		cmd("EVAL", write, "2", F, "k8", "tok", "5"),
		cmd("SET", F, "5"),
		cmd("SET", U, "str"),
		cmd("EVAL", check, "3", F, R, U),
		cmd("EVAL", state, "2", F, U),
		cmd("EVAL", repair, "2", F, U, "x", "6"),
		cmd("DEL", F),
		cmd("EVAL", check, "3", F, R, U),
		cmd("EVAL", state, "2", F, U),
		cmd("EVAL", repair, "2", F, U, "x", "6"),
		cmd("GET", R),
		cmd("DEL", U),
		cmd("SET", F, "5"),
		cmd("EVAL", check, "3", F, R, F),
		cmd("EXISTS", F),
		cmd("EVAL", check, "3", F, F, U),
		masked("HGETALL", U),
		masked("GET", F),
		cmd("EXISTS", R),
		cmd("DEL", U, F),
		cmd("EVAL", check, "3", F, R, R),
		cmd("SET", R, otherRun),
		cmd("EVAL", check, "3", U, R, U),
		masked("HGETALL", U),
		cmd("EVAL", lock, "3", "k9", "k9", "k9", "tok", "30000"),
		cmd("EVAL", write, "3", "k9", "k9", "k9", "tok", "5"),
		cmd("GET", "k9"),
		cmd("EVAL", repair, "2", "k9", "k9", "x", "tok"),
		cmd("DEL", U, F, R, "k9"),

		// by SHA
		cmd("SCRIPT", "EXISTS", sha1Hex([]byte(check)), sha1Hex([]byte(lock)), sha1Hex([]byte(write)),
			sha1Hex([]byte(state)), sha1Hex([]byte(repair))),
		cmd("SCRIPT", "FLUSH"),
		cmd("EVALSHA", sha1Hex([]byte(lock)), "2", "k10", F, "tok", "30000"),
		cmd("SCRIPT", "LOAD", check),
		cmd("SCRIPT", "LOAD", lock),
		cmd("SCRIPT", "LOAD", write),
		cmd("SCRIPT", "LOAD", state),
		cmd("SCRIPT", "LOAD", repair),
		cmd("EVALSHA", sha1Hex([]byte(check)), "3", F, R, U),
		cmd("EVALSHA", strings.ToUpper(sha1Hex([]byte(check))), "3", F, R, U),
		cmd("EVALSHA", sha1Hex([]byte(lock)), "2", "k10", F, "tok", "30000"),
		cmd("EVALSHA", sha1Hex([]byte(write)), "2", "k10", F, "tok", "30"),
		masked("EVALSHA", sha1Hex([]byte(state)), "2", F, U),
		cmd("HSET", U, "since", "1"),
		cmd("EVALSHA", sha1Hex([]byte(repair)), "2", F, U, "1", "30"),
		cmd("EVALSHA", sha1Hex([]byte(lock)), "2", "k11", F, "tok", "30000"),
		cmd("EVALSHA", sha1Hex([]byte(write)), "2", "k11", F, "tok", "31"),
		cmd("EVALSHA", sha1Hex([]byte(repair)), "2", F, U, "1", "40"),
		cmd("GET", F),

		// RESP3: the same shapes; HGETALL a map, HGET's nil a null
		cmd("HELLO", "3"),
		cmd("EVAL", check, "3", F, R, U),
		cmd("EVAL", lock, "2", "k12", F, "tok", "30000", "45"),
		cmd("GET", F),
		cmd("SET", "kept3", "tok"),
		cmd("EVAL", lock, "2", "kept3", F, "tok", "30000"),
		cmd("EVAL", write, "2", "k12", F, "tok", "41"),
		cmd("EVAL", write, "2", "k12", F, "other", "42"),
		masked("EVAL", state, "2", F, U),
		cmd("EVAL", repair, "2", F, U, "x", "50"),
		cmd("SET", R, otherRun),
		cmd("EVAL", check, "3", F, R, U),
		cmd("EVAL", lock, "2", "k13", F, "tok", "30000", "50"),
		cmd("EVAL", write, "2", "k13", F, "tok", "51"),
		masked("EVAL", state, "2", F, U),
		masked("HGETALL", U),
		cmd("HGETALL", "nope"),
		cmd("HGET", U, "nope"),
		cmd("HGET", U, "stale"),
		cmd("TYPE", U),
		cmd("HSET", U, "since", "2"),
		cmd("EVAL", repair, "2", F, U, "1", "60"),
		cmd("EVAL", repair, "2", F, U, "2", "60"),
		cmd("EVAL", check, "3", F, R, U),
		cmd("EVAL", check, "3", F, R, F),
		cmd("HELLO", "2"),
	)
	return steps
}

func TestDifferentialHashes(t *testing.T) {
	real := redistest.Start(t, redistest.Options{})
	fake := StartT(t, Options{})
	runDifferential(t, dial(t, fake.Addr()), dial(t, real.Addr()), diffHashScript())
}

// TestDifferentialListenMark compares the mark that the acquire scripts
// leave on a taken key for every Client that waits
// (scripts.ListenSuffix) with redis-server's: which scripts leave it and
// with what TTL, enrolled or not, that a TTL argument Lua cannot add to,
// or whose sum SET refuses, leaves none and fails nothing, that a
// rejoining ReleaseQuiet marks, and that Release publishes only when the
// mark exists.
func TestDifferentialListenMark(t *testing.T) {
	runDifferentialFresh(t, 2, diffListenMarkScript())
}

func diffListenMarkScript() []step {
	wait, multi, fence := scripts.LockWait.Source, scripts.LockMulti.Source, scripts.FenceLock.Source
	rw, rlock, rel := scripts.RWLock.Source, scripts.RWRLock.Source, scripts.Release.Source
	quiet := scripts.ReleaseQuiet.Source
	const mark = "k:volley:listen"
	taken := holderShape("tok", 29000, 30000)
	intent := idShape(waitHolder, 4000, 5000)
	return []step{
		on(1, 1, "SSUBSCRIBE", "volley:released:k"),
		cmd("SET", "k", "tok", "PX", "30000"),
		// every waiter leaves the mark: an enrolled one, one without an
		// enrolment, one whose ZADD fails (the waiters' key is no
		// sorted set)
		shaped(taken, "EVAL", wait, "1", "k", "x", "1000", "1:a"),
		shaped(intBetween(30000, 31000), "PTTL", mark),
		shaped(intBetween(30000, 31000), "PTTL", "k:volley:waiters"),
		cmd("DEL", mark),
		shaped(taken, "EVAL", wait, "1", "k", "x", "1000"),
		shaped(intBetween(30000, 31000), "PTTL", mark),
		cmd("DEL", mark, "k:volley:waiters"),
		cmd("SET", "k:volley:waiters", "x"),
		shaped(taken, "EVAL", wait, "1", "k", "x", "1000", "1:a"),
		shaped(intBetween(30000, 31000), "PTTL", mark),
		cmd("DEL", mark, "k:volley:waiters"),
		// LockMulti and FenceLock mark the first taken key
		shaped(taken, "EVAL", multi, "2", "free", "k", "x", "2000"),
		shaped(intBetween(31000, 32000), "PTTL", mark),
		cmd("EXISTS", "free:volley:listen"),
		cmd("DEL", mark),
		shaped(taken, "EVAL", fence, "2", "k", "counter", "x", "3000", "7"),
		shaped(intBetween(32000, 33000), "PTTL", mark),
		cmd("DEL", mark),
		// a TTL argument that is no number, or a sum SET refuses, marks
		// nothing and fails nothing
		shaped(taken, "EVAL", multi, "1", "k", "x", "abc"),
		shaped(taken, "EVAL", multi, "1", "k", "x", "1.5"),
		shaped(taken, "EVAL", multi, "1", "k", "x", "-40000"),
		shaped(taken, "EVAL", multi, "1", "k", "x"),
		shaped(taken, "EVAL", wait, "1", "k", "x", "abc"),
		cmd("EXISTS", mark),
		shaped(taken, "EVAL", multi, "1", "k", "x", "0x10"),
		shaped(intBetween(29000, 30016), "PTTL", mark),
		cmd("DEL", mark),
		// a writer or a reader marks the key only when it waits (a
		// reader also behind a writer's intent)
		shaped(taken, "EVAL", rw, "3", "k", "k:readers", "k:intent", "x", "1000", "0"),
		cmd("EXISTS", mark),
		shaped(taken, "EVAL", rw, "3", "k", "k:readers", "k:intent", "x", "1000", "1"),
		shaped(intBetween(30000, 31000), "PTTL", mark),
		cmd("DEL", mark),
		shaped(taken, "EVAL", rlock, "3", "k", "k:readers", "k:intent", "r", "1000"),
		shaped(taken, "EVAL", rlock, "3", "k", "k:readers", "k:intent", "r", "1000", "0"),
		cmd("EXISTS", mark),
		shaped(taken, "EVAL", rlock, "3", "k", "k:readers", "k:intent", "r", "1000", "1"),
		shaped(intBetween(30000, 31000), "PTTL", mark),
		cmd("DEL", mark, "k"),
		cmd("SET", "k:intent", "1", "PX", "5000"),
		shaped(intent, "EVAL", rlock, "3", "k", "k:readers", "k:intent", "r", "1000", "0"),
		cmd("EXISTS", mark),
		shaped(intent, "EVAL", rlock, "3", "k", "k:readers", "k:intent", "r", "1000", "1"),
		shaped(intBetween(5000, 6000), "PTTL", mark),
		cmd("DEL", mark, "k:intent"),
		// a waiting attempt's release of the key it set (ReleaseQuiet)
		// rejoins its waiters and marks the key again
		cmd("SET", "k", "tok", "PX", "30000"),
		cmd("EVAL", quiet, "1", "k", "tok", "2000", "1:a"),
		shaped(intBetween(1000, 2000), "PTTL", mark),
		shaped(intBetween(1000, 2000), "PTTL", "k:volley:waiters"),
		cmd("DEL", mark, "k:volley:waiters"),
		// Release: nothing published while nobody waits, nor for a
		// waiters' set without the mark; the id once the mark is there
		// (a message would come before PING's answer)
		cmd("SET", "k", "tok", "PX", "30000"),
		cmd("EVAL", rel, "1", "k", "tok", holderID([]byte("tok"))),
		cmd("SET", "k", "tok", "PX", "30000"),
		shaped(taken, "EVAL", wait, "1", "k", "x", "1000", "1:a"),
		cmd("DEL", mark),
		cmd("EVAL", rel, "1", "k", "tok", holderID([]byte("tok"))),
		cmd("DEL", "k:volley:waiters"),
		on(1, 1, "PING"),
		cmd("SET", "k", "tok", "PX", "30000"),
		shaped(taken, "EVAL", multi, "1", "k", "x", "1000"),
		cmd("EVAL", rel, "1", "k", "tok", holderID([]byte("tok"))),
		recv(1, 1),
		on(1, 1, "PING"),
	}
}

func TestDifferentialHandover(t *testing.T) {
	runDifferentialFresh(t, 2, diffHandoverScript())
}

// TestDifferentialFencing compares the fencing scripts with
// redis-server's, then restarts both servers (without
// persistence: a new run_id, no keys) and checks again.
func TestDifferentialFencing(t *testing.T) {
	real := redistest.Start(t, redistest.Options{})
	fake := StartT(t, Options{})
	fc, rc := dial(t, fake.Addr()), dial(t, real.Addr())
	runDifferential(t, fc, rc, diffFenceScript())

	fake.Restart()
	require.NoError(t, real.Restart(false))
	fc, rc = dial(t, fake.Addr()), dial(t, real.Addr())
	check := scripts.FenceCheck.Source
	runDifferential(t, fc, rc, []step{
		cmd("EVALSHA", sha1Hex([]byte(check)), "3", fenceKey, fenceRunKey, fenceUnsureKey),
		cmd("EVAL", check, "3", fenceKey, fenceRunKey, fenceUnsureKey),
		masked("HGETALL", fenceUnsureKey),
		masked("GET", fenceRunKey),
		cmd("EVAL", check, "3", fenceKey, fenceRunKey, fenceUnsureKey),
	})
}

// scriptCalls is one call of each script of scripts.All, in the order
// diffScriptSHAs makes them, on the keys it sets first: the releases and
// the locks succeed, then the extensions and the handover; fencing finds
// a fresh master with no counter; a semaphore's permit is acquired,
// extended and released; a read-write lock's reader takes, extends and
// releases it, then a writer takes it.
var scriptCalls = []struct {
	name string
	args []string // numkeys, keys, argv
	mask bool     // compare the replies after maskFence
}{
	{name: "release", args: []string{"1", "r", "tok"}},
	{name: "release_quiet", args: []string{"1", "q", "tok"}},
	{name: "release_multi", args: []string{"2", "m1", "m2", "tok"}},
	{name: "release_multi_quiet", args: []string{"2", "n1", "n2", "tok"}},
	{name: "lock_wait", args: []string{"1", "w", "tok", "30000"}},
	{name: "leave", args: []string{"1", "w", "x", ""}},
	{name: "wake", args: []string{"1", "r", "tok"}},
	{name: "lock_multi", args: []string{"2", "l1", "l2", "tok", "30000"}},
	{name: "extend", args: []string{"1", "w", "tok", "60000"}},
	{name: "extend_multi", args: []string{"2", "l1", "l2", "tok", "60000"}},
	{name: "extend_batch", args: []string{"3", "w", "l1", "l2", "2", "tok", "60000", "1", "tok", "60000", "2"}},
	{name: "handover", args: []string{"1", "w", "tok", "next", "60000"}},
	{name: "fence_check", args: []string{"3", fenceKey, fenceRunKey, fenceUnsureKey}},
	{name: "fence_lock", args: []string{"3", "f1", "f2", fenceKey, "tok", "30000"}},
	{name: "fence_write", args: []string{"3", "f1", "f2", fenceKey, "tok", "5"}},
	{name: "fence_state", args: []string{"2", fenceKey, fenceUnsureKey}, mask: true},
	{name: "fence_repair", args: []string{"2", fenceKey, fenceUnsureKey, "1", "7"}},
	{name: "sem_acquire", args: []string{"3", "s", "s:0", "s:1", "tok", "30000", "1"}},
	{name: "sem_extend", args: []string{"2", "s", "s:1", "tok", "60000", "2"}},
	{name: "sem_extend_batch", args: []string{"2", "s", "s:1", "1", "tok", "60000", "2"}},
	{name: "sem_release", args: []string{"3", "s", "s:0", "s:1", "tok", "1", "1"}},
	{name: "rw_rlock", args: []string{"3", "rw", "rw:readers", "rw:intent", "tok", "30000"}},
	{name: "rw_rextend", args: []string{"3", "rw", "rw:readers", "rw:intent", "tok", "60000"}},
	{name: "rw_rextend_batch", args: []string{"1", "rw:readers", "1", "tok", "60000", "1"}},
	{name: "rw_runlock", args: []string{"3", "rw", "rw:readers", "rw:intent", "tok"}},
	{name: "rw_lock", args: []string{"3", "rw", "rw:readers", "rw:intent", "tok", "30000", "1"}},
	// The cluster forms: the script's own keys, then a counter, run key
	// and unsure hash (c, cr, cu) that the first call sets aside.
	{name: "fence_vouch+fence_state", args: []string{"5", "c", "cu", "c", "cr", "cu"}, mask: true},
	{name: "fence_vouch+fence_repair", args: []string{"5", "c", "cu", "c", "cr", "cu", "1", "7"}},
	{name: "fence_vouch+fence_lock", args: []string{"5", "g1", "c", "c", "cr", "cu", "tok", "30000", "9"}},
	{name: "fence_vouch+fence_write", args: []string{"5", "g1", "c", "c", "cr", "cu", "tok", "5"}},
	{name: "fence_vouch+sem_acquire", args: []string{"6", "t", "t:0", "c", "c", "cr", "cu", "tok", "30000", "0", "9"}},
	{name: "fence_vouch+rw_lock", args: []string{"7", "v", "v:readers", "v:intent", "c", "c", "cr", "cu", "tok", "30000", "1", "9"}},
	// An election's: "w" holds "next" (the handover's) with a TTL.
	{name: "elect_announce", args: []string{"2", "w", "w:leader", "next", "7 me"}},
	{name: "elect_extend_batch", args: []string{"2", "w", "w:leader", "1", "next", "60000", "2"}},
	{name: "elect_release", args: []string{"2", "w", "w:leader", "next", "0"}},
}

// diffScriptSHAs covers every script of scripts.All by its SHA: EVALSHA
// before SCRIPT LOAD (NOSCRIPT), SCRIPT LOAD, which must answer the
// script's SHA, and EVALSHA after it, in scriptCalls' order.
func diffScriptSHAs(t *testing.T) []step {
	byName := make(map[string]scripts.Script)
	for _, s := range scripts.All {
		byName[s.Name] = s
	}
	steps := []step{cmd("SCRIPT", "FLUSH")}
	for _, k := range []string{"r", "q", "m1", "m2", "n1", "n2"} {
		steps = append(steps, cmd("SET", k, "tok"))
	}
	for _, call := range scriptCalls {
		s, ok := byName[call.name]
		require.True(t, ok, "scriptCalls: no script %q", call.name)
		delete(byName, call.name)
		loaded := func(t *testing.T, reply string) {
			require.Equal(t, bulk(s.SHA), reply, "SCRIPT LOAD of %s", s.Name)
		}
		evalsha := step{args: append([]string{"EVALSHA", s.SHA}, call.args...)}
		if call.mask {
			evalsha.mask = maskFence
		}
		steps = append(steps,
			cmd(append([]string{"EVALSHA", s.SHA}, call.args...)...),
			shaped(loaded, "SCRIPT", "LOAD", s.Source),
			evalsha,
		)
	}
	require.Empty(t, byName, "scripts with no call in scriptCalls")
	return steps
}

// TestScriptSHAsAgainstRedis proves that each script's SHA (computed by
// internal/scripts) is the name redis-server gives it, and that the fake
// runs it by that name as redis-server does.
func TestScriptSHAsAgainstRedis(t *testing.T) {
	real := redistest.Start(t, redistest.Options{})
	fake := StartT(t, Options{})
	fc, rc := dial(t, fake.Addr()), dial(t, real.Addr())
	runDifferential(t, fc, rc, diffScriptSHAs(t))
	// Every script is still loaded on both, under its SHA.
	exists := []string{"SCRIPT", "EXISTS"}
	want := "*" + strconv.Itoa(len(scripts.All)) + "\r\n"
	for _, s := range scripts.All {
		exists = append(exists, s.SHA)
		want += ":1\r\n"
	}
	require.Equal(t, want, rc.do(exists...))
	require.Equal(t, want, fc.do(exists...))
}

// diffSemScript covers the semaphore's scripts (scripts.SemAcquire,
// scripts.SemRelease, scripts.SemExtend) in every branch, by EVAL, EVALSHA
// and SCRIPT LOAD, in RESP2 and RESP3, over three connections: 0 runs the
// scripts; 1 (RESP2) is subscribed to the record's channel and shard
// channel, so a release's message published on the wrong one, or published
// when it should not be, shows; 2 (RESP3) is subscribed to the shard
// channel and releases a permit itself once. The semaphore "sem" has two
// permits, "sem:0" and "sem:1".
func diffSemScript() []step {
	acq, rel, ext := scripts.SemAcquire.Source, scripts.SemRelease.Source, scripts.SemExtend.Source
	acquire := func(args ...string) step { return cmd(append([]string{"EVAL", acq}, args...)...) }
	release := func(args ...string) step { return cmd(append([]string{"EVAL", rel}, args...)...) }
	extend := func(args ...string) step { return cmd(append([]string{"EVAL", ext}, args...)...) }
	pttl := func(key string, lo, hi int64) step { return shaped(intBetween(lo, hi), "PTTL", key) }
	sem := []string{"3", "sem", "sem:0", "sem:1"} // numkeys and KEYS of "sem"
	semArgs := func(argv ...string) []string { return append(append([]string{}, sem...), argv...) }
	channel := releasedChannelPrefix + "sem"
	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }
	add(
		on(1, 1, "SUBSCRIBE", channel),
		on(1, 1, "SSUBSCRIBE", channel),
		on(2, 1, "HELLO", "3"),
		on(2, 1, "SSUBSCRIBE", channel),
		cmd("SCRIPT", "EXISTS", scripts.SemAcquire.SHA, scripts.SemRelease.SHA, scripts.SemExtend.SHA),

		// acquire a free permit: the permit's key and the record, with the
		// permit's TTL
		acquire(semArgs("t1", "30000", "0")...),
		cmd("GET", "sem"),
		pttl("sem", 29000, 30000),
		cmd("GET", "sem:0"),
		pttl("sem:0", 29000, 30000),
		// a taken permit: the free ones' indexes, then an empty list
		acquire(semArgs("t2", "30000", "0")...),
		acquire(semArgs("t2", "60000", "1")...),
		cmd("GET", "sem:1"),
		pttl("sem", 59000, 60000), // raised by the longer permit
		acquire(semArgs("t3", "90000", "0")...),
		acquire(semArgs("t3", "90000", "1")...),
		pttl("sem", 59000, 60000), // nothing taken, nothing raised
		// the TTL is checked before the key is, also for a taken permit
		acquire(semArgs("t3", "abc", "0")...),

		// fenced (the counter's key after the permits', a proposal fourth):
		// taken, the free list leaves the counter out; set with no counter,
		// {1, ""}; with one below the proposal, raised and answered as it
		// was; above it, left; not a number, the comparison fails after the
		// SET; a record of 2 permits is not one of 3
		acquire("4", "fsem", "fsem:0", "fsem:1", "fence", "f1", "30000", "0", "100"),
		cmd("GET", "fsem"),
		cmd("EXISTS", "fence"),
		acquire("4", "fsem", "fsem:0", "fsem:1", "fence", "f2", "30000", "0", "100"),
		cmd("SET", "fence", "42"),
		acquire("4", "fsem", "fsem:0", "fsem:1", "fence", "f2", "30000", "1", "100"),
		cmd("GET", "fence"),
		acquire("4", "fsem", "fsem:0", "fsem:1", "fence", "f3", "30000", "0", "7"),
		cmd("DEL", "fsem:0"),
		acquire("4", "fsem", "fsem:0", "fsem:1", "fence", "f3", "30000", "0", "7"),
		cmd("GET", "fence"),
		cmd("DEL", "fsem:0"),
		cmd("SET", "fence", "x"),
		acquire("4", "fsem", "fsem:0", "fsem:1", "fence", "f4", "30000", "0", "100"),
		cmd("GET", "fsem:0"),
		acquire("5", "fsem", "fsem:0", "fsem:1", "fsem:2", "fence", "f5", "30000", "2", "100"),
		acquire("1", "fsem", "f6", "30000", "0", "100"),
		cmd("DEL", "fsem", "fsem:0", "fsem:1", "fence"),

		// extend: by the holder, raising the record, then shortening the
		// permit and never lowering the record
		extend("2", "sem", "sem:0", "t1", "90000", "2"),
		pttl("sem:0", 89000, 90000),
		pttl("sem", 89000, 90000),
		extend("2", "sem", "sem:0", "t1", "5000", "2"),
		pttl("sem:0", 4000, 5000),
		pttl("sem", 89000, 90000),
		cmd("GET", "sem"),
		// by another, or for a permit nobody holds: 0, nothing created
		extend("2", "sem", "sem:0", "other", "90000", "2"),
		extend("2", "sem", "sem:0"),
		pttl("sem:0", 4000, 5000),
		extend("2", "sem", "sem:7", "t1", "90000", "2"),
		cmd("EXISTS", "sem:7"),

		// release by another: 0, nothing published
		release(semArgs("other", "0", "1")...),
		release(semArgs("t1", "1", "1")...),
		release(semArgs("t1", "5", "1")...),
		cmd("EXISTS", "sem", "sem:0", "sem:1"),
		// by the holder, not the last permit: the record stays; the
		// message goes to the shard channel only
		release(semArgs("t1", "0", "1")...),
		recv(1, 1),
		recv(2, 1),
		cmd("EXISTS", "sem", "sem:0", "sem:1"),
		pttl("sem", 89000, 90000),
		// an extension of the released permit never re-creates it
		extend("2", "sem", "sem:0", "t1", "90000", "2"),
		cmd("EXISTS", "sem:0"),
		release(semArgs("t1", "0", "1")...), // released already: 0
		// a free permit again, with a shorter TTL: the record keeps its own
		acquire(semArgs("t3", "10000", "0")...),
		pttl("sem", 89000, 90000),
		// the last permit, without waking anyone: the record goes
		release(semArgs("t2", "1", "0")...),
		cmd("EXISTS", "sem", "sem:1"),
		release(semArgs("t3", "0", "0")...),
		cmd("EXISTS", "sem", "sem:0"),
		// the last permit, with the wake-up, from a subscriber: its own
		// message comes before the reply
		acquire(semArgs("t4", "30000", "1")...),
		on(2, 2, append([]string{"EVAL", rel}, semArgs("t4", "1", "1")...)...),
		recv(1, 1),
		cmd("EXISTS", "sem", "sem:1"),
		// only "1" wakes
		acquire(semArgs("t5", "30000", "0")...),
		release(semArgs("t5", "0", "true")...),
		acquire(semArgs("t5", "30000", "0")...),
		release(semArgs("t5", "0", "01")...),
		acquire(semArgs("t5", "30000", "0")...),
		release(semArgs("t5", "0")...),
		cmd("EXISTS", "sem", "sem:0"),
		on(1, 1, "PING"),
		on(2, 1, "PING"),

		// another number of permits
		acquire(semArgs("t1", "30000", "1")...),
		acquire("4", "sem", "sem:0", "sem:1", "sem:2", "t2", "30000", "2"),
		acquire("2", "sem", "sem:0", "t2", "30000", "0"),
		acquire("1", "sem", "t2", "30000", "0"),
		cmd("EXISTS", "sem:0", "sem:2"),
		// a lock of the same name, and other strings
		cmd("SET", "lk", "tok", "PX", "30000"),
		acquire("3", "lk", "lk:0", "lk:1", "t1", "30000", "0"),
		cmd("EXISTS", "lk:0"),
		pttl("lk", 29000, 30000),
	)
	for _, rec := range []string{"", "semaphore", "Semaphore:2", "semaphore:", "semaphore:02", "semaphore:2 3",
		"semaphore:2\r\nx", "semaphore:\n", "semaphore:\x003", "x\x00y", "semaphore:2\x00"} {
		add(
			cmd("SET", "r", rec),
			acquire("3", "r", "r:0", "r:1", "t1", "30000", "0"),
		)
	}
	// the name in the error, as Redis' error_reply passes it on: cut at a
	// NUL byte, CR and LF trimmed at its start, turned into spaces inside
	for _, name := range []string{"a b", "a\r\nb", "\nk", "\r\n", "k\n", "k\x00z", "k\n\x00", ""} {
		add(
			cmd("SET", name, "tok"),
			acquire("3", name, "r:0", "r:1", "t1", "30000", "0"),
			cmd("SET", name, "semaphore:5"),
			acquire("3", name, "r:0", "r:1", "t1", "30000", "0"),
			cmd("DEL", name),
		)
	}
	add(
		// a hash: WRONGTYPE, raised by the GET, nothing changed
		cmd("HSET", "h", "f", "v"),
		acquire("3", "h", "h:0", "h:1", "t1", "30000", "0"),
		cmd("EXISTS", "h:0"),
		release("3", "h", "h:0", "h:1", "t1", "0", "1"),
		// a permit's key that holds a hash is taken; its release fails
		cmd("HSET", "q:0", "f", "v"),
		acquire("3", "q", "q:0", "q:1", "t1", "30000", "0"),
		cmd("EXISTS", "q"),
		release("3", "q", "q:0", "q:1", "t1", "0", "1"),
		extend("2", "q", "q:0", "t1", "30000", "2"),
		cmd("TYPE", "q:0"),

		// the permit's index, read by tonumber
		acquire("3", "x", "x:0", "x:1", "t1", "30000", "x"),
		acquire("3", "x", "x:0", "x:1", "t1", "30000", ""),
		acquire("3", "x", "x:0", "x:1", "t1", "30000"),
		acquire("3", "x", "x:0", "x:1", "t1"),
		acquire("3", "x", "x:0", "x:1"),
		acquire("3", "x", "x:0", "x:1", "t1", "30000", "2"),
		acquire("3", "x", "x:0", "x:1", "t1", "30000", "-2"),
		acquire("3", "x", "x:0", "x:1", "t1", "30000", "0.5"),
		acquire("3", "x", "x:0", "x:1", "t1", "30000", "nan"),
		acquire("3", "x", "x:0", "x:1", "t1", "30000", "inf"),
		acquire("3", "x", "x:0", "x:1", "t1", "30000", "1e300"),
		cmd("EXISTS", "x", "x:0", "x:1"),
		acquire("3", "x", "x:0", "x:1", "t1", "30000", "0x1"),
		acquire("3", "x", "x:0", "x:1", "t2", "30000", " 0 "),
		acquire("3", "x", "x:0", "x:1", "t3", "30000", "1e0"),
		cmd("GET", "x:0"),
		cmd("GET", "x:1"),
		release("3", "x", "x:0", "x:1", "t2", "0.0", "0"),
		release("3", "x", "x:0", "x:1", "t1", "0x1", "0"),
		cmd("EXISTS", "x"),
		release("3", "x", "x:0", "x:1", "t1", "x", "1"),
		release("3", "x", "x:0", "x:1", "t1"),
		release("3", "x", "x:0", "x:1"),
		release("3", "x", "x:0", "x:1", "t1", "2", "1"),
		release("3", "x", "x:0", "x:1", "t1", "-2", "1"),
		release("3", "x", "x:0", "x:1", "t1", "0.5", "1"),
		release("0"),
		release("0", "t1", "0", "1"),
		// -1 is KEYS[1]: the record, taken as a permit's key
		acquire("3", "y", "y:0", "y:1", "t1", "30000", "-1"),
		cmd("GET", "y"),
		acquire("3", "y", "y:0", "y:1", "t1", "30000", "0"),
		release("3", "y", "y:0", "y:1", "t1", "-1", "1"),
		cmd("EXISTS", "y"),
		cmd("SET", "y", "t1"),
		release("1", "y", "t1", "-1", "1"), // EXISTS of no key fails, after the DEL
		cmd("EXISTS", "y"),

		// the TTL, checked by SET once the permit is free
		acquire("3", "z", "z:0", "z:1", "t1", "abc", "0"),
		acquire("3", "z", "z:0", "z:1", "t1", "0", "0"),
		acquire("3", "z", "z:0", "z:1", "t1", "-5", "0"),
		acquire("3", "z", "z:0", "z:1", "t1", "1e3", "0"),
		acquire("3", "z", "z:0", "z:1", "t1", "+5", "0"),
		acquire("3", "z", "z:0", "z:1", "t1", "9223372036854775807", "0"),
		cmd("EXISTS", "z", "z:0"),

		// missing keys, keys passed twice
		acquire("0"),
		acquire("0", "t1", "30000", "0"),
		acquire("1", "z", "t1", "30000", "0"),
		cmd("EXISTS", "z"),
		// (The record passed as its own permit is left out: whether the
		// acquire then overwrites it with the record depends on whether a
		// millisecond passed between its SET and its PTTL.)
		acquire("3", "e", "e:0", "e:0", "t1", "30000", "1"),
		acquire("3", "e", "e:0", "e:0", "t2", "30000", "0"),
		release("3", "e", "e:0", "e:0", "t1", "1", "0"),
		cmd("EXISTS", "e"),

		// a record with no TTL gets the permit's; a lower one is raised
		cmd("SET", "p", "semaphore:2"),
		acquire("3", "p", "p:0", "p:1", "t1", "30000", "0"),
		pttl("p", 29000, 30000),
		cmd("PEXPIRE", "p", "1000"),
		acquire("3", "p", "p:0", "p:1", "t2", "20000", "1"),
		pttl("p", 19000, 20000),
		// extend writes the record if it is missing or shorter-lived, with
		// ARGV[3] as P, over whatever it holds
		cmd("DEL", "p"),
		extend("2", "p", "p:0", "t1", "40000", "2"),
		cmd("GET", "p"),
		pttl("p", 39000, 40000),
		extend("2", "p", "p:0", "t1", "50000", "7"),
		cmd("GET", "p"),
		cmd("SET", "p", "tok", "PX", "100"),
		extend("2", "p", "p:0", "t1", "50000", "2"),
		cmd("GET", "p"),
		cmd("DEL", "p"),
		cmd("HSET", "p", "f", "v"),
		extend("2", "p", "p:0", "t1", "60000", "2"),
		cmd("TYPE", "p"),
		extend("2", "p", "p:0", "t1", "70000", ""),
		cmd("GET", "p"),
		extend("2", "p", "p:0", "t1", "80000", "\x00\r\n"),
		cmd("GET", "p"),
		// extend's errors: PEXPIRE's, then Lua's once the record is written
		extend("2", "p", "p:0", "t1", "abc", "2"),
		extend("2", "p", "p:0", "t1", "1.5", "2"),
		extend("2", "p", "p:0", "t1", "9223372036854775807", "2"),
		extend("2", "p", "p:0", "t1"),
		extend("2", "p", "p:0", "t1", "90000"),
		pttl("p:0", 89000, 90000),
		extend("2", "p", "p:1", "t2", "10000"),
		pttl("p:1", 9000, 10000),
		extend("1", "p", "t1", "1000", "2"),
		extend("0"),
		cmd("HSET", "ph", "f", "v"),
		extend("2", "p", "ph", "t1", "1000", "2"),
		extend("3", "p", "p:0", "ignored", "t1", "1000", "2"),
		cmd("EXISTS", "ignored"),
		// a TTL of 0 or less deletes the permit; the record, written only
		// if shorter-lived than that, cannot be
		extend("2", "p", "p:0", "t1", "0", "2"),
		cmd("EXISTS", "p:0"),
		cmd("DEL", "p"),
		cmd("SET", "p:1", "t2"),
		extend("2", "p", "p:1", "t2", "-1", "2"),
		cmd("EXISTS", "p", "p:1"),
		cmd("SET", "p:1", "t2"),
		cmd("SET", "p", "semaphore:2"),
		extend("2", "p", "p:1", "t2", "0", "2"),
		cmd("EXISTS", "p", "p:1"),
		cmd("GET", "p"),
		cmd("DEL", "p", "ph", "q:0", "h", "r", "x:0", "x:1", "e:0", "lk", "sem", "sem:1"),
	)

	// by SHA, then in RESP3
	bySHA := func(s scripts.Script, args ...string) step {
		return cmd(append([]string{"EVALSHA", s.SHA}, args...)...)
	}
	add(
		cmd("SCRIPT", "FLUSH"),
		bySHA(scripts.SemAcquire, semArgs("t1", "30000", "0")...),
		cmd("SCRIPT", "LOAD", acq),
		cmd("SCRIPT", "LOAD", rel),
		cmd("SCRIPT", "LOAD", ext),
		bySHA(scripts.SemAcquire, semArgs("t1", "30000", "0")...),
		bySHA(scripts.SemAcquire, semArgs("t2", "30000", "0")...),
		bySHA(scripts.SemExtend, "2", "sem", "sem:0", "t1", "60000", "2"),
		pttl("sem", 59000, 60000),
		bySHA(scripts.SemRelease, semArgs("t1", "0", "1")...),
		recv(1, 1),
		recv(2, 1),
		cmd("EXISTS", "sem"),
		cmd("HELLO", "3"),
		acquire(semArgs("t1", "30000", "0")...),
		acquire(semArgs("t2", "30000", "0")...),
		acquire(semArgs("t2", "30000", "1")...),
		acquire(semArgs("t3", "30000", "1")...),
		acquire("4", "sem", "sem:0", "sem:1", "sem:2", "t2", "30000", "2"),
		acquire("3", "lk", "lk:0", "lk:1", "t1", "30000", "x"),
		cmd("SET", "lk", "tok"),
		acquire("3", "lk", "lk:0", "lk:1", "t1", "30000", "0"),
		cmd("HSET", "h", "f", "v"),
		acquire("3", "h", "h:0", "h:1", "t1", "30000", "0"),
		extend("2", "sem", "sem:1", "t2", "90000", "2"),
		extend("2", "sem", "sem:1", "t1", "90000", "2"),
		release(semArgs("t1", "1", "1")...),
		release(semArgs("t1", "0", "1")...),
		recv(1, 1),
		recv(2, 1),
		bySHA(scripts.SemRelease, semArgs("t2", "1", "0")...),
		cmd("EXISTS", "sem", "sem:0", "sem:1"),
		on(1, 1, "PING"),
		on(2, 1, "PING"),
		cmd("HELLO", "2"),
		cmd("DEL", "lk", "h"),
	)

	// SemExtendBatch: every entry on its own terms, in order; an error
	// (a key of another type) ends the batch, keeping what was done.
	batch := scripts.SemExtendBatch.Source
	add(
		cmd("DEL", "sem", "sem:0", "sem:1"),
		acquire(semArgs("t1", "30000", "0")...),
		acquire(semArgs("t2", "30000", "1")...),
		cmd("EVAL", batch, "6", "sem", "sem:0", "sem", "sem:1", "sem", "sem:0",
			"3", "t1", "60000", "2", "t2", "60000", "2", "tX", "60000", "2"),
		pttl("sem:0", 59000, 60000),
		pttl("sem:1", 59000, 60000),
		pttl("sem", 59000, 60000),
		cmd("EVAL", batch, "0", "0"),
		cmd("SET", "other", "v"),
		cmd("EVAL", batch, "4", "other", "sem:0", "sem", "sem:1", "2", "t1", "90000", "2", "t2", "90000", "2"),
		pttl("other", -1, -1),
		pttl("sem:0", 89000, 90000),
		cmd("HSET", "hh", "f", "v"),
		cmd("EVAL", batch, "4", "sem", "sem:0", "sem", "hh", "2", "t1", "120000", "2", "t1", "120000", "2"),
		pttl("sem:0", 119000, 120000),
		cmd("DEL", "sem", "sem:0", "sem:1", "hh", "other"),
	)
	return steps
}

func TestDifferentialSemaphore(t *testing.T) {
	runDifferentialFresh(t, 3, diffSemScript())
}

// scoreReply matches ZSCORE's reply for a member: a bulk string (RESP2)
// or a double (RESP3).
var scoreReply = regexp.MustCompile(`^(?:\$([0-9]+)\r\n|,)([^\r\n]+)\r\n$`)

// scoreShape checks ZSCORE's reply for a reader added or extended with a
// TTL of ttl milliseconds in the last few seconds: the master's time in
// milliseconds plus ttl, in the text of C's "%.17g".
func scoreShape(ttl float64) func(t *testing.T, reply string) {
	return func(t *testing.T, reply string) {
		m := scoreReply.FindStringSubmatch(reply)
		require.NotNil(t, m, "reply %q", reply)
		if m[1] != "" {
			require.Equal(t, strconv.Itoa(len(m[2])), m[1], "reply %q", reply)
		}
		f, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		require.Equal(t, strconv.FormatFloat(f, 'g', 17, 64), m[2], "%%.17g")
		now := float64(time.Now().UnixMilli())
		require.True(t, now+ttl-10000 <= f && f <= now+ttl, "score %s, now %.0f, TTL %g", m[2], now, ttl)
	}
}

// diffRWScript covers the read-write lock's scripts (scripts.RWLock,
// scripts.RWRLock, scripts.RWRExtend, scripts.RWRUnlock) in every branch,
// by EVAL, EVALSHA and SCRIPT LOAD, in RESP2 and RESP3, over three
// connections, as diffSemScript does: 0 runs the scripts; 1 (RESP2) is
// subscribed to the writer's key's channel and shard channel, so a
// reader's release published on the wrong one, or published when it
// should not be, shows; 2 (RESP3) is subscribed to the shard channel and
// releases a reader itself once. The lock "rw" has its readers in
// "rw:readers" and its intent in "rw:intent". A reader expires without a
// sleep: added or extended with a TTL of 0 or less, its score is not past
// the master's time at the next script. No step depends on whether a
// millisecond passed; TTLs and waits are compared within 5 seconds.
func diffRWScript() []step {
	rw := []string{"3", "rw", "rw:readers", "rw:intent"}
	eval := func(sc scripts.Script, argv ...string) []string {
		return append(append([]string{"EVAL", sc.Source}, rw...), argv...)
	}
	lock := func(argv ...string) []string { return eval(scripts.RWLock, argv...) }
	rlock := func(argv ...string) []string { return eval(scripts.RWRLock, argv...) }
	rextend := func(argv ...string) []string { return eval(scripts.RWRExtend, argv...) }
	runlock := func(argv ...string) []string { return eval(scripts.RWRUnlock, argv...) }
	const slack = 5000
	pttl := func(key string, ttl int64) step { return shaped(intBetween(ttl-slack, ttl), "PTTL", key) }
	waiting := func(ttl int64) func(t *testing.T, reply string) { return idShape(waitHolder, ttl-slack, ttl) }
	held := func(token string, ttl int64) func(t *testing.T, reply string) {
		return holderShape(token, ttl-slack, ttl)
	}
	channel := releasedChannelPrefix + "rw"
	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }
	add(
		on(1, 1, "SUBSCRIBE", channel),
		on(1, 1, "SSUBSCRIBE", channel),
		on(2, 1, "HELLO", "3"),
		on(2, 1, "SSUBSCRIBE", channel),
		cmd("SCRIPT", "EXISTS", scripts.RWLock.SHA, scripts.RWRLock.SHA, scripts.RWRExtend.SHA, scripts.RWRUnlock.SHA),

		// a reader on a free lock: the readers' key, a sorted set of the
		// readers' expiries, with the reader's TTL
		cmd(rlock("r1", "30000")...),
		cmd("TYPE", "rw:readers"),
		cmd("ZCARD", "rw:readers"),
		pttl("rw:readers", 30000),
		shaped(scoreShape(30000), "ZSCORE", "rw:readers", "r1"),
		cmd("ZSCORE", "rw:readers", "nobody"),
		cmd("ZSCORE", "nokey", "r1"),
		cmd("ZCARD", "nokey"),
		cmd("ZSCORE", "rw:readers"),
		cmd("ZCARD"),
		cmd("ZCARD", "rw:readers", "x"),
		cmd("EXISTS", "rw", "rw:intent"),
		// a second reader, longer-lived: the readers' key lives as long as
		// it; a shorter-lived one never lowers it; the same token again
		// moves its expiry
		cmd(rlock("r2", "60000")...),
		pttl("rw:readers", 60000),
		cmd(rlock("r3", "10000")...),
		cmd(rlock("r3", "20000")...),
		pttl("rw:readers", 60000),
		shaped(scoreShape(20000), "ZSCORE", "rw:readers", "r3"),
		cmd("ZCARD", "rw:readers"),

		// a writer that waits ("1") finds readers: it writes the intent
		// with its TTL and learns how long until the last reader expires
		shaped(waiting(60000), lock("w1", "20000", "1")...),
		cmd("GET", "rw:intent"),
		pttl("rw:intent", 20000),
		cmd("EXISTS", "rw"),
		// a longer attempt raises the intent's TTL, a shorter one never
		// lowers it
		shaped(waiting(60000), lock("w1", "40000", "1")...),
		pttl("rw:intent", 40000),
		shaped(waiting(60000), lock("w2", "5000", "1")...),
		pttl("rw:intent", 40000),
		// a reader is refused while the intent exists: its PTTL
		shaped(waiting(40000), rlock("r4", "30000")...),
		cmd("ZSCORE", "rw:readers", "r4"),
		cmd("ZCARD", "rw:readers"),

		// the readers in extend theirs: the reader's expiry moves, the
		// readers' key's TTL is raised, never lowered
		cmd(rextend("r1", "90000")...),
		shaped(scoreShape(90000), "ZSCORE", "rw:readers", "r1"),
		pttl("rw:readers", 90000),
		cmd(rextend("r1", "30000")...),
		shaped(scoreShape(30000), "ZSCORE", "rw:readers", "r1"),
		pttl("rw:readers", 90000),
		shaped(waiting(60000), lock("w1", "40000", "1")...), // r2 is the last now
		// an unknown token: 0, nothing added, its TTL not read
		cmd(rextend("nobody", "30000")...),
		cmd(rextend("nobody", "abc")...),
		cmd("ZSCORE", "rw:readers", "nobody"),

		// a reader's release: 1, and its id on the writer's key's shard
		// channel only
		cmd(runlock("r3")...),
		recv(1, 1),
		recv(2, 1),
		cmd(runlock("r3")...), // released already
		cmd(runlock("nobody")...),
		cmd("ZCARD", "rw:readers"),
		// from a subscriber: its own message comes before the reply
		on(2, 2, runlock("r2")...),
		recv(1, 1),
		// the last reader: the readers' key goes, the intent stays
		cmd(runlock("r1")...),
		recv(1, 1),
		recv(2, 1),
		cmd("EXISTS", "rw:readers"),
		shaped(waiting(40000), rlock("r1", "30000")...),

		// the readers gone, a writer takes the lock and deletes the intent,
		// whoever's attempt wrote it
		cmd(lock("w2", "30000", "1")...),
		cmd("GET", "rw"),
		pttl("rw", 30000),
		cmd("EXISTS", "rw:intent", "rw:readers"),
		// the writer's key held: a writer's attempt and a reader's get its
		// holder's id and PTTL, and change nothing
		shaped(held("w2", 30000), lock("w1", "30000", "1")...),
		shaped(held("w2", 30000), rlock("r1", "30000")...),
		cmd("EXISTS", "rw:intent", "rw:readers"),
		// the writer's release (Release, on the writer's key) wakes the
		// waiters; readers come in again
		cmd("EVAL", scripts.Release.Source, "1", "rw", "w2", holderID([]byte("w2"))),
		recv(1, 1),
		recv(2, 1),
		cmd(rlock("r1", "30000")...),
		// a writer's key with no TTL: PTTL -1
		cmd("SET", "rw", "tok"),
		cmd(lock("w1", "30000", "1")...),
		cmd(rlock("r2", "30000")...),
		cmd("DEL", "rw", "rw:readers"),

		// expired readers, added with a TTL of 0 or less: not extended; the
		// release of one removes it, with no message; the next reader's or
		// writer's attempt drops them
		cmd(rlock("r1", "60000")...),
		cmd(rlock("x1", "0")...),
		cmd("ZCARD", "rw:readers"),
		cmd(rextend("x1", "30000")...),
		cmd("ZCARD", "rw:readers"),
		cmd(runlock("x1")...),
		cmd("ZCARD", "rw:readers"),
		cmd(rlock("x2", "-1000")...),
		cmd(rlock("r2", "30000")...),
		cmd("ZCARD", "rw:readers"),
		cmd(rextend("x2", "30000")...),
		cmd(runlock("x2")...),
		pttl("rw:readers", 60000),
		cmd("DEL", "rw:readers"),
		// an expired reader alone does not keep a writer out; on a new
		// readers' key it gets no TTL (-1 is not below -1)
		cmd(rlock("x1", "-1")...),
		cmd("PTTL", "rw:readers"),
		cmd(lock("w1", "30000", "1")...),
		cmd("EXISTS", "rw:readers", "rw:intent"),
		cmd("DEL", "rw"),
		// a TTL of 0 on a new readers' key: PEXPIRE 0 deletes it
		cmd(rlock("x1", "0")...),
		cmd("EXISTS", "rw:readers"),
		on(1, 1, "PING"),
		on(2, 1, "PING"),

		// a reader's TTL, read by tonumber, after the expired readers are
		// dropped: not a number fails the arithmetic, NaN the ZADD
		cmd(rlock("r1", "60000")...),
		cmd(rlock("x1", "-1000")...),
		cmd(rlock("r2", "abc")...),
		cmd("ZCARD", "rw:readers"),
		cmd(rlock("r2")...),
		cmd(rlock()...),
		cmd(rlock("r2", "")...),
		cmd(rlock("r2", "nan")...),
		cmd("ZCARD", "rw:readers"),
		cmd("DEL", "rw:readers"),
		// then PEXPIRE reads it, on a new readers' key: the reader stays,
		// the key gets no TTL
		cmd(rlock("r2", "1e3")...),
		cmd(rlock("r3", "2e3")...),
		cmd(rlock("r4", "9223372036854775807")...),
		cmd("ZCARD", "rw:readers"),
		cmd("PTTL", "rw:readers"),
		cmd(rlock("r5", "1.5")...),
		cmd("ZCARD", "rw:readers"),
		cmd("DEL", "rw:readers"),
		cmd(rlock("r1", "0x10")...),
		cmd("DEL", "rw:readers"),
		cmd(rlock("r1", " 5 ")...),
		cmd("DEL", "rw:readers"),

		// scores far enough from the master's time to be exact, as
		// "%.17g" writes them; -inf and -1e300 have expired
		cmd(rlock("r1", "60000")...),
		cmd(rlock("i1", "inf")...),
		cmd(rlock("i2", "1e300")...),
		cmd(rlock("i3", "1e30")...),
		cmd(rlock("i4", "-inf")...),
		cmd("ZSCORE", "rw:readers", "i4"),
		cmd(rlock("i5", "-1e300")...),
		cmd("ZSCORE", "rw:readers", "i4"),
		cmd("ZSCORE", "rw:readers", "i5"),
		cmd("ZSCORE", "rw:readers", "i1"),
		cmd("ZSCORE", "rw:readers", "i2"),
		cmd("ZSCORE", "rw:readers", "i3"),
		// a reader that never expires: the writer's wait, inf, becomes
		// the smallest long long (amd64's conversion)
		cmd(lock("w1", "30000", "1")...),
		pttl("rw:intent", 30000),
		cmd(runlock("i1")...),
		recv(1, 1),
		recv(2, 1),
		cmd(lock("w1", "30000", "1")...),
		cmd(rextend("i2", "60000")...),
		shaped(scoreShape(60000), "ZSCORE", "rw:readers", "i2"),
		cmd("DEL", "rw:readers", "rw:intent"),
		// a fraction of a millisecond
		cmd(rlock("r1", "60000")...),
		cmd(rlock("f1", "0.5")...),
		shaped(scoreShape(0.5), "ZSCORE", "rw:readers", "f1"),
		cmd("DEL", "rw:readers"),

		// a writer that does not wait ("1" is the only yes) writes no
		// intent, looks at neither its key nor the TTL
		cmd(rlock("r1", "60000")...),
		shaped(waiting(60000), lock("w1", "30000", "0")...),
		shaped(waiting(60000), lock("w1", "30000", "true")...),
		shaped(waiting(60000), lock("w1", "30000", "01")...),
		shaped(waiting(60000), lock("w1", "30000")...),
		shaped(waiting(60000), lock("w1", "abc", "0")...),
		shaped(waiting(60000), lock("w1")...),
		shaped(waiting(60000), "EVAL", scripts.RWLock.Source, "2", "rw", "rw:readers", "w1", "30000", "0"),
		cmd("EXISTS", "rw", "rw:intent"),
		cmd(rlock("r2", "30000")...),
		// a writer's TTL: compared with the intent's PTTL when readers
		// hold the lock, then read by SET
		cmd(lock("w1", "abc", "1")...),
		cmd(lock("w1", "", "1")...),
		cmd(lock("w1", "1.5", "1")...),
		cmd(lock("w1", "0", "1")...),
		shaped(waiting(60000), lock("w1", "-5", "1")...),
		cmd("EXISTS", "rw:intent"),
		cmd("SET", "rw:intent", "1", "PX", "100000"),
		cmd(lock("w1", "abc", "1")...),
		shaped(waiting(60000), lock("w1", "1.5", "1")...),
		pttl("rw:intent", 100000),
		cmd("DEL", "rw:intent", "rw:readers"),
		// without readers, SET reads it
		cmd(lock("w1", "abc", "1")...),
		cmd(lock("w1", "0", "1")...),
		cmd(lock("w1", "1e3", "1")...),
		cmd(lock("w1", "9223372036854775807", "1")...),
		cmd(lock("w1")...),
		cmd(lock()...),
		cmd("EXISTS", "rw"),

		// an extension's TTL, once the reader is found
		cmd(rlock("r1", "60000")...),
		cmd(rextend("r1", "abc")...),
		cmd(rextend("r1")...),
		cmd(rextend("r1", "nan")...),
		cmd(rextend()...),
		cmd(runlock()...),
		cmd(rextend("r1", "9223372036854775807")...),
		cmd(rextend("r1", "inf")...),
		cmd("ZSCORE", "rw:readers", "r1"),
		cmd(rextend("r1", "-1")...),
		cmd(rextend("r1", "60000")...),
		cmd(runlock("r1")...),
		cmd("EXISTS", "rw:readers"),

		// missing keys
		cmd("EVAL", scripts.RWLock.Source, "0"),
		cmd("EVAL", scripts.RWLock.Source, "1", "rw", "w1", "30000"),
		cmd("EVAL", scripts.RWRLock.Source, "0", "r1", "30000"),
		cmd("EVAL", scripts.RWRLock.Source, "1", "rw", "r1", "30000"),
		cmd("EVAL", scripts.RWRLock.Source, "2", "rw", "rw:readers", "r1", "30000"),
		cmd("EVAL", scripts.RWRExtend.Source, "1", "rw", "r1", "30000"),
		cmd("EVAL", scripts.RWRUnlock.Source, "1", "rw", "r1"),
		cmd("EVAL", scripts.RWRUnlock.Source, "0"),
		cmd("EXISTS", "rw", "rw:readers"),
		// a writer with no intent's key: DEL fails after the SET, which
		// stays; with readers, the PTTL fails first
		cmd("EVAL", scripts.RWLock.Source, "2", "rw", "rw:readers", "w1", "30000"),
		cmd("GET", "rw"),
		cmd("DEL", "rw"),
		cmd(rlock("r1", "30000")...),
		cmd("EVAL", scripts.RWLock.Source, "2", "rw", "rw:readers", "w1", "30000", "1"),
		cmd("EXISTS", "rw"),
		cmd("DEL", "rw:readers"),

		// a fenced writer (the counter's key fourth, the proposal fourth):
		// no counter, {1}; a counter below the proposal is raised and
		// answered as it was; one above it stays; a counter that is not a
		// number, or no proposal, fails the comparison after the SET
		cmd(append(append([]string{"EVAL", scripts.RWLock.Source, "4"}, rw[1:]...), "fence", "w1", "30000", "0", "100")...),
		cmd("EXISTS", "fence"),
		cmd("DEL", "rw"),
		cmd("SET", "fence", "42"),
		cmd(append(append([]string{"EVAL", scripts.RWLock.Source, "4"}, rw[1:]...), "fence", "w1", "30000", "0", "100")...),
		cmd("GET", "fence"),
		cmd("DEL", "rw"),
		cmd(append(append([]string{"EVAL", scripts.RWLock.Source, "4"}, rw[1:]...), "fence", "w1", "30000", "1", "7")...),
		cmd("GET", "fence"),
		cmd("DEL", "rw"),
		cmd(append(append([]string{"EVAL", scripts.RWLock.Source, "4"}, rw[1:]...), "fence", "w1", "30000", "1")...),
		cmd("GET", "rw"),
		cmd("DEL", "rw"),
		cmd("SET", "fence", "x"),
		cmd(append(append([]string{"EVAL", scripts.RWLock.Source, "4"}, rw[1:]...), "fence", "w1", "30000", "0", "100")...),
		cmd("GET", "fence"),
		cmd("DEL", "rw", "fence"),
		// a fenced writer that finds readers answers as an unfenced one
		cmd(rlock("r1", "30000")...),
		shaped(waiting(30000), append(append([]string{"EVAL", scripts.RWLock.Source, "4"}, rw[1:]...), "fence", "w1", "30000", "0", "100")...),
		cmd("EXISTS", "fence", "rw"),
		cmd("DEL", "rw:readers"),

		// a writer's key that holds a hash: WRONGTYPE, raised by the GET
		cmd("HSET", "rw", "f", "v"),
		cmd(lock("w1", "30000", "1")...),
		cmd(rlock("r1", "30000")...),
		cmd("EXISTS", "rw:readers", "rw:intent"),
		cmd("DEL", "rw"),
		// readers that are a string or a hash: WRONGTYPE, nothing changed
		cmd("SET", "rw:readers", "x"),
		cmd(lock("w1", "30000", "1")...),
		cmd(rlock("r1", "30000")...),
		cmd(rextend("r1", "30000")...),
		cmd(runlock("r1")...),
		cmd("ZSCORE", "rw:readers", "r1"),
		cmd("ZCARD", "rw:readers"),
		cmd("GET", "rw:readers"),
		cmd("EXISTS", "rw", "rw:intent"),
		cmd("DEL", "rw:readers"),
		cmd("HSET", "rw:readers", "f", "v"),
		cmd(lock("w1", "30000", "1")...),
		cmd(runlock("r1")...),
		cmd("DEL", "rw:readers"),
		// the readers' key, a sorted set, to the commands and scripts of
		// strings and hashes: WRONGTYPE; SET overwrites it
		cmd(rlock("r1", "30000")...),
		cmd("GET", "rw:readers"),
		cmd("SET", "rw:readers", "v", "GET"),
		cmd("TYPE", "rw:readers"),
		cmd("HGET", "rw:readers", "f"),
		cmd("HSET", "rw:readers", "f", "v"),
		cmd("HGETALL", "rw:readers"),
		cmd("EVAL", scripts.RWLock.Source, "3", "rw:readers", "rw", "rw:intent", "w1", "30000", "1"),
		cmd("EVAL", scripts.Release.Source, "1", "rw:readers", "r1", holderID([]byte("r1"))),
		cmd("EVAL", scripts.LockWait.Source, "1", "rw:readers", "w1", "30000"),
		cmd("PEXPIRE", "rw:readers", "50000"),
		pttl("rw:readers", 50000),
		cmd("SET", "rw:readers", "v"),
		cmd("TYPE", "rw:readers"),
		cmd("PTTL", "rw:readers"),
		cmd(rlock("r1", "30000")...),
		cmd("DEL", "rw:readers"),
		// an intent's key of another type or with no TTL refuses no
		// reader; a writer's attempt overwrites it
		cmd("HSET", "rw:intent", "f", "v"),
		cmd(rlock("r1", "30000")...),
		shaped(waiting(30000), lock("w1", "30000", "1")...),
		cmd("TYPE", "rw:intent"),
		pttl("rw:intent", 30000),
		cmd("SET", "rw:intent", "1"),
		cmd(rlock("r2", "30000")...),
		cmd("DEL", "rw:intent", "rw:readers"),
		on(1, 1, "PING"),
		on(2, 1, "PING"),
	)

	// by SHA, then in RESP3
	bySHA := func(sc scripts.Script, argv ...string) []string {
		return append(append([]string{"EVALSHA", sc.SHA}, rw...), argv...)
	}
	add(
		cmd("SCRIPT", "FLUSH"),
		cmd(bySHA(scripts.RWRLock, "r1", "30000")...),
		cmd("SCRIPT", "LOAD", scripts.RWLock.Source),
		cmd("SCRIPT", "LOAD", scripts.RWRLock.Source),
		cmd("SCRIPT", "LOAD", scripts.RWRExtend.Source),
		cmd("SCRIPT", "LOAD", scripts.RWRUnlock.Source),
		cmd(bySHA(scripts.RWRLock, "r1", "30000")...),
		cmd(bySHA(scripts.RWRExtend, "r1", "60000")...),
		pttl("rw:readers", 60000),
		shaped(waiting(60000), bySHA(scripts.RWLock, "w1", "30000", "1")...),
		cmd(bySHA(scripts.RWRUnlock, "r1")...),
		recv(1, 1),
		recv(2, 1),
		cmd(bySHA(scripts.RWLock, "w1", "30000", "1")...),
		cmd("DEL", "rw"),
		cmd("HELLO", "3"),
		cmd(rlock("r1", "30000")...),
		shaped(scoreShape(30000), "ZSCORE", "rw:readers", "r1"),
		cmd("ZSCORE", "rw:readers", "nobody"),
		cmd(rlock("i1", "inf")...),
		cmd("ZSCORE", "rw:readers", "i1"),
		cmd(rlock("i2", "1e300")...),
		cmd("ZSCORE", "rw:readers", "i2"),
		cmd(rlock("i4", "-inf")...),
		cmd("ZSCORE", "rw:readers", "i4"),
		cmd(lock("w1", "30000", "1")...),
		shaped(waiting(30000), rlock("r2", "30000")...),
		cmd(rextend("r1", "abc")...),
		cmd(runlock("i1")...),
		recv(1, 1),
		recv(2, 1),
		cmd(runlock("i2")...),
		recv(1, 1),
		recv(2, 1),
		cmd(runlock("r1")...),
		recv(1, 1),
		recv(2, 1),
		cmd(lock("w1", "30000", "1")...),
		shaped(held("w1", 30000), rlock("r1", "30000")...),
		cmd("ZCARD", "rw:readers"),
		cmd("DEL", "rw"),
		cmd("HSET", "rw:readers", "f", "v"),
		cmd(rlock("r1", "30000")...),
		cmd("HELLO", "2"),
		on(1, 1, "PING"),
		on(2, 1, "PING"),
		cmd("DEL", "rw", "rw:readers", "rw:intent"),
	)

	// RWRExtendBatch: every reader on its own terms, in order; an error
	// (a key of another type) ends the batch, keeping what was done.
	batch := scripts.RWRExtendBatch.Source
	add(
		cmd(rlock("r1", "30000")...),
		cmd(rlock("r2", "30000")...),
		cmd("EVAL", batch, "3", "rw:readers", "rw:readers", "rw:readers", "3", "r1", "60000", "x", "r2", "90000", "x", "rX", "60000", "x"),
		shaped(scoreShape(60000), "ZSCORE", "rw:readers", "r1"),
		shaped(scoreShape(90000), "ZSCORE", "rw:readers", "r2"),
		pttl("rw:readers", 90000),
		cmd("EVAL", batch, "0", "0"),
		cmd("SET", "s", "v"),
		cmd("EVAL", batch, "2", "rw:readers", "s", "2", "r1", "120000", "x", "r1", "120000", "x"),
		shaped(scoreShape(120000), "ZSCORE", "rw:readers", "r1"),
		cmd("DEL", "rw", "rw:readers", "rw:intent", "s"),
	)
	return steps
}

func TestDifferentialRWLock(t *testing.T) {
	runDifferentialFresh(t, 3, diffRWScript())
}

// TestDifferentialLockOnSemaphore: the lock scripts refuse a semaphore's
// record ("semaphore:"+P) under a lock's name with WRONGKIND, and take any
// other value for a holder, byte for byte as Redis does, whatever the
// name (Redis' error_reply passes it on cut at a NUL byte and with its
// line breaks rewritten).
func TestDifferentialLockOnSemaphore(t *testing.T) {
	real := redistest.Start(t, redistest.Options{})
	fake := StartT(t, Options{})
	fc, rc := dial(t, fake.Addr()), dial(t, real.Addr())
	var steps []step
	for _, rec := range []string{"semaphore:2", "semaphore:", "semaphore", "Semaphore:2", "semaphore:2\x00", "xsemaphore:2"} {
		for _, name := range []string{"k", "a b", "a\r\nb", "\nk", "k\x00z", ""} {
			rw := []string{"3", name, name + ":readers", name + ":intent"}
			steps = append(steps,
				cmd("SET", name, rec),
				cmd(append([]string{"EVAL", scripts.LockWait.Source, "1", name}, "tok", "30000")...),
				cmd(append([]string{"EVAL", scripts.LockMulti.Source, "2", "free", name}, "tok", "30000")...),
				cmd("EXISTS", "free"),
				cmd(append([]string{"EVAL", scripts.FenceLock.Source, "2", name, fenceKey}, "tok", "30000", "5")...),
				cmd(append(append([]string{"EVAL", scripts.RWLock.Source}, rw...), "tok", "30000", "0")...),
				cmd(append(append([]string{"EVAL", scripts.RWRLock.Source}, rw...), "tok", "30000")...),
				cmd("EXISTS", fenceKey, name+":readers", name+":intent"),
				cmd("DEL", name),
			)
		}
	}
	runDifferential(t, fc, rc, steps)
}

// diffElectScript covers the election's scripts (scripts.ElectAnnounce,
// ElectExtendBatch, ElectRelease) in every branch, over two connections:
// 0 runs the scripts, 1 is subscribed to the leader's key's shard channel
// and reads what they publish.
func diffElectScript() []step {
	ann, ext, rel := scripts.ElectAnnounce.Source, scripts.ElectExtendBatch.Source, scripts.ElectRelease.Source
	return []step{
		on(1, 1, "SSUBSCRIBE", "volley:released:e"),
		// Nobody leads: nothing is announced, extended or released.
		cmd("EVAL", ann, "2", "e", "e:leader", "tok", "5 me"),
		cmd("EVAL", ext, "2", "e", "e:leader", "1", "tok", "60000", "2"),
		cmd("EVAL", rel, "2", "e", "e:leader", "tok", "1"),
		cmd("SET", "e", "tok", "PX", "60000"),
		// Another token: refused.
		cmd("EVAL", ann, "2", "e", "e:leader", "other", "6 them"),
		cmd("EXISTS", "e:leader"),
		// The leader's: the record, with the key's PTTL, and the message.
		cmd("EVAL", ann, "2", "e", "e:leader", "tok", "5 me"),
		recv(1, 1),
		cmd("GET", "e:leader"),
		shaped(intBetween(55000, 60000), "PTTL", "e:leader"),
		// Extended with the key; another token's entry is not.
		cmd("EVAL", ext, "4", "e", "e:leader", "e", "e:leader", "2", "tok", "90000", "2", "other", "1000", "2"),
		shaped(intBetween(85000, 90000), "PTTL", "e:leader"),
		shaped(intBetween(85000, 90000), "PTTL", "e"),
		// Released: quietly by another token (nothing), then waking.
		cmd("EVAL", rel, "2", "e", "e:leader", "other", "1"),
		cmd("EVAL", rel, "2", "e", "e:leader", "tok", "1"),
		recv(1, 1),
		cmd("EXISTS", "e", "e:leader"),
		// A key without a TTL announces nothing.
		cmd("SET", "e", "tok"),
		cmd("EVAL", ann, "2", "e", "e:leader", "tok", "5 me"),
		cmd("EVAL", rel, "2", "e", "e:leader", "tok", "0"),
		cmd("EXISTS", "e", "e:leader"),
	}
}

func TestDifferentialElection(t *testing.T) {
	runDifferentialFresh(t, 2, diffElectScript())
}
