package pipe

import (
	"sync"
	"sync/atomic"
	"time"
)

// poller is a Group's claim (see Batch.Claim): it lets one goroutine at a
// time read the replies of several Conns itself, instead of having each
// Conn's reader goroutine read them and hand them over: a burst of
// commands to N masters then waits in one epoll set and wakes no other
// thread (see detached). Any other caller, and every caller while one
// holds the claim, goes through Send and its notify channel as usual, and
// is served either way.
//
// Use: tryClaim; on success Send to the Conns as usual, then alternate
// poll with receiving from the notify channel until the replies needed
// have come, and release. It works on Linux, for Conns whose sockets are
// detached (plain TCP or Unix sockets, not pub/sub); elsewhere, and
// whenever one Conn cannot be claimed, tryClaim reports false.
//
// Ownership: its Group owns it and closes it. tryClaim, poll and release
// are for one goroutine at a time: a tryClaim made while another goroutine
// holds the claim reports false.
type poller struct {
	conns   []*Conn       // guarded by claim and lateMu (both held to change it; either to read it)
	claim   sync.Mutex    // held from a successful tryClaim to its release
	claimed []*socket     // per Conn, the socket claimed (nil if none)
	closed  bool          // guarded by claim
	waited  time.Duration // in this claim's polls so far
	set     pollSet       // the epoll set (Linux)
	// wanted counts the replace and close calls waiting for the claim: a
	// driver that holds it lets go (see driver.drive).
	wanted atomic.Int32

	// late hands to their reader goroutines the answers that nobody
	// waits for and that no claim has read by lateBound after they were
	// sent (see readLate). One timer for all the Conns, armed at most
	// once at a time: a timer reset sooner than the runtime's next timer,
	// or one that fires, wakes a thread, which on a machine whose cores
	// the masters share costs a lone caller's bursts about 8% (measured).
	lateBound time.Duration
	late      *time.Timer
	lateMu    sync.Mutex
	lateAt    time.Time // guarded by lateMu: when late fires; zero when it is not armed
	noLate    bool      // guarded by lateMu: the poller is closed
}

// newPoller returns a poller over conns, which must not change.
//
// lateBound is how long after it was sent an answer that nobody waits for
// any more (one after its caller's decision) may stay unread: until then
// the next claim may read it on its way, after that the Conn's reader
// goroutine reads it as it comes. Such an answer makes ReplyLatency read
// high, up to lateBound (or a quarter of the Conn's ReadTimeout, when that
// is smaller, or when lateBound is not positive); a latency above that
// bound is exact. A caller that compares ReplyLatency with a timeout
// passes less than that timeout (the redlock package passes half its
// MasterTimeout).
func newPoller(conns []*Conn, lateBound time.Duration) *poller {
	p := &poller{conns: conns, claimed: make([]*socket, len(conns)), lateBound: lateBound}
	p.set.init(len(conns))
	p.late = time.AfterFunc(time.Hour, p.readLate)
	p.late.Stop()
	return p
}

// tryClaim makes the calling goroutine the reader of every Conn of p, if each
// is up, detached, and has no other reader (nothing is owed on it but
// answers nobody waits for): true, and the caller must release. Otherwise
// it changes nothing and reports false.
func (p *poller) tryClaim() bool { return p.claimFor(false) }

// claimFor is tryClaim; for a driver (see driver.drive), a Conn owing
// replies that others wait for is claimed too, when its reader goroutine
// is not reading just then: a driver reads every reply for as long as it
// holds the claim, and release gives the rest back to the readers.
func (p *poller) claimFor(driver bool) bool {
	if !p.claim.TryLock() {
		return false
	}
	if p.closed || !p.set.ok() || !claiming.CompareAndSwap(false, true) {
		p.claim.Unlock()
		return false
	}
	for i, c := range p.conns {
		c.mu.Lock()
		s := c.sock
		free := c.up && s != nil && s.det != nil && (driver || len(c.queue) == 0) && s.claimable(driver)
		if free {
			s.reading = readByCaller
			s.det.watchInput(false) // replies wake the caller alone
		}
		c.mu.Unlock()
		if !free || !p.set.watch(i, s) {
			if free {
				p.claimed[i] = s
			}
			p.release()
			return false
		}
		p.claimed[i] = s
	}
	p.waited = 0
	return true
}

// maxClaimWait is how long a claim's polls may wait in all (see poll).
const maxClaimWait = time.Millisecond

// poll reads, for up to wait, the replies that arrive on the claimed Conns
// and completes their requests (each on its notify channel, as the Conn's
// reader would); it returns once it has read some, or wait has passed.
// Only the goroutine that holds the claim may call it.
//
// The waiting is done in epoll_wait, holding the goroutine's processor:
// that is what brings a burst to the machine's floor, but a processor held
// that way is lost to other goroutines. So a claim waits this way for
// maxClaimWait in all; after that poll reports false without waiting, and
// the caller should release and wait for the rest on its notify channel,
// as without a claim (slow masters, and waits for every master, are then
// read by the reader goroutines, parked in the runtime's poller).
func (p *poller) poll(wait time.Duration) bool {
	if p.waited >= maxClaimWait {
		return false
	}
	start := monoNow()
	n := p.set.wait(min(wait, maxClaimWait-p.waited))
	p.waited += time.Duration(monoNow() - start)
	for k := range n {
		i := p.set.index(k)
		if s := p.claimed[i]; s != nil && !s.readAvailable(false) {
			p.claimed[i] = nil // failed: the Conn reconnects
		}
	}
	return true
}

