package redlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config configures a Client. Zero values are the safe, documented defaults.
type Config struct {
	// Addrs are the independent masters, at least one: "host:port",
	// "redis://...", "rediss://..." or "unix:/path" (see conn.ParseAddr).
	// Use an odd number: 5 is the canonical set, 3 the smallest that
	// tolerates a failure.
	Addrs []string
	// Conn holds the connection settings shared by every master (auth,
	// TLS, DB, protocol, dial timeout, reconnect backoff); an address's
	// own URL fields override them.
	Conn Connection

	// Tries is how many acquire attempts Lock makes before it gives up.
	// Default 32. TryLock always makes exactly one. A Lock that waits
	// makes its second attempt at once (after subscribing to the key's
	// releases), and later ones when a release wakes it or its wait ends
	// (a Lock of one key then first looks at the key, and attempts only
	// if it is free: a look that finds it taken counts as an attempt).
	// Attempts that a release woke, and the quick retries after votes
	// split among contenders, do not count: the lock is changing hands.
	// At most 8 such attempts come in a row, then one counts, so a Lock
	// makes at most 9*Tries-8 attempts whatever the masters answer (see
	// "How much a Lock sends" in the package documentation). A Lock that
	// the restart guard holds out waits for the guard's end: one wait.
	Tries int
	// RetryDelay bounds how long a waiting Lock waits for a release before
	// it looks or attempts anyway (the wait is drawn uniformly from [RetryDelay/2,
	// RetryDelay], and is shorter when the key's TTL ends sooner): it is
	// what a lost wake-up costs at most. Default 200ms.
	RetryDelay time.Duration
	// RetryDelayFunc, when set, replaces that draw: it gets the number of
	// attempts made so far (0 for a Lock that queues behind waiters of its
	// own Client before attempting) and returns the wait.
	RetryDelayFunc func(attempt int) time.Duration

	// LocalHandoffs bounds how many times in a row Unlock hands a lock
	// straight to a Lock of the same Client waiting for its key, instead
	// of releasing it on the masters: the waiter takes the key over with a
	// token of its own and its own TTL in one round trip, and waiters in
	// other Clients do not race for it. After that many, Unlock releases
	// the key, so that other Clients' waiters get their turn. Only
	// single-key locks without Fencing are handed over (a fencing token
	// must grow from one holder to the next). Default 3; -1 turns
	// hand-overs off.
	LocalHandoffs int

	// HandOffAfter is about how long a Lock of another Client waits for a
	// key that this Client keeps taking back right after releasing
	// it, before a release hands the key to it (see "Many processes on one
	// key" in the package documentation). Until then a release wakes no
	// waiter of another Client, and this Client's next Lock takes the key
	// back: a fleet runs at the speed of one looping process instead of
	// waking a process that would lose the key to it. Lower: waits end
	// sooner but the key changes processes more often, which costs a
	// fleet's throughput. Default 500ms; a negative value turns it off:
	// every release wakes the longest waiter at once.
	HandOffAfter time.Duration

	// DriftFactor is the share of the TTL allowed for clock drift between
	// client and masters; the validity is ttl - elapsed - (ttl*DriftFactor
	// + 2ms). Default 0.01.
	DriftFactor float64
	// MasterTimeout bounds every operation on a master (acquire, extend,
	// release): a master that has not answered by then counts as failed.
	// When a quorum of the masters lately answered later than that (a
	// busy machine or busy masters), operations wait up to twice that
	// latency instead, at most a second (see "Slow masters" in the
	// package documentation). A release short of answers waits for them
	// up to half a second, or MasterTimeout if that is longer (see
	// Lock.Unlock). Keep it small next to the TTL. Default 50ms.
	MasterTimeout time.Duration

	// MaxTTL is the largest TTL the Client accepts, and the restart guard's
	// window. Default 30s.
	MaxTTL time.Duration
	// DisableRestartGuard turns the restart guard off. The guard keeps a
	// master that (re)started less than MaxTTL ago out of the quorum: it
	// may have forgotten locks that are still valid elsewhere (Redlock's
	// crash-recovery hazard). Turn it off only for masters that persist
	// every write (appendfsync always), or in tests.
	DisableRestartGuard bool
	// FailoverGrace is how long a deposed primary may still take writes
	// after a failover promoted another server in its place (a Redis
	// Cluster primary cut off from the majority stops after its
	// cluster-node-timeout; a Sentinel-managed one after min-replicas-max-lag
	// with min-replicas-to-write set). A master that a Sentinel group or a
	// Cluster places (see Config.Addrs) and that moved to another server is
	// held out of the quorum for MaxTTL + FailoverGrace from when the
	// Client learned of the move, like a restarted one. Default over a
	// Redis Cluster: the largest cluster-node-timeout its nodes report at
	// New (CONFIG GET), plus a second; where no node answers CONFIG GET
	// (a managed service, an ACL without +config|get), 15s, Redis
	// Cluster's default node timeout (Client.FailoverGrace says which).
	// With Sentinel entries: the largest min-replicas-max-lag of their
	// primaries at New, plus a second, when every one has
	// min-replicas-to-write set (CONFIG GET); otherwise 15s, as nothing
	// bounds a deposed primary's writes then (the Sentinels' own timings
	// bound when a failover starts, not when the old primary stops).
	// Default otherwise 15s.
	FailoverGrace time.Duration

	// ExtendFraction: Do extends the lock every ttl*ExtendFraction. Default
	// 1/3, which leaves two more chances before the validity runs out.
	ExtendFraction float64
	// MaxExtensions bounds how often Do extends one lock, so a stuck fn
	// cannot hold it forever. Default 1000; -1 means no bound.
	MaxExtensions int

	// Fencing makes every lock of this Client carry a fencing token
	// (Lock.Fence): a number that strictly increases from one holder of a
	// key to the next, across all clients with Fencing on, for the
	// resource to check, so that a holder that paused past its validity is
	// turned away. It costs a longer script per acquisition, a second
	// round trip when the token the Client proposes is not above a
	// quorum's counters (see "Fencing"), and one extra command per
	// connect. Every client of the same masters must set
	// it (a client without it hands out no tokens) and the same MaxTTL.
	// See "Fencing" in the package documentation for how tokens
	// are made, why they cannot go backwards, and what a master restart
	// costs.
	Fencing bool

	// DisableNativeCommands makes every master run the Lua scripts. By
	// default a master whose server has a compare-and-set command of its
	// own gets it instead of the script, for a lock on one key: Extend
	// sends SET key token IFEQ token PX ttl (Valkey 8.1, Redis 8.4), and
	// Unlock DELIFEQ key token (Valkey 9.0) or DELEX key IFEQ token (Redis
	// 8.4), followed in the same write by the SPUBLISH that wakes waiters.
	// They cost a master well under half of what the scripts do; the
	// answers mean the same. Each master is judged by the server name and
	// version it reports at each connect, so a mix of servers works. A
	// command that a master refuses (an ACL's NOPERM, at New or later, or
	// a proxy that does not know it) is replaced by its script on every
	// master from then on, the refused request being sent the script
	// within the same call when its answer comes before the decision.
	// Locks on several keys, semaphores, read-write locks, fencing's
	// rounds and Do's batched renewals always run scripts.
	//
	// A native release cannot tell one waiting process, as the release
	// script does (see "Waiting" in the package documentation): it wakes a
	// waiter in every process that waits for the key. Set this where many
	// processes contend for one lock.
	DisableNativeCommands bool

	// Hooks observe operations and lock events. Unset hooks cost nothing.
	Hooks Hooks
}

