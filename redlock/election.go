package redlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
	"github.com/volleylock/volley/resp"
)

var (
	// ErrNoLeader: Election.Leader found no leader: no quorum of masters
	// shows the same leader's record (nobody leads, a leadership is
	// changing hands, or too few masters answered to tell; the error then
	// says how many did).
	ErrNoLeader = errors.New("redlock: no leader")
	// ErrResigned is the cause (context.Cause) of a Leadership's context
	// after Resign.
	ErrResigned = errors.New("redlock: leadership resigned")
)

// leaderSuffix makes an election's record key from its name.
const leaderSuffix = ":leader"

// Election is a leader election over the Client's masters: at most one
// leader at a time, each with a term greater than every earlier leader's
// (see "Elections" in the package documentation).
//
// A candidate's leadership is a fenced lock of the election's name, taken
// by the same loop as a Lock (waiting for the leader's release, woken by
// it) and kept extended by the Client's renewer, as Do keeps a lock; its
// term is the lock's fencing token. The winner then writes its record,
// its term and value, beside the lock (the key name+":leader"), which
// lives exactly as long as the lock (extended and released with it):
// what Leader and Observe read.
//
// An Election is made once (Client.Election) and shared: it is safe for
// concurrent use, holds no connection and needs no closing; it is valid
// as long as its Client.
type Election struct {
	c    *Client
	name string
	ttl  time.Duration
	keys []string // name, then the record's key
	// extend and release are how a leadership is extended (by the
	// renewer) and released (Resign).
	extend, release heldOp
}

// Election returns the election called name, whose leaderships are
// leases of ttl: a leader that stops renewing (crashed, cut off) is
// replaced about ttl after its last renewal. Elections need
// Config.Fencing (the terms are fencing tokens): without it, or with an
// empty name, a name that is fencing's own, or a ttl out of range, it
// returns an error matching ErrConfig.
//
// On each master the election is the key name, a lock's key (do not lock
// it otherwise), and the leader's record, name+":leader".
func (c *Client) Election(name string, ttl time.Duration) (*Election, error) {
	if !c.cfg.Fencing {
		return nil, invalidf("election %q: elections need Config.Fencing (a leader's term is its fencing token)", name)
	}
	if err := c.checkTTL(ttl); err != nil {
		return nil, err
	}
	keys := []string{name, name + leaderSuffix}
	if err := c.checkKeys(name, keys); err != nil {
		return nil, err
	}
	e := &Election{c: c, name: name, ttl: ttl, keys: keys}
	e.extend = heldOp{name: name, cmd: &cmdElectExtend, key: name, keys: keys}
	e.release = heldOp{name: name, cmd: &cmdElectRelease, key: name, keys: keys, arg: flagWake}
	return e, nil
}

// Name returns the election's name.
func (e *Election) Name() string { return e.name }

// LeaderInfo is a leader as followers see it: its term and the value it
// campaigned with, copied from the masters' record (the caller owns it).
// The zero LeaderInfo is no leader.
type LeaderInfo struct {
	Term  uint64
	Value string
}

// Leadership is this process's leadership of an Election, from Campaign
// until Resign, or until it is lost. The Client's renewer keeps it
// extended meanwhile (no goroutine of its own). The caller of Campaign
// owns it; once its context has ended and Resign has returned, it holds
// nothing on the masters or in the Client.
//
// Its methods are safe for concurrent use. Term and Value never change.
type Leadership struct {
	e      *Election
	term   uint64
	value  string
	ctx    context.Context
	cancel context.CancelCauseFunc
	// hold is the renewer's while renewal is registered (read it under
	// the renewer's mu), then Resign's.
	hold    hold
	renewal *renewal

	mu       sync.Mutex
	resigned bool
}

// Term returns the leadership's term: greater than the term of every
// earlier leader of the election. It is a fencing token (see Lock.Fence):
// give it to the resources the leader writes, and have them refuse a term
// lower than the highest they have seen, so that a deposed leader's late
// writes are refused.
func (l *Leadership) Term() uint64 { return l.term }

// Value returns the value the leader campaigned with.
func (l *Leadership) Value() string { return l.value }

// Context returns a context that is cancelled when the leadership ends,
// with its cause (context.Cause): an error matching ErrNotHeld when it
// was lost (a quorum of masters no longer holds it, or its renewals,
// every ttl*Config.ExtendFraction but at least every half TTL, kept
// failing until a tenth of its TTL was left of its validity), also
// matching ErrNoQuorum when the last of those renewals failed because too
// few masters could vote (an outage; its *Error says what each did), or
// ErrClosed when the Client was closed; ErrResigned after Resign. It is cancelled before the lease can have run out on the
// masters, so a leader that stops acting when it is done has ended
// before anyone else can lead. It carries the values of Campaign's
// context, but not its cancellation, and the term as FenceFrom's token.
func (l *Leadership) Context() context.Context { return l.ctx }

