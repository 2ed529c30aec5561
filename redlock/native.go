package redlock

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// Native commands. Newer servers compare a key's value and act on it in
// one command, which costs a master well under half of what a Lua script
// does: SET key value IFEQ old (Valkey 8.1, Redis 8.4), DELIFEQ key value
// (Valkey 9.0) and DELEX key IFEQ value (Redis 8.4). A command of the
// table (command.go) may name such forms, in order of preference
// (command.natives); a burst sends each master the first form that
// master's server has, by the name and version its INFO gave at the
// latest connect (pipe.ServerInfo), and the script to the others. A
// master that reconnects, restarts or is replaced is judged again from
// its new connection's INFO.
//
// A server that refuses a native form (an ACL without the command, a
// proxy that does not know it) answers NOPERM or ERR: the burst sends
// that master the script instead, within the same round, and the Client
// uses the script for that form from then on (ACLs and proxies are a
// deployment's, alike on every master).

// nativeVerb names a native form.
type nativeVerb uint8

const (
	verbSetIfEq   nativeVerb = iota // SET key token IFEQ token PX ttl: OK, or nil (not ours; a missing key is never created)
	verbDelIfEq                     // DELIFEQ key token: 1, or 0 (not ours)
	verbDelexIfEq                   // DELEX key IFEQ token: 1, or 0 (not ours)
	numVerbs
)

// since is a server name and the first version of it that has a form.
type since struct {
	server       string
	major, minor int
}

// verbs is what each native form answers and which servers have it.
var verbs = [numVerbs]struct {
	name   string
	answer answerShape
	since  []since
}{
	verbSetIfEq:   {name: "SET IFEQ", answer: answerSet, since: []since{{"valkey", 8, 1}, {"redis", 8, 4}}},
	verbDelIfEq:   {name: "DELIFEQ", answer: answerVote, since: []since{{"valkey", 9, 0}}},
	verbDelexIfEq: {name: "DELEX IFEQ", answer: answerVote, since: []since{{"redis", 8, 4}}},
}

// encode appends form v with a, acting on a.key only if its value is
// a.tok: a SET IFEQ keeps it for a.arg milliseconds (an extension); a
// delete takes a.tok alone. Bursts (encodeNatives) and the probe at New
// (probeNatives) encode here. (A switch, not a function in verbs: an
// indirect call would make the caller's token escape, an allocation per
// Unlock.)
func (v nativeVerb) encode(w *wire, c *Client, a *args) {
	key, tok := a.key, a.tok[:]
	switch v {
	case verbSetIfEq: // SET key tok IFEQ tok PX arg
		w.b = resp.AppendArrayHeader(w.b, 7)
		w.b = resp.AppendBulkString(w.b, "SET")
		w.key(c, key, "")
		w.b = resp.AppendBulk(w.b, tok)
		w.b = resp.AppendBulkString(w.b, "IFEQ")
		w.b = resp.AppendBulk(w.b, tok)
		w.b = resp.AppendBulkString(w.b, "PX")
		w.b = resp.AppendBulk(w.b, a.arg)
	case verbDelIfEq: // DELIFEQ key tok
		w.b = resp.AppendArrayHeader(w.b, 3)
		w.b = resp.AppendBulkString(w.b, "DELIFEQ")
		w.key(c, key, "")
		w.b = resp.AppendBulk(w.b, tok)
	case verbDelexIfEq: // DELEX key IFEQ tok
		w.b = resp.AppendArrayHeader(w.b, 4)
		w.b = resp.AppendBulkString(w.b, "DELEX")
		w.key(c, key, "")
		w.b = resp.AppendBulkString(w.b, "IFEQ")
		w.b = resp.AppendBulk(w.b, tok)
	}
}

// has reports whether the server info describes has form v.
func (v nativeVerb) has(info *pipe.ServerInfo) bool {
	for _, s := range verbs[v].since {
		if info.Server == s.server && info.VersionAtLeast(s.major, s.minor) {
			return true
		}
	}
	return false
}