// read is poll for a driver (see driver.drive): it waits up to wait for
// input, with no bound on the claim's waits in all, and reads what came.
// It reports false when a claimed socket failed (its Conn reconnects,
// and the new socket is not claimed).
func (p *poller) read(wait time.Duration) bool {
	ok := true
	n := p.set.wait(wait)
	for k := range n {
		i := p.set.index(k)
		if s := p.claimed[i]; s != nil && !s.readAvailable(false) {
			p.claimed[i] = nil
			ok = false
		}
	}
	return ok
}

// release ends the claim. Each Conn's replies still owed go to its reader
// goroutine at once if anyone waits for them; if only answers nobody waits
// for are owed (those after a decision), they wait for the next claim, or
// until lateBound after they were sent, whichever comes first, so that a
// lone caller's next burst reads them on its way instead of waking the
// reader.
func (p *poller) release() {
	var lateBy time.Time // the soonest that unread answers go to a reader
	for i, s := range p.claimed {
		if s == nil {
			continue
		}
		p.claimed[i] = nil
		c := p.conns[i]
		c.mu.Lock()
		if c.sock == s && s.reading == readByCaller {
			switch {
			case c.inflight.len() == 0 && len(c.queue) == 0:
				s.reading = readNone
			case len(c.queue) == 0 && c.inflight.unwaited():
				s.reading = readLazily
				if at := p.readBy(c); lateBy.IsZero() || at.Before(lateBy) {
					lateBy = at
				}
			default:
				s.reading = readByLoop
				s.det.watchInput(true)
			}
		}
		c.mu.Unlock()
	}
	if !lateBy.IsZero() {
		p.readLateBy(lateBy)
	}
	claiming.Store(false)
	p.claim.Unlock()
}

// readBy is when the answers that nobody waits for on c must be read by
// the reader goroutine, if no claim has read them: lateBound after the
// oldest was sent (c.mu held). With none owed (readLazily is only set
// with some, and nobody reads them meanwhile), it is now.
func (p *poller) readBy(c *Conn) time.Time {
	sent, ok := c.inflight.oldestSent()
	if !ok {
		return time.Now()
	}
	bound := c.opts.ReadTimeout / 4
	if p.lateBound > 0 {
		bound = min(bound, p.lateBound)
	}
	return monoTime(sent).Add(bound)
}

// readLateBy makes sure that the late timer fires by at.
func (p *poller) readLateBy(at time.Time) {
	p.lateMu.Lock()
	if !p.noLate && (p.lateAt.IsZero() || at.Before(p.lateAt)) {
		p.lateAt = at
		p.late.Reset(time.Until(at))
	}
	p.lateMu.Unlock()
}

// readLate is the late timer's: each Conn whose unread answers (see
// readLazily) were sent lateBound ago gets its reader goroutine to read
// them; the timer is armed again for those sent later. (A claim in
// between read the earlier ones: a lone caller's steady stream of bursts
// costs one firing per lateBound, not a timer reset per burst.)
func (p *poller) readLate() {
	p.lateMu.Lock()
	p.lateAt = time.Time{} // a release from now on arms it again
	conns := p.conns       // replace installs a new slice
	p.lateMu.Unlock()
	now := time.Now()
	var next time.Time
	for _, c := range conns {
		c.mu.Lock()
		if s := c.sock; s != nil && s.det != nil && s.reading == readLazily {
			if at := p.readBy(c); at.After(now) {
				if next.IsZero() || at.Before(next) {
					next = at
				}
			} else {
				s.reading = readByLoop
				s.det.watchInput(true)
			}
		}
		c.mu.Unlock()
	}
	if !next.IsZero() {
		p.readLateBy(next)
	}
}

// claiming is true while a claim holds, in any poller of the process: a
// claim's wait holds a processor (see poll), so one claim per process
// bounds what the fast path takes from other goroutines to one processor
// for at most maxClaimWait, whatever GOMAXPROCS is. One caller at a time
// gets the fast path: the lone caller it is made for.
var claiming atomic.Bool

// replace makes c the poller's Conn i from the next claim on, waiting for
// a claim in progress to end.
func (p *poller) replace(i int, c *Conn) {
	p.wanted.Add(1)
	p.claim.Lock()
	p.wanted.Add(-1)
	defer p.claim.Unlock()
	p.lateMu.Lock()
	defer p.lateMu.Unlock()
	conns := append([]*Conn(nil), p.conns...)
	conns[i] = c
	p.conns = conns
}

// close frees the poller, waiting for a claim in progress to end; tryClaim
// reports false from then on. Safe to call more than once.
func (p *poller) close() {
	p.wanted.Add(1)
	p.claim.Lock()
	p.wanted.Add(-1)
	defer p.claim.Unlock()
	if !p.closed {
		p.closed = true
		p.set.close()
		p.lateMu.Lock()
		p.noLate = true
		p.late.Stop()
		p.lateMu.Unlock()
	}
}
