package redlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"
)

// MaxPermits is the most permits a Semaphore may have. Each attempt sends
// every permit's key to every master, and the master's script looks at
// each of them when the wanted one is taken.
const MaxPermits = 1024

// ErrSemaphoreMismatch: a master keeps the semaphore's name for something
// else: a semaphore with another number of permits (a Client configured
// differently), a lock (Lock, LockMulti) or a value of another type. The
// *Error around it names the masters and what each said; nothing was
// written on them.
var ErrSemaphoreMismatch = errors.New("redlock: the name is in use as something else than a semaphore of this size")

// Semaphore is a counting semaphore over the Client's masters: at most
// Permits holders at once, each with a Permit. Each permit is a lock of
// its own, a key with its holder's token and TTL on every master, held
// when a quorum of masters has it (see "Semaphores" in the package
// documentation), so that no two holders ever hold the same permit and no
// more than Permits hold one.
//
// A Semaphore is made once (Client.Semaphore) and shared: it is safe for
// concurrent use, holds no connection and needs no closing; it is valid
// as long as its Client.
type Semaphore struct {
	c       *Client
	name    string
	permits int
	// keys is the record's key (the name), then every permit's key:
	// "<name>:permit:<index>".
	keys []string
	// pair is, per permit, the record's key and that permit's (SemExtend).
	pair [][2]string
	// index is, per permit, its index in decimal; permitsArg the number of
	// permits in decimal.
	index      [][]byte
	permitsArg []byte
}

// Semaphore returns the semaphore called name, of permits permits (1 to
// MaxPermits). Every Client that uses it must give the same number of
// permits: a master that keeps name with another number (or as a lock)
// fails Acquire with ErrSemaphoreMismatch.
//
// On each master the semaphore is the key name, which records the number
// of permits while a permit is held, and one key per permit,
// name+":permit:"+index: name must not be used as a Lock's key (see
// ErrSemaphoreMismatch), and the permits' keys not otherwise.
func (c *Client) Semaphore(name string, permits int) (*Semaphore, error) {
	if permits < 1 || permits > MaxPermits {
		return nil, invalidf("semaphore of %d permits: want 1 to MaxPermits (%d)", permits, MaxPermits)
	}
	s := &Semaphore{
		c: c, name: name, permits: permits,
		keys:       make([]string, 1, permits+1),
		pair:       make([][2]string, permits),
		index:      make([][]byte, permits),
		permitsArg: strconv.AppendInt(nil, int64(permits), 10),
	}
	s.keys[0] = name
	for i := range permits {
		k := name + ":permit:" + strconv.Itoa(i)
		s.keys = append(s.keys, k)
		s.pair[i] = [2]string{name, k}
		s.index[i] = strconv.AppendInt(nil, int64(i), 10)
	}
	if err := c.checkKeys(name, s.keys); err != nil {
		return nil, err
	}
	return s, nil
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Permits returns how many holders the semaphore admits at once.
func (s *Semaphore) Permits() int { return s.permits }

// TryAcquire takes a permit for ttl on a quorum of masters if one is
// free, without waiting. Its first attempt asks for a permit at random;
// when that one is taken, the answers say which permits are free on each
// master, and while one is free on a quorum it asks for that one at once
// (at most 8 such attempts in a row, which only contenders that keep
// taking the free permit first can use up). So it fails only when no
// permit was free on a quorum. Its errors are those of TryLock:
// ErrNotAcquired as is when the permits were taken (contention alone), an
// *Error wrapping ErrNotAcquired when they were and masters failed, an
// *Error wrapping ErrNoQuorum when too few masters could vote,
// ErrSemaphoreMismatch inside an *Error, or ctx's error.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration) (Permit, error) {
	return s.acquire(ctx, ttl, 1)
}

// Acquire takes a permit for ttl, waiting while every permit is held,
// until it succeeds, Config.Tries attempts have failed, or ctx ends, as
// Lock does. The first attempt asks for a permit at random; one that
// fails learns from every master which permits are free there and asks
// next for the one free on the most masters, at once if that is a quorum.
// Otherwise it waits for a release, which wakes it through pub/sub as it
// wakes a Lock (one waiter per release), each wait bounded by
// Config.RetryDelay's random delay. Errors are those of TryAcquire.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration) (Permit, error) {
	return s.acquire(ctx, ttl, s.c.cfg.Tries)
}

// acquire takes a permit by the acquire loop: the first attempt asks for
// a permit at random, and a failed one picks the next (see bestPermit).
func (s *Semaphore) acquire(ctx context.Context, ttl time.Duration, tries int) (Permit, error) {
	c := s.c
	if err := c.checkTTL(ttl); err != nil {
		return Permit{}, err
	}
	o := c.getOp()
	defer c.putOp(o)
	o.permit = rand.N(s.permits)
	got, err := c.acquire(ctx, o, s, ttl, tries)
	if err != nil {
		return Permit{}, err
	}
	return Permit{s: s, permit: o.permit, hold: hold{tok: o.tok, ttl: ttl, until: got.until}, fence: got.fence}, nil
}

// The semaphore as a kind (see acquire).

// traits: a permit's waiter waits for any release of the semaphore,
// bounded by the retry delay; a taken answer lists the free permits, not
// a holder. It is never handed a lock (its waitKeys are not nil).
func (s *Semaphore) traits() kindTraits {
	return kindTraits{name: s.name, wrongKind: ErrSemaphoreMismatch, waitKeys: s.keys[:1]}
}

// attempt asks every master for permit o.permit; with Config.Fencing it
// takes a fencing token as a fenced Lock does (fenceRound).
func (s *Semaphore) attempt(o *call, ttl time.Duration, done <-chan struct{}) (burstResult, taken, bool) {
	fenced := s.c.cfg.Fencing
	cmd := &cmdSemAcquire
	if fenced {
		cmd = &cmdSemAcquireFenced
	}
	o.learn.resetPermits(s.permits)
	a := args{key: s.name, keys: s.keys, tok: &o.tok, arg: o.ttlArg(ttl), arg2: s.index[o.permit]}
	return s.c.rounds(o, cmd, a, fenced, s.keys[1+o.permit], nil, ttl, done)
}

func (s *Semaphore) releaseFailed(o *call, wake bool) {
	s.release(o, o.permit, &o.tok, wake, true)
}

// A semaphore chooses the permit each attempt asks for.
var _ choosingKind = (*Semaphore)(nil)

// freeOnQuorum picks the next permit (see bestPermit).
func (s *Semaphore) freeOnQuorum(o *call) bool {
	next, free := o.learn.bestPermit(o.res, o.permit)
	o.permit = next
	return free >= s.c.quorum
}

// release encodes the release of permit by tok into the op, waking
// waiters if wake; with forget it sends it to every master that may hold
// it, without waiting (a failed attempt's, as releaseAfterFailure).
func (s *Semaphore) release(o *call, permit int, tok *token, wake, forget bool) {
	o.encode(&cmdSemRelease, args{key: s.name, keys: s.keys, tok: tok, arg: s.index[permit], arg2: flag(wake)})
	if forget {
		o.sendForget(true)
	}
}

// The scripts' flags: "1" wakes (a release) or waits (an attempt, which
// then marks a taken key), "0" does not.
var (
	flagWake  = []byte("1")
	flagQuiet = []byte("0")
)

// flag is flagWake when set, else flagQuiet.
func flag(set bool) []byte {
	if set {
		return flagWake
	}
	return flagQuiet
}
