package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/redlock"
)

// Election mode: how long a service is without a leader when its leader
// resigns, and when it crashes (stops renewing without releasing), with
// Volley's Election against the election that teams write by hand on one
// Redis: SET NX PX to lead, a timer that extends the key every TTL/3 (a
// compare-and-pexpire script), a compare-and-delete script to resign,
// and followers that try SET NX PX once a second. Each round, a leader
// and electionFollowers followers (each with a client of its own) take
// part; the takeover is the time from the Resign call, or from the crash,
// to the moment the next leader's Campaign returns. Both run in the same
// process, one after the other, round by round, with the same TTL.

// electionFollowers is how many followers campaign in each round.
const electionFollowers = 2

// handRolledPoll is how often the hand-rolled election's followers try.
const handRolledPoll = time.Second

const (
	nameHandRolled = "hand-rolled"
	endResigned    = "resign"
	endCrashed     = "crash"
)

// ElectionResult is one election's takeovers after one kind of end.
type ElectionResult struct {
	Name    string          `json:"name"`
	End     string          `json:"end"` // resign or crash
	Samples []time.Duration `json:"samples_ns"`
	P50     time.Duration   `json:"p50_ns"`
	Max     time.Duration   `json:"max_ns"`
	Errors  int             `json:"errors"`
}

// candidate is one process's side of an election.
type candidate interface {
	// campaign blocks until it leads, or ctx ends.
	campaign(ctx context.Context) (leader, error)
	close()
}

// leader is a won leadership.
type leader interface {
	resign(ctx context.Context) error
	// crash stops renewing without releasing.
	crash()
}

// electionContender makes a candidate for the round's election, name.
type electionContender struct {
	name string
	new  func(s Setup, election string, ttl time.Duration) (candidate, error)
}

var electionContenders = []electionContender{
	{nameVolley, newVolleyCandidate},
	{nameHandRolled, newHandRolledCandidate},
}

func (r *Runner) election(ctx context.Context) error {
	ttl := r.opts.ElectionTTL
	r.report.ElectionTTL = ttl
	results := map[[2]string]*ElectionResult{}
	rng := mrand.New(mrand.NewPCG(r.opts.Seed, 0x656c6563))
	for round := range r.opts.ElectionRounds {
		for _, end := range []string{endResigned, endCrashed} {
			// When the leader ends: after it renewed at least once, at a
			// moment uniform over a follower's poll period (and over the
			// leader's renewal period), the same for both elections.
			after := ttl/2 + time.Duration(rng.Int64N(int64(handRolledPoll)))
			for _, ec := range electionContenders {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r.progress.phase("election: %s, round %d/%d, after a %s", ec.name, round+1, r.opts.ElectionRounds, end)
				key := [2]string{ec.name, end}
				res := results[key]
				if res == nil {
					res = &ElectionResult{Name: ec.name, End: end}
					results[key] = res
					r.report.Election = append(r.report.Election, res)
				}
				name := fmt.Sprintf("lockbench:%s:election:%s:%d:%s", r.run, ec.name, round, end)
				d, err := takeover(ctx, r.opts.Setup, ec, name, ttl, end, after)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					r.progress.note("election: %s: %v", ec.name, err)
					res.Errors++
					continue
				}
				res.Samples = append(res.Samples, d)
			}
		}
	}
	for _, res := range r.report.Election {
		if len(res.Samples) > 0 {
			s := slices.Sorted(slices.Values(res.Samples))
			res.P50, res.Max = s[len(s)/2], s[len(s)-1]
		}
	}
	return nil
}