// Hooks receive metrics and traces. They run synchronously on the goroutine
// that performs the operation: keep them fast and never block. Unset hooks
// cost nothing; the adapters in the redlockotel and redlockprom modules set
// them for OpenTelemetry and Prometheus.
type Hooks struct {
	// Master is called once per master per operation with its outcome and
	// latency; for Do's renewals, once per master per batch (OpExtend),
	// from the Client's renewer goroutine. An operation returns at its
	// decision: a master whose answer had not come by then is reported
	// with OutcomeNone and no latency (on three healthy masters, a Lock
	// usually has one).
	Master func(op Op, addr string, outcome Outcome, latency time.Duration)
	// Event is called for each lock event; Do's EventExtended and EventLost
	// come from the Client's renewer goroutine, all of them before that Do
	// returns.
	Event func(ev Event, key string)
	// Call is called when Lock, TryLock, Extend, Unlock or Do starts, with
	// the caller's context. The function it returns, if not nil, is called
	// once when that call returns. The context it returns is what Do passes
	// to the calls it makes (a span's context, so that Do's Lock and
	// Unlock nest under Do's span; Do's renewals are batched across locks
	// and do not go through Call); return ctx if there is none. Telemetry
	// adapters start a span or count waiters here; whatever it allocates is
	// the cost.
	Call func(ctx context.Context, op Op, key string) (context.Context, func(CallEnd))
	// Held is called once per lock when it ends, released by Unlock or
	// found lost by Extend or Unlock, with how long it was held: from the
	// return of Lock or TryLock to that moment.
	Held func(key string, held time.Duration)
}