// Until returns when the leadership's validity ends, as extended so far
// (a monotonic clock reading, see Lock.Until). Once the leadership is
// lost or resigned, it returns when that was known (its Context's end),
// or the end of its validity if that came first: never a time after
// the leadership ended.
func (l *Leadership) Until() time.Time {
	r := l.e.c.renew
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.hold.until
}

// Resign ends the leadership at once: its context is cancelled (cause
// ErrResigned), the renewer stops extending it and it is released on
// every master, which wakes the next candidate. It returns nil if a
// quorum released it; an error matching ErrNotHeld if the leadership had
// been lost already (its context says why) or was resigned before;
// otherwise Unlock's errors. Like Unlock, it sends the release even when
// ctx has already ended.
func (l *Leadership) Resign(ctx context.Context) error {
	l.mu.Lock()
	again := l.resigned
	l.resigned = true
	l.mu.Unlock()
	if again {
		return ErrNotHeld
	}
	l.cancel(ErrResigned) // the leader stops before anyone else may lead
	c := l.e.c
	lostErr := c.renew.unregister(l.renewal)
	c.renew.mu.Lock() // Until reads it under the renewer's mu
	l.hold.lostAt(time.Now())
	c.renew.mu.Unlock()
	_, err := c.releaseHeld(ctx, &l.e.release, &l.hold.tok)
	if lostErr != nil {
		return lostErr
	}
	return err
}

// Campaign blocks until this process leads the election, and returns its
// leadership, whose record (its term and value) followers read with
// Leader and Observe. While another leads, it waits for that leader's
// release, which wakes it (see "Waiting" in the package documentation),
// or for the lease's end; while too few masters can vote (an outage,
// see ErrNoQuorum) it attempts again every Config.RetryDelay or so. It
// tries until ctx ends, and then returns an *Error matching ctx's error
// (errors.Is(err, context.Canceled) or context.DeadlineExceeded), and
// ErrNoQuorum too when the last answers showed an outage, that says what
// each master answered last; an attempt under way is released. It returns ErrClosed once the
// Client is closed, and ErrWrongKind or ErrNoPermission in an *Error when
// the masters refuse the election's keys.
//
// The caller owns the Leadership: it must Resign, or close the Client,
// for the renewer to stop extending it.
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	c := e.c
	o := c.getOp()
	defer c.putOp(o)
	k := &campaign{e: e, value: value}
	got, err := c.acquire(ctx, o, k, e.ttl, math.MaxInt)
	if err != nil {
		return nil, err
	}
	l := &Leadership{e: e, term: got.fence, value: value, hold: hold{tok: o.tok, ttl: e.ttl, until: got.until}}
	l.ctx, l.cancel = context.WithCancelCause(context.WithValue(context.WithoutCancel(ctx), fenceCtxKey{}, got.fence))
	l.renewal = c.renew.add(e.lease(&l.hold, func(err error) { l.cancel(err) }))
	return l, nil
}

// lease is the renewal of a leadership's hold v: lost a tenth of the TTL
// before its validity ends (see Leadership.Context), renewed every
// ttl*Config.ExtendFraction but at least every half TTL (so that a
// renewal and its retries come before that), whatever
// Config.MaxExtensions says.
func (e *Election) lease(v *hold, lost func(err error)) *renewal {
	r := e.c.renew.renewal(v, e.extend, e.ttl, lost)
	r.early, r.unbounded = e.ttl/10, true
	if r.every > e.ttl/2 {
		r.every = e.ttl / 2
		r.retry = max(e.c.cfg.MasterTimeout, r.every/8)
		r.due = time.Now().Add(r.every)
	}
	return r
}

// campaign is one Campaign call as a kind (see acquire): a fenced Lock of
// the election's name, then the winner's announcement.
type campaign struct {
	e      *Election
	value  string
	record []byte // scratch: the record announced
}

func (k *campaign) traits() kindTraits {
	return kindTraits{name: k.e.name, wrongKind: ErrWrongKind, exclusive: true}
}

// attempt takes the election's name as a fenced Lock does, then announces
// the leader's record where the name holds its token: won when a quorum
// took it and a quorum recorded it, within the validity.
func (k *campaign) attempt(o *call, ttl time.Duration, done <-chan struct{}) (burstResult, taken, bool) {
	c := o.c
	cmd := c.lockCommand(false, o.waiting)
	a := args{key: k.e.name, tok: &o.tok, arg: o.ttlArg(ttl), arg2: o.enrolment(cmd)}
	br, got, ok := c.rounds(o, cmd, a, true, k.e.name, nil, ttl, done)
	if !ok {
		return br, got, false
	}
	k.record = appendRecord(k.record[:0], got.fence, k.value)
	o.encode(&cmdElectAnnounce, args{key: k.e.name, keys: k.e.keys, tok: &o.tok, arg: k.record})
	br = o.run(done)
	return br, got, c.judge(o, &br, got.until)
}

