package torture

import (
	"fmt"
	"time"
)

// Fault is one kind of trouble the nemesis causes.
type Fault string

const (
	// FaultMinorityPartition blackholes a minority of the masters.
	FaultMinorityPartition Fault = "minority-partition"
	// FaultSlow adds 5-100ms of latency each way to one or two masters.
	FaultSlow Fault = "slow"
	// FaultSlowRotation makes one master at a time slow for FaultTime/2,
	// each in turn: its replies 20-200ms late, or dripped at 1-5ms a byte
	// (slower than its request rate, a backlog that outlives the window).
	// Locks must keep coming: see Report.Problems for the bounds.
	FaultSlowRotation Fault = "slow-rotation"
	// FaultResets resets the connections of random masters every 50-250ms.
	FaultResets Fault = "resets"
	// FaultCorrupt corrupts replies from a minority of the masters.
	FaultCorrupt Fault = "corrupt"
	// FaultPause stops a minority of the masters (SIGSTOP) for longer than
	// the TTL, then resumes them.
	FaultPause Fault = "pause"
	// FaultCrashDelayed kills a minority of the masters and restarts them,
	// empty, after more than MaxTTL.
	FaultCrashDelayed Fault = "crash-delayed"
	// FaultCrashImmediate kills masters and restarts them, empty, at once,
	// a majority every other time, else a minority: safe only with the restart guard on, which must then keep a
	// restarted majority out of every quorum for MaxTTL.
	FaultCrashImmediate Fault = "crash-immediate"
	// FaultMajorityPartition blackholes a majority: no lock may be granted
	// while it lasts.
	FaultMajorityPartition Fault = "majority-partition"
)

// The faults of a Redis Cluster (Config.Cluster). Each picks one shard.
const (
	// FaultFailover has a replica of one shard take over from its primary
	// (CLUSTER FAILOVER); the deposed primary becomes its replica.
	FaultFailover Fault = "failover"
	// FaultKillPrimary kills one shard's primary (SIGKILL) and waits for the
	// cluster to promote its replica; the heal restarts the killed node,
	// empty, and it rejoins as a replica.
	FaultKillPrimary Fault = "kill-primary"
	// FaultMoveSlot moves the slot of one lock copy (a slot that holds a
	// lock key) to another shard, keys included, as a resharding does; the
	// heal moves it back.
	FaultMoveSlot Fault = "move-slot"
	// FaultLostWrites fails one shard over to a replica cut off from its
	// primary for part of the fault's time (redistest's
	// FailoverLosingWrites): the promoted replica lacks every write the
	// primary took meanwhile, lock keys and fencing counters alike; the
	// heal restarts the killed primary, empty, as a replica.
	FaultLostWrites Fault = "failover-lost-writes"
)

// ClusterFaults is the rotation of a Redis Cluster run, which must never
// produce a violation with the restart guard on.
func ClusterFaults() []Fault {
	return []Fault{FaultFailover, FaultKillPrimary, FaultMoveSlot, FaultLostWrites}
}

// SafeFaults is the rotation that must never produce a violation with the
// restart guard on.
func SafeFaults() []Fault {
	return []Fault{
		FaultMinorityPartition, FaultSlow, FaultSlowRotation, FaultResets, FaultCorrupt,
		FaultPause, FaultCrashDelayed, FaultCrashImmediate, FaultMajorityPartition,
	}
}

// ParseFaults parses a comma-separated list of fault names: those of
// SafeFaults and of ClusterFaults (Run refuses a fault of the other
// topology).
func ParseFaults(names []string) ([]Fault, error) {
	known := map[Fault]bool{}
	for _, f := range append(SafeFaults(), ClusterFaults()...) {
		known[f] = true
	}
	var out []Fault
	for _, n := range names {
		if !known[Fault(n)] {
			return nil, fmt.Errorf("torture: unknown fault %q", n)
		}
		out = append(out, Fault(n))
	}
	return out, nil
}