// CallEnd is how a call reported to Hooks.Call ended.
type CallEnd struct {
	Err      error         // the call's error, nil on success
	Took     time.Duration // from the call's start to its return
	Attempts int           // acquire attempts (Lock and TryLock); 1 otherwise
	// Masters is each master's part in the last attempt. It is valid only
	// during the hook's call: copy what must outlive it.
	Masters []MasterResult
}

// Event is a change in a lock's life.
type Event uint8

const (
	EventAcquired   Event = iota + 1 // Lock or TryLock succeeded
	EventFailed                      // an acquire attempt failed
	EventExtended                    // Extend succeeded
	EventLost                        // Extend found the lock gone, or Do's validity ran out
	EventReleased                    // Unlock released the lock on the masters
	EventHandedOver                  // Unlock handed the lock to a Lock of the same Client (see Lock.Unlock)
	// EventCopiesShared: a Redis Cluster's slot map (at New, or read
	// after a change) puts two or more copies of some keys on one primary,
	// where the map before did not; key is empty. A lock of those keys
	// loses that many votes when the primary fails: Masters says which
	// copies (MasterStatus.SharesWith). It comes from New's goroutine or
	// the Client's locator goroutine.
	EventCopiesShared
	// EventCopiesApart: the slot map no longer puts two copies of any key
	// on one primary, after EventCopiesShared; key is empty.
	EventCopiesApart
)

var eventNames = [...]string{"", "acquired", "failed", "extended", "lost", "released", "handed over", "copies shared", "copies apart"}

func (e Event) String() string {
	if int(e) < len(eventNames) && e > 0 {
		return eventNames[e]
	}
	return "event(?)"
}

// withDefaults fills the defaults and validates; the error names the
// field and matches ErrConfig.
func (c Config) withDefaults() (Config, error) {
	c, err := c.defaults()
	return c, invalid(err)
}

