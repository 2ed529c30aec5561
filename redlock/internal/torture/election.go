package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/volleylock/volley/redlock"
)

// Elections under torture (Config.Election): Clients*Goroutines
// candidates, each with a client of its own, campaign in one election
// (electionName). A leader leads for a while, then resigns, or crashes
// (closes its client without releasing: its lease runs out), and
// campaigns again; a leader whose leadership ends under it (its Done
// channel) stops at once. Each leadership is an interval for the
// checker: from Campaign's return to the moment the leader stopped
// acting, its term the interval's token. So the checker finds two
// leaders at once and terms that do not grow; the run also counts
// leaders that acted past their lease's end (PastLease) and takeovers
// slower than their bound outside faults (SlowTakeovers).

// electionName is the election's name.
const electionName = "torture:election"

// Elector is a candidate's client.
type Elector interface {
	// Campaign blocks until the candidate leads election name, whose
	// leaderships are leases of ttl, or ctx ends.
	Campaign(ctx context.Context, name, value string, ttl time.Duration) (Leader, error)
	// WaitReady waits until the Elector can win (see Locker.WaitReady).
	WaitReady(ctx context.Context) error
	// Close ends the client, and with it any leadership, without
	// releasing it: a crash, as far as the masters can tell.
	Close() error
}

// Leader is a leadership an Elector won.
type Leader interface {
	// Term is the leadership's term.
	Term() uint64
	// Done is closed when the leader must stop: its leadership is lost,
	// before its lease can have run out.
	Done() <-chan struct{}
	// Until is the end of the lease's validity, as extended so far.
	Until() time.Time
	// Resign ends the leadership and releases it.
	Resign(ctx context.Context) error
}

// How a leadership ended (Leadership.End).
const (
	endResign = "resign" // the leader resigned
	endCrash  = "crash"  // the leader's client closed without releasing
	endLost   = "lost"   // Done closed under the leader
)

// Leadership is one leader's time, for the takeover analysis.
type Leadership struct {
	Interval
	End string `json:"end_kind"` // endResign, endCrash or endLost
}

// SlowTakeover is a leader that came later than the bound after the end
// of the leadership before it, with no fault in between.
type SlowTakeover struct {
	Previous Leadership    `json:"previous"`
	Next     Interval      `json:"next"`
	Took     time.Duration `json:"took_ns"`
	Bound    time.Duration `json:"bound_ns"`
}

// TakeoverStats sums up the takeovers after one kind of end, outside
// faults: the time from the previous leadership's end (a crash's or a
// loss's: its lease's) to the next leader.
type TakeoverStats struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	Max   time.Duration `json:"max_ns"`
}

// PastLease is a leader that acted after its lease's validity ended.
type PastLease struct {
	Holder string        `json:"holder"`
	End    time.Duration `json:"end_ns"`
	Until  time.Duration `json:"until_ns"`
}

// redlockElector is a candidate on a redlock.Client of its own. With
// localTerms its terms come from its own counter; with ignoreLoss its
// leaders never see their leadership end: the broken variants.
type redlockElector struct {
	c          *redlock.Client
	localTerms bool
	ignoreLoss bool
	mu         sync.Mutex
	elections  map[string]*redlock.Election
	count      uint64
}

// NewRedlockElector returns an Elector on redlock.New(ctx, cfg), with
// Config.Fencing on (elections need it).
func NewRedlockElector(cfg redlock.Config) (Elector, error) {
	return newRedlockElector(cfg, false, false)
}

// NewLocalTermElector returns an Elector whose terms count its own
// leaderships (1, 2, ...): terms that do not grow across candidates.
func NewLocalTermElector(cfg redlock.Config) (Elector, error) {
	return newRedlockElector(cfg, true, false)
}

// NewIgnoringElector returns an Elector whose leaders ignore the end of
// their leadership (a failed renewal): they act until they mean to stop.
func NewIgnoringElector(cfg redlock.Config) (Elector, error) {
	return newRedlockElector(cfg, false, true)
}

func newRedlockElector(cfg redlock.Config, localTerms, ignoreLoss bool) (Elector, error) {
	cfg.Fencing = true
	lk, err := NewRedlockLocker(cfg)
	if err != nil {
		return nil, err
	}
	return &redlockElector{c: lk.(*redlockLocker).c, localTerms: localTerms, ignoreLoss: ignoreLoss, elections: map[string]*redlock.Election{}}, nil
}

func (e *redlockElector) Campaign(ctx context.Context, name, value string, ttl time.Duration) (Leader, error) {
	e.mu.Lock()
	el := e.elections[name]
	if el == nil {
		var err error
		if el, err = e.c.Election(name, ttl); err != nil {
			e.mu.Unlock()
			return nil, err
		}
		e.elections[name] = el
	}
	e.mu.Unlock()
	l, err := el.Campaign(ctx, value)
	if err != nil {
		return nil, err
	}
	term := l.Term()
	if e.localTerms {
		e.mu.Lock()
		e.count++
		term = e.count
		e.mu.Unlock()
	}
	return &redlockLeader{l: l, term: term, ignore: e.ignoreLoss}, nil
}