// Config configures a Run. Zero fields mean the defaults in brackets.
type Config struct {
	Duration time.Duration // how long to run [1m]; with Cycles, an upper bound
	Cycles   int           // stop after this many full fault rotations (0: run for Duration)
	Seed     uint64        // drives every random choice; 0 is a valid seed
	Masters  int           // [5]; with Cluster, the primaries [3]
	// Cluster runs the masters as a Redis Cluster: Masters primaries with
	// a replica each, over which the clients lock with one redis-cluster://
	// entry (3 copies of each lock, or Masters if fewer). Its faults are
	// ClusterFaults [all of them]; the others need the standalone masters'
	// proxies. With Fencing, the counters of the keys' copies are set far
	// ahead of the clock before the run (see aheadCounters), so that
	// tokens come from the counters, not from the clients' clocks.
	Cluster bool
	// ShortLived is the number of goroutines that each, in a loop, start a
	// client, take one lock of a key of their own (shortLivedKey) and
	// close the client [over a cluster with Fencing, 1; else 0; negative:
	// none]. A fresh
	// client knows no counter, so its token is whatever the counters
	// say: the workload where fencing rests on them alone.
	ShortLived int
	Clients    int // independent lock clients [4]
	Goroutines int // per client [16]
	Keys       int // contended keys [3]
	// Permits, when above 0, makes every key a semaphore of Permits
	// permits: a round takes one of its permits (redlock's Semaphore, or
	// what NewLocker's Lock does), MultiKey is 0, and the checker counts
	// the holders of a key at each moment (NewCountingChecker).
	Permits int
	// ReadShare, when above 0, makes every key a read-write lock: a round
	// takes a read lock with this probability (the Locker must be an
	// RWLocker), else the write lock; MultiKey is 0, and the checker lets
	// read locks overlap each other, never a write lock.
	ReadShare float64
	// Election runs an election instead of locks (see election.go):
	// Clients*Goroutines candidates [4 x 2], each with a client of its
	// own (NewElector's), campaign in one election, lead, then resign or
	// crash; the checker finds two leaders at once and terms that do not
	// grow, and the report leaders past their lease and slow takeovers.
	// Keys, MultiKey, Permits and ReadShare do not apply; standalone
	// masters only.
	Election bool
	// LongLeads is the share of leaderships held for one to LeadTTLs
	// TTLs, so that renewals meet the faults; the others last under TTL/2
	// [0.15]; negative: none.
	LongLeads float64
	// LeadTTLs bounds a long leadership, in TTLs [4; at least 2]: long enough to
	// span several faults, it shows whether renewals keep a leadership
	// through faults that rotate among minorities.
	LeadTTLs int
	// NewElector builds candidate number id on the masters' (proxies')
	// addresses. Nil means DefaultElector.
	NewElector func(id int, addrs []string) (Elector, error)
	// DoShare is the share of rounds that hold one key through Client.Do
	// (the Locker must be a DoLocker) for one to DoTTLs TTLs, so that its
	// renewals meet the faults; the report counts those whose context was
	// cancelled (the lock lost) before the hold was over, while the run
	// went on. Plain locks only (no Permits, ReadShare or Election).
	DoShare float64
	// DoTTLs bounds a Do round's hold, in TTLs [30; at least 2].
	DoTTLs int
	// BreakRenewals gives the default Locker MaxExtensions 1: a Do round
	// that holds for more than about two TTLs loses its lock, and the
	// report must count it (the count's broken variant).
	BreakRenewals bool
	// MultiKey is the share of rounds that lock two of the keys at once
	// (LockMulti), overlapping the single-key rounds and each other [0.25];
	// negative: none.
	MultiKey float64

	TTL           time.Duration // lock TTL [800ms]
	MaxTTL        time.Duration // redlock MaxTTL, the restart guard's window [2s]
	FailoverGrace time.Duration // redlock FailoverGrace, added to the guard after a copy moves [1s; over a cluster, redlock's default: the cluster's]
	MasterTimeout time.Duration // redlock MasterTimeout [30ms]
	RetryDelay    time.Duration // redlock RetryDelay [50ms]
	LockTimeout   time.Duration // ctx deadline of each Lock call [2*TTL]
	// Slack is how much longer than its deadline (plus MasterTimeout) an
	// operation may take before it counts as stuck [250ms].
	Slack time.Duration

	// DisableRestartGuard runs redlock without its restart guard: with
	// FaultCrashImmediate, violations are then expected.
	DisableRestartGuard bool
	// Fencing turns on redlock's fencing tokens (Config.Fencing), which the
	// checker then checks: each holder's greater than every earlier
	// holder's of the key. With NewLocker set, it only tells the report.
	Fencing bool
	// Faults is the nemesis' rotation, shuffled every cycle [SafeFaults];
	// an empty non-nil slice means no faults.
	Faults    []Fault
	FaultTime time.Duration // each fault lasts a random time in [FaultTime/2, FaultTime] [4s]
	HealTime  time.Duration // quiet time after a fault's recovery [2s]
	// RecoveryTimeout bounds the wait for the first lock after a heal [15s;
	// with DoShare, 15s plus the longest hold].
	RecoveryTimeout time.Duration

	// NewLocker builds client number id on the masters' (proxies')
	// addresses. Nil means a redlock.Client configured from this Config.
	NewLocker func(id int, addrs []string) (Locker, error)
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defd(&c.Duration, time.Minute)
	if c.Cluster {
		def(&c.Masters, 3)
		def(&c.Keys, 4) // two pairs (see keyName)
	}
	switch {
	case c.ShortLived < 0:
		c.ShortLived = 0
	case c.ShortLived == 0 && c.Cluster && c.Fencing && c.Permits == 0 && c.ReadShare == 0:
		c.ShortLived = 1
	}
	if c.Election {
		def(&c.Goroutines, 2)
		c.Keys, c.MultiKey, c.Permits, c.ReadShare, c.ShortLived = 1, -1, 0, 0, 0
		c.Fencing = true // a term is a fencing token
		switch {
		case c.LongLeads < 0:
			c.LongLeads = 0
		case c.LongLeads == 0:
			c.LongLeads = 0.15
		}
		def(&c.LeadTTLs, 4)
		c.LeadTTLs = max(c.LeadTTLs, 2) // a long leadership lasts more than one TTL
	}
	if c.Election || c.Permits > 0 || c.ReadShare > 0 {
		c.DoShare = 0
	}
	if c.DoShare > 0 {
		def(&c.DoTTLs, 30)
		c.DoTTLs = max(c.DoTTLs, 2)
	}
	def(&c.Masters, 5)
	def(&c.Clients, 4)
	def(&c.Goroutines, 16)
	def(&c.Keys, 3)
	switch {
	case c.MultiKey < 0 || c.Keys < 2 || c.Permits > 0 || c.ReadShare > 0:
		c.MultiKey = 0
	case c.MultiKey == 0:
		c.MultiKey = 0.25
	}
	defd(&c.TTL, 800*time.Millisecond)
	defd(&c.MaxTTL, 2*time.Second)
	if !c.Cluster {
		defd(&c.FailoverGrace, time.Second)
	}
	defd(&c.MasterTimeout, 30*time.Millisecond)
	defd(&c.RetryDelay, 50*time.Millisecond)
	defd(&c.LockTimeout, 2*c.TTL)
	defd(&c.Slack, 250*time.Millisecond)
	defd(&c.FaultTime, 4*time.Second)
	defd(&c.HealTime, 2*time.Second)
	if c.DoShare > 0 {
		// A heal may find every key held by a Do round that started before
		// it: the first grant can wait for the longest hold.
		defd(&c.RecoveryTimeout, 15*time.Second+time.Duration(c.DoTTLs)*c.TTL)
	}
	defd(&c.RecoveryTimeout, 15*time.Second)
	if c.Faults == nil {
		c.Faults = SafeFaults()
		if c.Cluster {
			c.Faults = ClusterFaults()
		}
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}