func (k *campaign) releaseFailed(o *call, wake bool) {
	o.encode(&cmdElectRelease, args{key: k.e.name, keys: k.e.keys, tok: &o.tok, arg: flag(wake)})
	o.sendForget(true)
}

// appendRecord appends a leader's record: its term in decimal, a space,
// its value.
func appendRecord(dst []byte, term uint64, value string) []byte {
	dst = strconv.AppendUint(dst, term, 10)
	dst = append(dst, ' ')
	return append(dst, value...)
}

// parseRecord reads a leader's record.
func parseRecord(b []byte) (LeaderInfo, bool) {
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		return LeaderInfo{}, false
	}
	term, ok := parseCounter(b[:sp])
	if !ok || term == 0 {
		return LeaderInfo{}, false
	}
	return LeaderInfo{Term: term, Value: string(b[sp+1:])}, true
}

// Leader returns the current leader, read from the masters: the record
// that a quorum of them hold, waiting at most Config.MasterTimeout (less
// if ctx ends sooner). It returns ErrNoLeader (possibly with how many
// masters answered) when no quorum holds one record, or an error
// matching ctx's when ctx ended first. The answer is stale by the time
// it returns: a leader acts on its own Leadership, never on Leader.
func (e *Election) Leader(ctx context.Context) (LeaderInfo, error) {
	c := e.c
	if c.closed.Load() {
		return LeaderInfo{}, ErrClosed
	}
	if ctx.Err() != nil {
		return LeaderInfo{}, ctxerr.Of(ctx)
	}
	records := make([]string, 0, len(c.masters))
	answered := 0
	c.eachMaster(ctx, c.placement(e.name), c.cfg.MasterTimeout, func(_ int, w *wire) {
		w.verbKey(c, "GET", e.keys[1])
	}, func(_ int, vals []resp.Value) {
		answered++
		if v := &vals[0]; v.Type == resp.TypeBulk && !v.Null {
			records = append(records, string(v.Bytes))
		}
	})
	for _, r := range records {
		n := 0
		for _, s := range records {
			if s == r {
				n++
			}
		}
		if n >= c.quorum {
			if info, ok := parseRecord([]byte(r)); ok {
				return info, nil
			}
		}
	}
	if ctx.Err() != nil {
		return LeaderInfo{}, ctxerr.Of(ctx)
	}
	if answered < c.quorum {
		return LeaderInfo{}, fmt.Errorf("%w known: %d of %d masters answered in time", ErrNoLeader, answered, len(c.masters))
	}
	return LeaderInfo{}, ErrNoLeader
}

// Observe streams the election's leaders: each LeaderInfo it sends has a
// greater term than the one before (the first is the leader at the time,
// if any). It reads the leader (as Leader does) when woken by a release
// or a new leader's announcement, which every master publishes, and
// when a pub/sub connection was reopened; as a guard against lost
// messages, also every Config.MaxTTL. It does not poll.
//
// The channel is unbuffered and holds the latest leader not yet
// received: a receiver that falls behind skips to the newest leader,
// never to an older one. It is closed when ctx ends or the Client is
// closed; the goroutine that feeds it belongs to Observe and ends then.
func (e *Election) Observe(ctx context.Context) <-chan LeaderInfo {
	ch := make(chan LeaderInfo)
	c := e.c
	if c.closed.Load() || ctx.Err() != nil {
		close(ch)
		return ch
	}
	w := c.room.watch(ctx, e.name) // subscribed before the first read
	go e.observe(ctx, w, ch)       // owned by ctx and the Client: ends with either
	return ch
}

// observe feeds Observe's channel ch from watcher w until ctx ends or the
// Client closes.
func (e *Election) observe(ctx context.Context, w *waiter, ch chan<- LeaderInfo) {
	c := e.c
	defer close(ch)
	defer c.room.leave(w, true)
	t := time.NewTimer(c.cfg.MaxTTL)
	defer t.Stop()
	var last LeaderInfo
	pending := false
	for !c.closed.Load() {
		c.room.refresh(ctx, w)
		if info, err := e.Leader(ctx); err == nil && info.Term > last.Term {
			last, pending = info, true
		}
		t.Reset(c.cfg.MaxTTL)
	wait:
		for {
			var out chan<- LeaderInfo
			if pending {
				out = ch
			}
			select {
			case out <- last:
				pending = false
			case <-w.wake:
				break wait
			case <-t.C:
				break wait
			case <-ctx.Done():
				return
			}
		}
	}
}