// takeover measures one takeover: a leader, then followers campaigning,
// then, after, the leader's end, then the first follower to lead.
func takeover(ctx context.Context, s Setup, ec electionContender, name string, ttl time.Duration, end string, after time.Duration) (time.Duration, error) {
	var cs []candidate
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	for range 1 + electionFollowers {
		c, err := ec.new(s, name, ttl)
		if err != nil {
			return 0, err
		}
		cs = append(cs, c)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*ttl+10*time.Second)
	defer cancel()
	first, err := cs[0].campaign(cctx)
	if err != nil {
		return 0, err
	}
	type won struct {
		l  leader
		at time.Time
	}
	wins := make(chan won, electionFollowers)
	fctx, stopFollowers := context.WithCancel(cctx)
	defer stopFollowers()
	for _, c := range cs[1:] {
		go func() { // ends with fctx: the round's end
			l, err := c.campaign(fctx)
			if err == nil {
				wins <- won{l, time.Now()}
			}
		}()
	}
	if err := sleepCtx(cctx, after); err != nil {
		return 0, err
	}
	t0 := time.Now()
	if end == endResigned {
		if err := first.resign(cctx); err != nil {
			return 0, err
		}
	} else {
		first.crash()
	}
	select {
	case w := <-wins:
		stopFollowers()
		w.l.resign(context.WithoutCancel(ctx))
		return w.at.Sub(t0), nil
	case <-cctx.Done():
		return 0, errors.New("no follower took over")
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// volleyCandidate is a redlock.Client of its own and its Election.
type volleyCandidate struct {
	c *redlock.Client
	e *redlock.Election
}

func newVolleyCandidate(s Setup, election string, ttl time.Duration) (candidate, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redlock.New(ctx, redlock.Config{
		Addrs: s.Addrs, MaxTTL: max(ttl, 30*time.Second), DisableRestartGuard: true, Fencing: true,
		MasterTimeout: s.MasterTimeout, RetryDelay: s.RetryDelay,
	})
	if err != nil {
		return nil, err
	}
	e, err := c.Election(election, ttl)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &volleyCandidate{c: c, e: e}, nil
}

func (v *volleyCandidate) campaign(ctx context.Context) (leader, error) {
	l, err := v.e.Campaign(ctx, "lockbench")
	if err != nil {
		return nil, err
	}
	return &volleyLeader{l: l, c: v.c}, nil
}

func (v *volleyCandidate) close() { v.c.Close() }

type volleyLeader struct {
	l *redlock.Leadership
	c *redlock.Client
}

func (l *volleyLeader) resign(ctx context.Context) error { return l.l.Resign(ctx) }

// crash closes the Client: its renewer stops, nothing is released.
func (l *volleyLeader) crash() { l.c.Close() }

// handRolled is the common election on one Redis (the first master).
type handRolled struct {
	cn   *conn.Conn
	key  string
	tok  string
	ttl  time.Duration
	poll time.Duration
}

// The hand-rolled election's scripts, as such code writes them.
const (
	handRolledExtend  = `if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`
	handRolledRelease = `if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
)

func newHandRolledCandidate(s Setup, election string, ttl time.Duration) (candidate, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cn, err := conn.Dial(ctx, conn.Options{Addr: s.Addrs[0]})
	if err != nil {
		return nil, err
	}
	var tok [20]byte
	rand.Read(tok[:])
	return &handRolled{cn: cn, key: election, tok: hex.EncodeToString(tok[:]), ttl: ttl, poll: handRolledPoll}, nil
}

// campaign tries SET NX PX now and then every poll.
func (h *handRolled) campaign(ctx context.Context) (leader, error) {
	for {
		vals, err := h.cn.Do(ctx, "SET", h.key, h.tok, "NX", "PX", h.ttl.Milliseconds())
		if err == nil && len(vals) > 0 && !vals[0].Null && !vals[0].IsError() {
			l := &handRolledLeader{h: h, stop: make(chan struct{}), done: make(chan struct{})}
			go l.renew() // owned by the leader: resign and crash stop it
			return l, nil
		}
		if err := sleepCtx(ctx, h.poll); err != nil {
			return nil, err
		}
	}
}

func (h *handRolled) close() { h.cn.Close() }

type handRolledLeader struct {
	h          *handRolled
	stop, done chan struct{}
}

// renew extends the key every TTL/3 until stopped.
func (l *handRolledLeader) renew() {
	defer close(l.done)
	t := time.NewTicker(l.h.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), l.h.ttl/3)
			l.h.cn.Do(ctx, "EVAL", handRolledExtend, 1, l.h.key, l.h.tok, l.h.ttl.Milliseconds())
			cancel()
		}
	}
}

func (l *handRolledLeader) crash() {
	close(l.stop)
	<-l.done
}

func (l *handRolledLeader) resign(ctx context.Context) error {
	l.crash()
	_, err := l.h.cn.Do(ctx, "EVAL", handRolledRelease, 1, l.h.key, l.h.tok)
	return err
}