func (e *redlockElector) WaitReady(ctx context.Context) error {
	return (&redlockLocker{c: e.c}).WaitReady(ctx)
}

func (e *redlockElector) Close() error { return e.c.Close() }

type redlockLeader struct {
	l      *redlock.Leadership
	term   uint64
	ignore bool
}

func (l *redlockLeader) Term() uint64 { return l.term }

func (l *redlockLeader) Done() <-chan struct{} {
	if l.ignore {
		return nil
	}
	return l.l.Context().Done()
}

func (l *redlockLeader) Until() time.Time { return l.l.Until() }

func (l *redlockLeader) Resign(ctx context.Context) error { return l.l.Resign(ctx) }

// DefaultElector returns the Elector a Run uses when Config.NewElector is
// nil: DefaultLockerConfig's client.
func DefaultElector(cfg Config, addrs []string) (Elector, error) {
	return NewRedlockElector(DefaultLockerConfig(cfg, addrs))
}

// newElector builds candidate id's Elector and waits until it is ready,
// retrying until ctx ends (a client cannot start during some faults).
func (r *run) newElector(ctx context.Context, id int) Elector {
	for ctx.Err() == nil {
		var el Elector
		var err error
		if r.cfg.NewElector != nil {
			el, err = r.cfg.NewElector(id, r.cl.addrs())
		} else {
			el, err = DefaultElector(r.cfg, r.cl.addrs())
		}
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, r.cfg.MaxTTL+10*time.Second)
			err = el.WaitReady(rctx)
			cancel()
			if err == nil {
				return el
			}
			el.Close()
		}
		if ctx.Err() == nil {
			r.stats.lockFailure(err)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return nil
}

// candidate campaigns, leads and ends its leadership, in a loop, until
// ctx ends. el is its ready Elector.
func (r *run) candidate(ctx context.Context, id int, el Elector) {
	cfg := &r.cfg
	rng := rand.New(rand.NewPCG(splitmix(cfg.Seed+uint64(id)<<32), splitmix(cfg.Seed^0x656c6563)))
	defer func() {
		if el != nil {
			el.Close()
		}
	}()
	for seq := 0; ctx.Err() == nil; seq++ {
		if el == nil {
			if el = r.newElector(ctx, id); el == nil {
				return
			}
		}
		holder := fmt.Sprintf("c%d#%d", id, seq)
		r.safely(holder, func() {
			if crashed := r.lead(ctx, rng, holder, el); crashed {
				el.Close()
				el = nil
			}
		})
	}
}

// lead is one campaign and, if won, one leadership; it reports whether
// the leader crashed (its Elector must be closed and made again).
func (r *run) lead(ctx context.Context, rng *rand.Rand, holder string, el Elector) (crashed bool) {
	cfg := &r.cfg
	t0 := time.Now()
	l, err := el.Campaign(ctx, electionName, holder, cfg.TTL)
	t1 := time.Now()
	if err != nil {
		if ctx.Err() == nil {
			r.stats.lockFailure(err)
			sleepCtx(ctx, 10*time.Millisecond)
		}
		return false
	}
	start := t1.Sub(r.epoch)
	r.granted(start)
	r.stats.addLatency(t1.Sub(t0))
	if from := r.majorityFrom.Load(); from != 0 && t0.Sub(r.epoch) > time.Duration(from-1) {
		r.stats.majorityGrant(MajorityGrant{Holder: holder, Key: electionName, Started: t0.Sub(r.epoch), PartitionAt: time.Duration(from - 1)})
		r.logf("MAJORITY GRANT: %s leads, campaign started after a majority was cut off", holder)
	}

	// Lead: mostly briefly; LongLeads of the time for several TTLs, so
	// that renewals meet the faults.
	hold := time.Duration(rng.Int64N(int64(cfg.TTL / 2)))
	if rng.Float64() < cfg.LongLeads {
		hold = cfg.TTL + time.Duration(rng.Int64N(int64(cfg.leadFor()-cfg.TTL)))
	}
	end := endResign
	if rng.Float64() < 0.15 {
		end = endCrash
	}
	// valid is the latest end of validity the leader was told while it
	// led: Until of a leadership that is lost reports the moment the loss
	// was known, which a leader that stops on Done passes by its reaction
	// time; what it acted on is the validity it had before. Until only
	// grows while the leadership holds, so each reading bounds it from
	// below.
	valid := l.Until()
	t := time.NewTimer(hold)
	sample := time.NewTicker(time.Millisecond)
lead:
	for {
		select {
		case <-t.C:
			break lead
		case <-l.Done():
			end = endLost
			break lead
		case <-ctx.Done():
			break lead
		case <-sample.C:
			if u := l.Until(); u.After(valid) {
				valid = u
				r.live(r.now()) // renewed: the election is live
			}
		}
	}
	t.Stop()
	sample.Stop()
	stop := time.Now()
	until := l.Until()
	if valid.After(until) {
		until = valid
	}
	iv := Interval{Key: electionName, Holder: holder, Start: start, End: stop.Sub(r.epoch), Until: until.Sub(r.epoch), Unlock: -1, Fence: l.Term()}
	if !stop.Before(until) {
		r.stats.pastLease(PastLease{Holder: holder, End: iv.End, Until: iv.Until})
		r.logf("PAST LEASE: %s acted until %.3fs, its lease's validity ended at %.3fs", holder, iv.End.Seconds(), iv.Until.Seconds())
	}
	switch end {
	case endCrash:
		crashed = true
	default: // a lost leader releases what may be left, as Resign does
		iv.Unlock = stop.Sub(r.epoch)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.MasterTimeout+cfg.Slack)
		err := l.Resign(rctx)
		u1 := time.Now()
		cancel()
		r.checkStuck("resign", holder, stop, u1.Sub(stop), cfg.MasterTimeout)
		iv.UnlockResult = r.stats.unlockResult(err)
	}
	r.stats.leadership(Leadership{Interval: iv, End: end})
	if n := r.checker.Add(iv); n > 0 {
		r.logf("VIOLATION: %s led [%.3fs, %.3fs] beside %d other leader(s)", holder, iv.Start.Seconds(), iv.End.Seconds(), n)
	}
	return crashed
}