func (c Config) defaults() (Config, error) {
	if len(c.Addrs) == 0 {
		return c, errors.New("redlock: Config.Addrs is empty")
	}
	c.Tries = cmp.Or(c.Tries, 32)
	c.RetryDelay = cmp.Or(c.RetryDelay, 200*time.Millisecond)
	c.DriftFactor = cmp.Or(c.DriftFactor, 0.01)
	c.MasterTimeout = cmp.Or(c.MasterTimeout, 50*time.Millisecond)
	c.MaxTTL = cmp.Or(c.MaxTTL, 30*time.Second)
	c.FailoverGrace = cmp.Or(c.FailoverGrace, 15*time.Second)
	c.ExtendFraction = cmp.Or(c.ExtendFraction, 1.0/3)
	c.MaxExtensions = cmp.Or(c.MaxExtensions, 1000)
	c.LocalHandoffs = cmp.Or(c.LocalHandoffs, 3)
	c.HandOffAfter = cmp.Or(c.HandOffAfter, 500*time.Millisecond)
	switch {
	case c.Tries < 0:
		return c, fmt.Errorf("redlock: Config.Tries %d is negative", c.Tries)
	case c.RetryDelay < 0:
		return c, fmt.Errorf("redlock: Config.RetryDelay %v is negative", c.RetryDelay)
	case c.DriftFactor < 0 || c.DriftFactor >= 0.5:
		return c, fmt.Errorf("redlock: Config.DriftFactor %v: want [0, 0.5)", c.DriftFactor)
	case c.MasterTimeout < 0:
		return c, fmt.Errorf("redlock: Config.MasterTimeout %v is negative", c.MasterTimeout)
	case c.FailoverGrace < 0:
		return c, fmt.Errorf("redlock: Config.FailoverGrace %v is negative", c.FailoverGrace)
	case c.MaxTTL < time.Millisecond:
		return c, fmt.Errorf("redlock: Config.MaxTTL %v: want at least 1ms", c.MaxTTL)
	case c.ExtendFraction < 0 || c.ExtendFraction >= 1:
		return c, fmt.Errorf("redlock: Config.ExtendFraction %v: want (0, 1)", c.ExtendFraction)
	case c.MaxExtensions < -1:
		return c, fmt.Errorf("redlock: Config.MaxExtensions %d: want -1 (no bound) or more", c.MaxExtensions)
	case c.LocalHandoffs < -1:
		return c, fmt.Errorf("redlock: Config.LocalHandoffs %d: want -1 (none) or more", c.LocalHandoffs)
	}
	c.LocalHandoffs = max(c.LocalHandoffs, 0)
	return c, nil
}

// checkTTL validates a TTL given to Lock, TryLock, Extend or Do: an error
// matching ErrConfig for one below 1ms, one that leaves no validity once
// the clock-drift allowance is taken off (no lock of it would ever be
// held), or one above MaxTTL.
func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return invalidf("TTL %v: want at least 1ms", ttl)
	}
	if d := c.drift(ttl); ttl <= d {
		return invalidf("TTL %v: no longer than its clock-drift allowance (%v: ttl*Config.DriftFactor + %v), so no lock of it would ever be valid: want more than %v, and some time to work",
			ttl, d, driftFloor, time.Duration(float64(driftFloor)/(1-c.cfg.DriftFactor)))
	}
	if ttl > c.cfg.MaxTTL {
		return invalidf("TTL %v exceeds Config.MaxTTL %v (the restart guard's window; raise MaxTTL to allow it)", ttl, c.cfg.MaxTTL)
	}
	return nil
}

// checkKeys validates a lock's key, or keys when not nil, and a
// semaphore's or read-write lock's name and keys: an error matching
// ErrConfig for an empty one or, when fencing, one of fencing's own.
func (c *Client) checkKeys(key string, keys []string) error {
	if key == "" || slices.Contains(keys, "") {
		return invalidf("empty key")
	}
	if c.cfg.Fencing {
		return invalid(c.checkFenceKeys(key, keys))
	}
	return nil
}

func (c *Client) event(ev Event, key string) {
	if h := c.cfg.Hooks.Event; h != nil {
		h(ev, key)
	}
}

// checkFenceKeys refuses, when fencing, a key that is one of fencing's own.
func (c *Client) checkFenceKeys(key string, keys []string) error {
	if !c.cfg.Fencing {
		return nil
	}
	if reservedForFencing(key) {
		return errors.New("redlock: key " + strconv.Quote(key) + " is reserved for fencing")
	}
	for _, k := range keys {
		if reservedForFencing(k) {
			return errors.New("redlock: key " + strconv.Quote(k) + " is reserved for fencing")
		}
	}
	return nil
}

// reservedForFencing reports whether k is one of fencing's own keys.
func reservedForFencing(k string) bool {
	return k == fenceKey || strings.HasPrefix(k, fenceKey+":")
}
