package redistest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/volleylock/volley/resp"
)

// Do sends one command to addr on a connection of its own and returns the
// reply (its values copied: the caller owns them), or the error reply as
// an error. A reply is a tree stored flat, as resp.Value documents: vals[0]
// is the reply, an aggregate's children follow it. A control channel for
// tests (CLUSTER, SENTINEL, ROLE, INFO), not a client: it dials for every
// command and waits at most 10 seconds for the reply.
func Do(addr string, args ...string) ([]resp.Value, error) {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("redistest: %s: %w", addr, err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(resp.AppendCommand(nil, args...)); err != nil {
		return nil, fmt.Errorf("redistest: %s: %w", addr, err)
	}
	vals, err := resp.NewReader(nc, 0, resp.Limits{}).ReadReply()
	if err != nil {
		return nil, fmt.Errorf("redistest: %s: %s: %w", addr, args[0], err)
	}
	if len(vals) > 0 && vals[0].IsError() {
		return nil, fmt.Errorf("redistest: %s: %s: %w", addr, strings.Join(args[:min(2, len(args))], " "), vals[0].Err())
	}
	out := make([]resp.Value, len(vals))
	for i, v := range vals {
		out[i] = v
		out[i].Bytes = append([]byte(nil), v.Bytes...)
	}
	return out, nil
}

// doText sends a command whose reply is a string (INFO, CLUSTER INFO,
// CLUSTER MYID) and returns that string.
func doText(addr string, args ...string) (string, error) {
	vals, err := Do(addr, args...)
	if err != nil {
		return "", err
	}
	if t := vals[0].Type; t != resp.TypeBulk && t != resp.TypeSimpleString || vals[0].Null {
		return "", fmt.Errorf("redistest: %s: %s: a %s reply, want a string", addr, args[0], t)
	}
	return string(vals[0].Bytes), nil
}

// children returns the indexes in vals of the children of the aggregate
// at vals[i] (none for a scalar).
func children(vals []resp.Value, i int) []int {
	var out []int
	for j, end := i+1, i+1+vals[i].Size; j < end; j += 1 + vals[j].Size {
		out = append(out, j)
	}
	return out
}

// infoField returns the value of field in the text of an INFO or CLUSTER
// INFO reply ("" when absent).
func infoField(text, field string) string {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// role is a server's answer to ROLE.
type role struct {
	name    string // "master", "slave" or "sentinel"
	primary string // a replica's primary, host:port
	state   string // a replica's link: "connected" once in sync
}

func (r role) String() string {
	if r.name == "slave" {
		return fmt.Sprintf("replica of %s (%s)", r.primary, r.state)
	}
	return r.name
}

// roleOf asks addr for its ROLE.
func roleOf(addr string) (role, error) {
	vals, err := Do(addr, "ROLE")
	if err != nil {
		return role{}, err
	}
	kids := children(vals, 0)
	if len(kids) == 0 {
		return role{}, fmt.Errorf("redistest: %s: ROLE: an empty reply", addr)
	}
	r := role{name: string(vals[kids[0]].Bytes)}
	if r.name == "slave" {
		if len(kids) < 4 {
			return role{}, fmt.Errorf("redistest: %s: ROLE: %d elements for a replica, want 5", addr, len(kids))
		}
		r.primary = net.JoinHostPort(string(vals[kids[1]].Bytes), strconv.FormatInt(vals[kids[2]].Int, 10))
		r.state = string(vals[kids[3]].Bytes)
	}
	return r, nil
}

// waitFor calls f every 20ms until it returns nil or deadline passes, and
// then returns f's last error, saying how long it waited.
func waitFor(deadline time.Time, f func() error) error {
	start := time.Now()
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %v: %w", time.Since(start).Round(time.Millisecond), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// withTails returns err with the last lines of the logs of servers
// appended, for errors of waits that gave up.
func withTails(err error, servers []*Server) error {
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "\n--- %s log tail:\n%s", s.Addr(), s.LogTail(10))
	}
	return fmt.Errorf("%w%s", err, b.String())
}
