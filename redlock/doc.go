// Package redlock implements the Redlock distributed lock over N independent
// Redis masters, built for speed: one write burst per operation, replies
// read concurrently, a return as soon as the outcome is decided, and no
// allocation per Lock, Unlock or Extend in steady state.
//
//	c, err := redlock.New(ctx, redlock.Config{Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}})
//	...
//	defer c.Close()
//	l, err := c.Lock(ctx, "invoice:42", 10*time.Second)
//	if err != nil { ... }
//	defer l.Unlock(ctx)
//	// work for at most l.Validity()
//
// # Algorithm
//
// Acquire sends SET key token NX PX ttl to every master at once and counts
// the answers; the lock is held when a quorum (N/2+1) said OK and the
// validity, ttl - elapsed - (ttl*DriftFactor + 2ms) on the monotonic clock,
// is still positive. A failed attempt is released on every master that may
// hold it; Lock then waits for the holder's release (see Waiting). Extend
// runs the
// compare-and-pexpire script of the Redlock spec with EVALSHA, falling back
// to EVAL when a restarted master lost its script cache; Unlock runs the
// compare-and-delete script with EVAL, so that a master that lost its
// scripts and answers after the decision still releases (the cost is within
// noise). Every operation on a master is bounded by
// Config.NodeTimeout. Tokens carry 128 bits from a ChaCha8 CSPRNG seeded by
// crypto/rand.
//
// # Restart guard
//
// A master that restarts without persistence forgets its keys, and two
// clients can then both count it in their quorum. The restart guard keeps a
// master whose process started less than Config.MaxTTL ago out of the
// quorum (its OK is recorded as OutcomeGuarded). The Conn reads each
// master's run_id and uptime on every connect. The price: a freshly started
// set of masters grants no lock for MaxTTL. TTLs above MaxTTL are refused.
//
// # Slow masters
//
// A master that is slow but alive costs more than a dead one, which fails
// fast. What it does to Redlock under contention, and what Volley does:
//
//   - Backlog. Requests given up at NodeTimeout still wait for their replies
//     on the shared connection, so a master slower than its request rate
//     builds a backlog that outlives the slowness. The connection is judged
//     by the age of its oldest pending request: past Conn.ReadTimeout
//     (default 2 x NodeTimeout) it is reset, the backlog dies with it,
//     requests fail fast meanwhile, and it reconnects at once (see the conn
//     package).
//   - Waiting. An attempt whose other masters split their votes needs the
//     slow master's answer and would wait a whole NodeTimeout for it while
//     holding its votes elsewhere, blocking every other contender. A master
//     whose latest reply came after NodeTimeout is therefore not awaited:
//     its answer still counts if it comes in time, but when the outcome hangs
//     on it the attempt fails at once (OutcomeSlow). Its replies, abandoned
//     or not, keep that latency current, so it is awaited again from its
//     first timely reply. When fewer than a quorum would be left to await,
//     every master gets its NodeTimeout as before.
//   - Late SETs. A SET given up at NodeTimeout may still run on the slow
//     master after the attempt failed. The failed attempt's release follows
//     it on the same connection, so it runs after the SET. If the
//     connection is reset between the two, the release is lost and the key
//     stays until its TTL: that master answers "taken" for that key for at
//     most the TTL, an availability cost, never a safety one.
//   - Fewer voters. With a master out, a lock needs a quorum of the others
//     (3 of 4 for N = 5), so votes split more often; the random retry delay
//     breaks the ties.
//
// None of this can grant a lock: skipping a master or resetting its
// connection only turns votes into failures. lockbench's degraded mode
// measures the result next to redsync.
//
// # Waiting
//
// A Lock that finds its key taken does not poll: it waits for the release.
// Unlock's script publishes, on every master that held the key, a message
// on the channel "volley:released:" + key (its payload identifies the
// release, not the token). A Client subscribes to the channels of the keys
// its Locks wait for, on one pub/sub connection per master, opened when the
// first Lock waits and closed by Close, and only then attempts again: a
// release after that attempt cannot go unheard. When a quorum of a
// release's messages (one per master that held the key) has come, the
// release ran on a quorum of masters: it wakes one waiter of the key in
// this Client, the longest waiting, which attempts at once. A new Lock of a
// key that has subscribed waiters in the Client queues behind them rather
// than barging in. A key is taken about a round trip after its release.
//
// A waiting attempt runs a script (SET NX PX, or the holder's id and PTTL
// when taken) and, when it fails, hears every master out, so that the
// waiter knows what it waits for. When one holder has a quorum, the waiter
// waits for its release, at most RetryDelay's random draw and never past
// the key's expiry (or tries again soon if that release's messages came
// already: it reached this master late). When nobody has a quorum, waiters
// of several processes woken by one release split the votes; each master
// answered each of them with whoever came first there, so all losers see
// the same votes and agree on one to try again at once (most votes, ties
// to the smallest id) while the others back off a random few attempt
// durations, doubling with every split in a row. A failed attempt releases
// what it got without waking anyone, unless its token may be on a quorum
// (someone may have taken it for the holder).
//
// A lost message, a pub/sub connection that dropped (it reconnects, and
// the waiters subscribe again), or an ACL that forbids SUBSCRIBE or PUBLISH
// (the release's PUBLISH then fails silently) cost a waiter at most its
// RetryDelay: polling is the fallback, never the mechanism. An uncontended
// Lock never touches any of this.
//
// # Several keys
//
// LockMulti takes several keys as one lock. On each master one script sets
// every key to the lock's token only if none of them exists, so a master
// votes yes for the whole set or for none of it; the quorum and the
// validity are counted as for one key, and Extend and Unlock act on every
// key with the same all-or-nothing scripts (Unlock deletes whatever is still
// ours). Nobody ever holds part of a set, so overlapping sets cannot
// deadlock; they contend like single keys. The keys are sorted and
// deduplicated into storage the Lock keeps until Unlock, pooled: a steady
// stream of multi-key locks allocates nothing.
//
// # Errors
//
// ErrNotAcquired, ErrNotHeld, ErrExtendFailed and ctx's errors tell the
// kind (errors.Is); an *Error (errors.As) adds each master's outcome. A
// plain contention failure returns ErrNotAcquired itself, without
// allocating. No error contains a token or a password.
//
// # Concurrency
//
// A Client is safe for concurrent use. It owns one connection (and its
// goroutines) per master, and one pub/sub connection per master once a
// Lock has waited; Close stops them all and ends the waits under way. A Lock is a value: use one
// copy from one goroutine at a time. Do starts one goroutine, the extender,
// and stops it before it returns.
package redlock