// leadFor is the longest a leader leads on purpose.
func (c *Config) leadFor() time.Duration {
	if c.LongLeads > 0 {
		return time.Duration(c.LeadTTLs) * c.TTL
	}
	return c.TTL / 2
}

// pastLease counts a leader that acted past its lease.
func (s *stats) pastLease(p PastLease) {
	s.mu.Lock()
	s.pastLeaseN++
	if len(s.pastLeases) < 100 {
		s.pastLeases = append(s.pastLeases, p)
	}
	s.mu.Unlock()
}

// leadership records a leadership for the takeover analysis.
func (s *stats) leadership(l Leadership) {
	s.mu.Lock()
	s.leaderships = append(s.leaderships, l)
	s.mu.Unlock()
}

// takeoverBound is how long after the end of a leadership (a crash's or
// a loss's: its lease's) the next leader may come, outside faults: a
// resignation wakes the next candidate at once; an expiry is found by
// the candidates' waits, each bounded by the retry delay.
func (c *Config) takeoverBound(end string) time.Duration {
	if end == endResign {
		return c.Slack
	}
	return c.RetryDelay + c.Slack
}

// takeovers fills rep's takeover figures from the leaderships (in any
// order) and the phases: each pair of leaderships in a row whose gap
// (from the end, or the lease's end, of the first, less a TTL, to the
// start of the second) no fault overlaps.
func (r *run) takeovers(rep *Report, ls []Leadership) {
	cfg := &r.cfg
	slices.SortFunc(ls, func(a, b Leadership) int { return int(a.Start - b.Start) })
	rep.Leaderships = len(ls)
	for _, l := range ls {
		if l.End == endLost {
			rep.LostLeaderships++
		}
	}
	took := map[string][]time.Duration{}
	for i := 1; i < len(ls); i++ {
		prev, next := ls[i-1], ls[i]
		from := prev.Interval.End
		if prev.End != endResign {
			from = prev.Until
		}
		quiet := true
		for _, p := range rep.Phases {
			if p.Start <= next.Start && from-cfg.TTL <= p.Healed+p.Recovery {
				quiet = false
			}
		}
		if !quiet {
			continue
		}
		d := max(0, next.Start-from)
		took[prev.End] = append(took[prev.End], d)
		if bound := cfg.takeoverBound(prev.End); d > bound {
			rep.SlowTakeovers++
			if len(rep.SlowTakeoverList) < 100 {
				rep.SlowTakeoverList = append(rep.SlowTakeoverList, SlowTakeover{Previous: prev, Next: next.Interval, Took: d, Bound: bound})
			}
		}
	}
	rep.Takeovers = map[string]TakeoverStats{}
	for end, ds := range took {
		slices.Sort(ds)
		rep.Takeovers[end] = TakeoverStats{Count: len(ds), P50: ds[len(ds)/2], Max: ds[len(ds)-1]}
	}
}

// errNoElector is a Run's when an election's candidates could not start.
var errNoElector = errors.New("torture: no candidate could start")
