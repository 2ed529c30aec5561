// Package redlock implements the Redlock distributed lock over N independent
// Redis masters, built for speed: one write burst per operation, replies
// read concurrently, a return as soon as the outcome is decided, and no
// allocation per Lock, Unlock or Extend in steady state.
//
//	c, err := redlock.New(redlock.Config{Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}})
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
// hold it, then retried after a random delay. Extend and Unlock run the
// compare-and-pexpire and compare-and-delete scripts of the Redlock spec
// with EVALSHA, falling back to EVAL when a restarted master lost its
// script cache. Every operation on a master is bounded by
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
// goroutines) per master; Close stops them all. A Lock is a value: use one
// copy from one goroutine at a time. Do starts one goroutine, the extender,
// and stops it before it returns.
package redlock