// The native forms of the commands that have them.
var (
	extendNatives  = []nativeVerb{verbSetIfEq}
	releaseNatives = []nativeVerb{verbDelIfEq, verbDelexIfEq}
)

// nativeFor returns the native form of cmd that cn's server gets, if any:
// the first of cmd.natives that the server has and the Client has not
// seen refused.
func (c *Client) nativeFor(cmd *command, cn *pipe.Conn) (nativeVerb, bool) {
	info := cn.Info()
	if info == nil {
		return 0, false
	}
	off := c.nativeOff.Load()
	for _, v := range cmd.natives {
		if off&(1<<v) == 0 && v.has(info) {
			return v, true
		}
	}
	return 0, false
}

// anyNative reports whether a master's server, for a command at place p,
// runs a native form of cmd (see nativeFor): otherwise a burst encodes
// none. On masters without native commands (Redis before 8.4, Valkey
// before 8.1) encoding them took 4% of a Lock+Unlock's client CPU at 256
// goroutines, for forms no master was sent.
func (c *Client) anyNative(cmd *command, p int) bool {
	for i := range c.masters {
		if _, ok := c.nativeFor(cmd, c.connFor(i, p)); ok {
			return true
		}
	}
	return false
}

// refuseNative makes the Client send the script instead of form v from
// now on.
func (c *Client) refuseNative(v nativeVerb) { c.nativeOff.Or(1 << v) }

// nativeChecks makes the reply checks of the native forms (see
// replycheck.go): each also learns a refusal (see refusal), on the
// socket's reader, also for answers nobody reads.
func (c *Client) nativeChecks() {
	for v := range numVerbs {
		fits := answers[verbs[v].answer].fits
		c.natCheck[v] = func(vals []resp.Value) bool {
			if refusal(vals) {
				c.refuseNative(v)
			}
			return fits(vals)
		}
	}
}

// refusal reports whether a native form's answer says that the server
// does not run it: an ACL's NOPERM naming the command, an unknown command,
// or a syntax error (a server that does not know IFEQ).
func refusal(vals []resp.Value) bool {
	if len(vals) != 1 || !vals[0].IsError() {
		return false
	}
	return refused(string(vals[0].ErrorPrefix()), string(vals[0].Bytes))
}

// refused is refusal of an error reply's prefix and whole message.
func refused(prefix, msg string) bool {
	switch prefix {
	case "NOPERM":
		return strings.Contains(msg, "command")
	case "ERR":
		return strings.Contains(msg, "unknown command") || strings.Contains(msg, "syntax error")
	}
	return false
}

// uncheckedNativeRelease, set by tests only, makes the native releases a
// plain DEL of the key, without the value check: the broken variant that
// the torture test of the native path must catch.
var uncheckedNativeRelease bool

// nativeForms are a burst's native forms, encoded by op.encode beside the
// script's (see encodeNatives).
type nativeForms struct {
	cmd  *command       // whose forms; nil when the burst has none
	base *wire          // the script's form (the op's cmd)
	w    [numVerbs]wire // each form of cmd.natives
	pub  wire           // with cmd.wake: the release's SPUBLISH, sent right behind the native form
}

// encodeNatives encodes cmd's native forms with a (see nativeVerb.encode),
// at the place of the op's command, which op.encode has just written.
// op.encode calls it for a command that has them, on one key, when a
// master's server runs one of them (anyNative) and
// Config.DisableNativeCommands is not set; otherwise the op has none
// (nat.cmd nil).
func (o *op) encodeNatives(cmd *command, a *args) {
	key := a.key
	n := &o.nat
	n.cmd, n.base = cmd, &o.cmd
	for _, v := range cmd.natives {
		w := &n.w[v]
		w.reset()
		w.place = o.cmd.place
		if uncheckedNativeRelease && v != verbSetIfEq {
			w.verbKey(o.c, "DEL", key)
			continue
		}
		v.encode(w, o.c, a)
	}
	n.pub.reset()
	if cmd.wake {
		n.pub.place = o.cmd.place
		n.pub.b = resp.AppendArrayHeader(n.pub.b, 3)
		n.pub.b = resp.AppendBulkString(n.pub.b, "SPUBLISH")
		n.pub.channel(o.c, key)
		n.pub.b = resp.AppendBulk(n.pub.b, a.id) // the release's id (command.wake)
	}
}

