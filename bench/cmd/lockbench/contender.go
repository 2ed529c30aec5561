package main

import (
	"context"
	"crypto/x509"
	"math/rand/v2"
	"slices"
	"time"
)

// Contender is one lock library under test, connected to one set of masters.
//
// The hot path is LockUnlock, one call per operation, so that the harness
// never forces an allocation on a library whose lock is a value (Volley's
// redlock.Lock): a Lock method returning an interface would box it.
// Contended mode needs a lock held across code, which it gets from a
// Holder made once per goroutine, outside the measured loop.
type Contender interface {
	// Name is the short name used in tables, JSON and the plot legend.
	Name() string
	// Note says how this contender was set up when that differs from the
	// others (a single master, a routed client); empty otherwise.
	Note() string
	// LockUnlock acquires key for ttl (retrying as configured) and releases
	// it at once.
	LockUnlock(ctx context.Context, key string, ttl time.Duration) error
	// NewHolder returns a handle for one goroutine of the contended mode.
	NewHolder() Holder
	// Close releases every connection of the contender.
	Close() error
}

// Holder holds at most one lock at a time, for one goroutine.
type Holder interface {
	// Lock acquires key for ttl, retrying as configured until it succeeds
	// or ctx ends.
	Lock(ctx context.Context, key string, ttl time.Duration) error
	// Unlock releases the lock taken by the last successful Lock.
	Unlock(ctx context.Context) error
}

// Setup is what every contender is configured with, so that all of them
// run with the same masters, TTL, per-master timeout and retry policy.
type Setup struct {
	// Addrs are the masters ("host:port").
	Addrs []string
	// Fake reports that the masters are in-process fakes (no RESP3 client
	// tracking, so rueidislock runs without client-side caching).
	Fake bool
	// MasterTimeout bounds one operation on one master.
	MasterTimeout time.Duration
	// TTL is the lock TTL used by every mode (rueidislock takes it once, as
	// its KeyValidity).
	TTL time.Duration
	// RetryDelay: after a failed attempt, every contender waits a random
	// delay drawn uniformly from [RetryDelay/2, RetryDelay].
	RetryDelay time.Duration
	// Tries bounds the attempts of one Lock call; the contexts of the
	// harness end them sooner.
	Tries int
	// PoolSize is the connection pool size of pooled clients: the largest
	// goroutine count of the run.
	PoolSize int
	// Defaults asks for the library's own retry settings instead of the
	// shared MasterTimeout, RetryDelay and Tries: what a user who sets only
	// the masters and the TTL gets (the handoff mode's "defaults" rows).
	// Every contender honours it, and its Note then says what it got.
	Defaults bool
	// Permits is, for a contender of the semaphore mode, how many holders
	// its semaphores admit at once (its key names a semaphore); 0 for the
	// others.
	Permits int
	// TLSAddrs are the masters' TLS ports, in Addrs' order, and TLSRoots
	// trusts their certificate: for volley-tls; nil when they have none.
	TLSAddrs []string
	TLSRoots *x509.CertPool
	// MaxTTL is Volley's Config.MaxTTL; 0 for the TTL or 30s, whichever
	// is longer (the fleet mode sets it to the TTL).
	MaxTTL time.Duration
}

// retryDelay draws the shared retry pause.
func (s Setup) retryDelay() time.Duration {
	half := s.RetryDelay / 2
	if half <= 0 {
		return s.RetryDelay
	}
	return half + rand.N(s.RetryDelay-half+1)
}

// contenderDef names a contender and builds it.
type contenderDef struct {
	name string
	new  func(Setup) (Contender, error)
	// modes are the modes it takes part in; nil means every mode. The run
	// notes the others once, as skipped (Runner.noteExcluded).
	modes []string
}

// Name returns the contender's name.
func (d contenderDef) Name() string { return d.name }

// takesPart reports whether d runs in mode.
func (d contenderDef) takesPart(mode string) bool {
	return d.modes == nil || slices.Contains(d.modes, mode)
}

// allContenders lists every contender, redsync (go-redis) first: it is the
// baseline of every ratio; the floors last: the machine's own limit, the
// other reference (floor.go), the same behind a blocking call
// (floor_blocking.go), and the same done in C, the floor's own reference
// (floor_c.go).
func allContenders() []contenderDef {
	return []contenderDef{
		{name: nameRedsyncGoredis, new: newRedsyncGoredis},
		{name: nameVolley, new: newVolley},
		{name: nameVolleyFenced, new: newVolleyFenced, modes: volleyFencedModes},
		{name: nameVolleyTLS, new: newVolleyTLS, modes: volleyTLSModes},
		{name: nameRedsyncRedigo, new: newRedsyncRedigo},
		{name: nameRedislock, new: newRedislock},
		{name: nameRueidislock, new: newRueidislock},
		{name: nameFloor, new: newFloor, modes: floorModes},
		{name: nameFloorBlocking, new: newFloorBlocking, modes: floorBlockingModes},
		{name: nameFloorC, new: newFloorC, modes: floorCModes},
	}
}

// baseline is the contender every ratio is relative to.
const baseline = nameRedsyncGoredis
