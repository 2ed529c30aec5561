package pipe

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"strconv"

	"github.com/volleylock/volley/resp"
)

// evalshaVerb is how an EVALSHA command's encoding goes on after its
// array header: the verb, then the 40-digit SHA-1 as a bulk string.
var evalshaVerb = []byte("$7\r\nEVALSHA\r\n$40\r\n")

// scriptsBySHA maps the hex SHA-1 of each of scripts to its source (see
// Conn.evalInstead); nil when there are none.
func scriptsBySHA(scripts []string) map[string]string {
	if len(scripts) == 0 {
		return nil
	}
	m := make(map[string]string, len(scripts))
	for _, src := range scripts {
		sum := sha1.Sum([]byte(src))
		m[hex.EncodeToString(sum[:])] = src
	}
	return m
}

// isNoScript reports whether a reply is the error -NOSCRIPT.
func isNoScript(vals []resp.Value) bool {
	return len(vals) > 0 && vals[0].IsError() && string(vals[0].ErrorPrefix()) == "NOSCRIPT"
}

// evalInstead is the answer to a -NOSCRIPT reply to r (see
// Options.Scripts): when its command is an EVALSHA of one of
// Options.Scripts and r is still wanted (its caller waits for it, or it
// asked for replay and its deadline has not passed at now), it turns r's
// command into the EVAL form of the same call and queues r again on
// socket s, and reports true: r stays pending, and completes with the
// EVAL's reply. Otherwise it reports false and r is completed with the
// NOSCRIPT as usual. r must have been taken off inflight by the caller.
func (c *Conn) evalInstead(s *socket, r *Request, now int64) bool {
	waited := r.waited()
	if c.scripts == nil || r.replayBy <= now && !waited {
		return false
	}
	cmd := r.Cmd
	// "*<n>\r\n$7\r\nEVALSHA\r\n$40\r\n<sha>\r\n..."
	head := bytes.IndexByte(cmd, '\n') + 1
	if head == 0 || !bytes.HasPrefix(cmd[head:], evalshaVerb) {
		return false
	}
	at := head + len(evalshaVerb)
	if len(cmd) < at+40+2 {
		return false
	}
	src, ok := c.scripts[string(bytes.ToLower(cmd[at:at+40]))]
	if !ok {
		return false
	}
	eval := make([]byte, 0, len(cmd)+len(src))
	eval = append(eval, cmd[:head]...)
	eval = append(eval, "$4\r\nEVAL\r\n$"...)
	eval = strconv.AppendInt(eval, int64(len(src)), 10)
	eval = append(eval, "\r\n"...)
	eval = append(eval, src...)
	eval = append(eval, cmd[at+40:]...)

	c.mu.Lock()
	if c.sock != s {
		// Reset since the reply: fail has not seen r (off inflight).
		err := c.err
		if !c.closed {
			r.Cmd = eval
			c.keepForReplay(r, now)
		}
		c.mu.Unlock()
		r.complete(nil, err)
		return true
	}
	r.Cmd = eval
	r.sent = now
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	s.wakeWriter()
	return true
}