// forget sends the op's command to master i without waiting (see
// sendForget): its native form when the master's server has one.
func (o *op) forget(i int) {
	cn := o.c.connFor(i, o.cmd.place)
	r := pipe.NewRequest()
	r.ReplayUntil = o.replayUntil(time.Now())
	form, b, then := o.c.formFor(o.natives(), &o.cmd, cn, i, &o.fan.scratch, &o.fan.scratch2)
	r.Cmd = append(r.Cmd[:0], b...)
	if form == 0 {
		pipe.SetCheck(r, answers[o.command.answer].fits) // unread, its reply still shows a torn stream
		cn.SendForget(r)
		return
	}
	pipe.SetCheck(r, o.c.natCheck[form-1]) // also learns a refusal
	cn.SendForget(r)
	if then != nil {
		// Rare (a failed attempt that may have held a quorum): two writes.
		pub := pipe.NewRequest()
		pub.Cmd = append(pub.Cmd[:0], then...)
		pipe.SetCheck(pub, fitsInteger)
		cn.SendForget(pub)
	}
}

// natives returns the native forms of the op's command, nil when it has
// none (a command encoded without encodeNatives, such as the hand-over,
// leaves the previous command's forms behind: they are not its own).
func (o *op) natives() *nativeForms {
	if o.command == nil || o.nat.cmd != o.command {
		return nil
	}
	return &o.nat
}

// formFor returns the form of a burst's command w that master i, on
// cn's server, gets: form v+1 and its bytes when n holds w's native forms
// and cn's server runs v (see Client.nativeFor), with then the release's
// SPUBLISH to send right behind it (nil when none); else form 0 and w's
// own bytes. A burst (fanout.sendTo) and a send without waiting
// (op.forget) choose by it; the bytes are master i's (Client.forMaster),
// in *scratch and *then's scratch2 where they are a copy.
func (c *Client) formFor(n *nativeForms, w *wire, cn *pipe.Conn, i int, scratch, scratch2 *[]byte) (form uint8, b, then []byte) {
	if n != nil && w == n.base {
		if v, ok := c.nativeFor(n.cmd, cn); ok {
			if len(n.pub.b) > 0 {
				then = c.forMaster(&n.pub, i, scratch2)
			}
			return uint8(v) + 1, c.forMaster(&n.w[v], i, scratch), then
		}
	}
	return 0, c.forMaster(w, i, scratch), nil
}

// probeKey is the key probeNatives asks about; it is never written.
const probeKey = "volley:native:probe"

// probeNatives asks server sv, at New, whether it runs each native form
// its version has (an ACL may refuse it): a form that it refuses is the
// script's from then on, as if a lock's command had been refused. The
// probes change nothing: their key holds no value they compare with.
// The lock's commands still learn of a refusal later (an ACL changed
// after New, a master that joined later).
func (c *Client) probeNatives(ctx context.Context, sv server, wait time.Duration) {
	if c.cfg.DisableNativeCommands {
		return
	}
	info := sv.cn.Info()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tok := newToken() // a value the key, never written, does not hold
	for v := range numVerbs {
		if !v.has(info) || c.nativeOff.Load()&(1<<v) != 0 {
			continue
		}
		var w wire
		w.place = c.placement(probeKey)
		v.encode(&w, c, &args{key: probeKey, tok: &tok, arg: []byte("1")})
		r := pipe.NewRequest()
		r.Cmd = append(r.Cmd[:0], w.b...)
		sv.cn.Send(r, nil)
		if err := sv.cn.Wait(ctx, r); err != nil {
			if pe := (*pipe.Error)(nil); errors.As(err, &pe) && pe.Op == pipe.OpWait {
				return // r is the connection's now; the masters' answers go unheard
			}
		} else if refusal(r.Reply()) {
			c.refuseNative(v)
		}
		r.Release()
	}
}
