package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
	"github.com/volleylock/volley/resp"
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
		return nil, fmt.Errorf("redlock: semaphore of %d permits: want 1 to MaxPermits (%d)", permits, MaxPermits)
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
	if err := c.checkFenceKeys(name, s.keys); err != nil {
		return nil, err
	}
	return s, nil
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Permits returns how many holders the semaphore admits at once.
func (s *Semaphore) Permits() int { return s.permits }

// TryAcquire makes exactly one attempt to take a permit for ttl on a
// quorum of masters. Its errors are those of TryLock: ErrNotAcquired as is
// when the permits were taken (contention alone), an *Error wrapping
// ErrNotAcquired when masters failed, ErrSemaphoreMismatch inside an
// *Error, or ctx's error.
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

// acquire is a loop of attempts, each on one permit, and of what follows a
// failed one: the next permit, and a wait unless that one is free on a
// quorum. Attempts that follow a release's wake-up or a permit free on a
// quorum do not count toward tries (at most maxFreeAttempts in a row), as
// in a Lock's retry.
func (s *Semaphore) acquire(ctx context.Context, ttl time.Duration, tries int) (_ Permit, err error) {
	c := s.c
	if err := c.checkTTL(ttl); err != nil {
		return Permit{}, err
	}
	if c.closed.Load() {
		return Permit{}, ErrClosed
	}
	if ctx.Err() != nil {
		return Permit{}, &Error{Op: OpLock, Key: s.name, Err: ctxerr.Of(ctx)}
	}
	o := c.getOp()
	defer c.putOp(o)
	o.hasLast = false
	attempt := 1
	if h := c.cfg.Hooks.Call; h != nil {
		if _, end := h(ctx, OpLock, s.name); end != nil {
			start := time.Now()
			defer func() { end(CallEnd{Err: err, Took: time.Since(start), Attempts: attempt, Masters: o.res}) }()
		}
	}
	var w *waiter
	defer func() {
		o.waiting = false
		if w != nil {
			c.room.leave(w, err == nil)
		}
	}()
	done := ctx.Done()
	permit := rand.N(s.permits)
	counted, free, freeRun := 0, false, 0
	for ; ; attempt++ {
		if !free {
			counted++
		}
		if c.closed.Load() {
			return Permit{}, ErrClosed
		}
		tok := newToken()
		// Once waiting, a failed attempt hears every master out: it then
		// knows which permits are free where.
		o.waiting = w != nil
		p, br, ok := s.attempt(o, permit, &tok, ttl, done)
		if ok {
			return p, nil
		}
		wake := o.mayHoldQuorum()
		if wake {
			c.room.noteOwn(tok.releaseID())
		}
		s.release(o, permit, &tok, wake, true)
		c.event(EventFailed, s.name)
		if br.cancelled {
			o.learned()
			return Permit{}, o.error(OpLock, s.name, ctxerr.Of(ctx), attempt)
		}
		if o.mismatched() {
			return Permit{}, o.error(OpLock, s.name, ErrSemaphoreMismatch, attempt)
		}
		copy(o.last, o.res)
		o.hasLast = true
		var aerr error = ErrNotAcquired // contention alone: no allocation
		if br.failed > 0 || br.ok >= c.quorum {
			aerr = o.error(OpLock, s.name, ErrNotAcquired, attempt)
		}
		if counted >= tries {
			return Permit{}, aerr
		}
		next, freeOn := o.bestPermit(permit)
		permit = next
		if end, ok := o.guardEnds(); ok {
			// The restart guard alone keeps a quorum out, until end (see
			// retry.after).
			if dl, ok := ctx.Deadline(); ok && dl.Before(end) {
				return Permit{}, aerr
			}
			if w == nil {
				w, _ = c.room.join(ctx, s.name, s.keys[:1])
			}
			if ok, _ := c.room.wait(ctx, w, o.timer, time.Until(end), true, nil); !ok {
				return Permit{}, o.error(OpLock, s.name, ctxerr.Of(ctx), attempt)
			}
			free, freeRun = false, 0
			continue
		}
		if br.ok < c.quorum && freeOn >= c.quorum && freeRun < maxFreeAttempts {
			// Taken meanwhile, but another permit is free on a quorum.
			free = true
			freeRun++
			continue
		}
		if w == nil {
			// Subscribe first, then attempt again at once: a release
			// after that attempt cannot go unheard.
			w, _ = c.room.join(ctx, s.name, s.keys[:1])
			free, freeRun = false, 0
			continue
		}
		ok, woken := c.room.wait(ctx, w, o.timer, c.retryDelay(attempt), false, nil)
		if !ok {
			return Permit{}, o.error(OpLock, s.name, ctxerr.Of(ctx), attempt)
		}
		free = woken && freeRun < maxFreeAttempts
		if free {
			freeRun++
		} else {
			freeRun = 0
		}
	}
}

// attempt makes one attempt to take permit with token tok: the permit if
// a quorum gave it within its validity (ok), else the burst's result.
func (s *Semaphore) attempt(o *op, permit int, tok *token, ttl time.Duration, done <-chan struct{}) (p Permit, br burstResult, ok bool) {
	c := s.c
	o.resetPermits(s.permits)
	o.encode(&cmdSemAcquire, s.name, s.keys, tok, o.ttlArg(ttl), s.index[permit])
	br = o.run(done)
	o.report(OpLock)
	until := c.validUntil(br.start, ttl)
	if br.cancelled || br.ok < c.quorum || !time.Now().Before(until) {
		return Permit{}, br, false
	}
	c.event(EventAcquired, s.name)
	return Permit{s: s, permit: permit, tok: *tok, ttl: ttl, until: until}, br, true
}

// release encodes the release of permit by tok into the op, waking
// waiters if wake; with forget it sends it to every master that may hold
// it, without waiting (a failed attempt's, as releaseAfterFailure).
func (s *Semaphore) release(o *op, permit int, tok *token, wake, forget bool) {
	flag := flagQuiet
	if wake {
		flag = flagWake
	}
	o.encode(&cmdSemRelease, s.name, s.keys, tok, s.index[permit], flag)
	if forget {
		o.sendForget(true)
	}
}

// SemRelease's wake flags.
var (
	flagWake  = []byte("1")
	flagQuiet = []byte("0")
)

// mismatched reports whether a master answered that it keeps the
// semaphore's name for something else (see ErrSemaphoreMismatch).
func (o *op) mismatched() bool {
	for i := range o.res {
		if o.res[i].Outcome == OutcomeServerError && isMismatch(o.res[i].Err) {
			return true
		}
	}
	return false
}

// isMismatch reports whether err is SemAcquire's refusal of a name kept
// for something else.
func isMismatch(err error) bool {
	var se *resp.ServerError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Prefix {
	case "PERMITS", "WRONGKIND", "WRONGTYPE":
		return true
	}
	return false
}
