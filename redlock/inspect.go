package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
	"github.com/volleylock/volley/internal/pipe"
)

// errNoAnswer is a KeyState's Err when its master did not answer within
// MasterTimeout.
var errNoAnswer = errors.New("redlock: no answer within Config.MasterTimeout")

// KeyState is what one master holds for one key, as Inspect saw it.
type KeyState struct {
	Key    string
	Addr   string // the master
	Exists bool
	// Ours reports that the key holds the inspecting Lock's token (always
	// false from Client.Inspect, which has no token). The token itself is
	// never shown.
	Ours bool
	// TTL is the key's remaining time to live; zero when the key does not
	// exist, negative when it exists without one (not a Volley lock).
	TTL time.Duration
	Err error // the master could not answer: the other fields mean nothing
}

// Inspect shows, without taking or changing anything, what each master
// holds for key: whether it exists and its remaining TTL. It is for
// operators and debugging ("who holds it, until when?"), not for deciding
// whether to lock: the answer is stale by the time it returns. It waits at
// most MasterTimeout (less if ctx ends sooner) and returns one KeyState per
// master, in Config.Addrs order; a master that did not answer has Err set.
// It allocates.
func (c *Client) Inspect(ctx context.Context, key string) ([]KeyState, error) {
	if key == "" {
		return nil, invalidf("empty key")
	}
	return c.inspect(ctx, key, []string{key}, nil)
}

// Inspect shows, for each of the lock's keys in Keys order, what each
// master holds (see Client.Inspect), and whether it is this lock's token.
// A healthy held lock shows Ours on at least a quorum of masters for every
// key.
func (l *Lock) Inspect(ctx context.Context) ([]KeyState, error) {
	if l.c == nil {
		return nil, ErrNotHeld
	}
	return l.c.inspect(ctx, l.key, l.Keys(), &l.tok)
}

// inspect shows keys, which a lock (or semaphore) called name holds: over
// a Redis Cluster, at name's place.
func (c *Client) inspect(ctx context.Context, name string, keys []string, tok *token) ([]KeyState, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if ctx.Err() != nil {
		return nil, ctxerr.Of(ctx)
	}
	n := len(c.masters)
	in := inspection{tok: tok, out: make([]KeyState, len(keys)*n)}
	// Slot 2s asks GET and slot 2s+1 PTTL for state s: key s/n on master s%n.
	in.f = newFanout(c, 2*len(in.out))
	f := &in.f
	defer f.release()
	place := c.placement(name)
	f.begin(c.cfg.MasterTimeout, c.claimable(place), nil)
	var cmd wire
	for k, key := range keys {
		for i := range c.masters {
			s := k*n + i
			for j, verb := range [2]string{"GET", "PTTL"} {
				cmd.reset()
				cmd.place = place
				cmd.verbKey(c, verb, key)
				f.sendTo(2*s+j, i, &cmd)
			}
			in.out[s] = KeyState{Key: key, Addr: f.sentTo[2*s].Addr()}
		}
	}
	in.got = make([]bool, 2*len(in.out)) // per slot: answered
	var waitErr error
	switch f.gather(&in, ctx.Done()) {
	case fanTimeout:
		waitErr = errNoAnswer
	case fanDone:
		waitErr = ctxerr.Of(ctx)
	default:
		return in.out, nil
	}
	// The rest were given up: their states say why they are unknown.
	for s := range in.out {
		if in.out[s].Err == nil && (!in.got[2*s] || !in.got[2*s+1]) {
			in.out[s].Err = waitErr
		}
	}
	if ctx.Err() != nil {
		return in.out, waitErr
	}
	return in.out, nil
}

// inspection is one Inspect's round: its states, filled in as the
// answers come (see gathered).
type inspection struct {
	f   fanout
	tok *token
	out []KeyState
	got []bool // per slot: answered
}

// gathered reads one GET or PTTL answer into its state; Inspect waits
// for every one.
func (in *inspection) gathered(r *pipe.Request) bool {
	in.got[r.Tag] = true
	st := &in.out[r.Tag/2]
	st.Addr = in.f.sentTo[r.Tag].Addr() // where it answered (an ASK's importing node)
	switch {
	case r.Err() != nil:
		st.Err = r.Err()
	case len(r.Reply()) == 0:
		st.Err = errEmptyReply
	case r.Reply()[0].IsError():
		st.Err = r.Reply()[0].Err()
	case r.Tag%2 == 0: // GET
		v := r.Reply()[0]
		st.Exists = !v.Null
		st.Ours = in.tok != nil && !v.Null && string(v.Bytes) == string(in.tok[:])
	default: // PTTL: -2 missing, -1 no expiry
		if ms := r.Reply()[0].Int; ms >= 0 {
			st.TTL = time.Duration(ms) * time.Millisecond
		} else if ms == -1 {
			st.TTL = -1
		}
	}
	return false
}

// Inspect shows, without taking or changing anything, what each master
// holds for each of the semaphore's permits (see Client.Inspect): one
// KeyState per permit and master, permit by permit (permit i's key is
// name+":permit:"+i), each master in Config.Addrs order. A permit is held
// where a quorum of masters show its key.
func (s *Semaphore) Inspect(ctx context.Context) ([]KeyState, error) {
	return s.c.inspect(ctx, s.name, s.keys[1:], nil)
}

// Inspect shows what each master holds for the permit's key, and whether
// it is this permit's token (see Lock.Inspect).
func (p *Permit) Inspect(ctx context.Context) ([]KeyState, error) {
	if p.s == nil {
		return nil, ErrNotHeld
	}
	return p.s.c.inspect(ctx, p.s.name, p.s.keys[1+p.permit:2+p.permit], &p.tok)
}
