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
// Config.MasterTimeout. Tokens carry 128 bits from a ChaCha8 CSPRNG seeded by
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
// A Lock that the guard alone keeps from a quorum (the masters that said
// yes and those the guard held out make one) knows when that ends: it
// waits until then, one wait against Config.Tries that no release cuts
// short, or, when ctx ends first, fails at once with the guard named.
//
// # Slow masters
//
// A master that is slow but alive costs more than a dead one, which fails
// fast. What it does to Redlock under contention, and what Volley does:
//
//   - Backlog. Requests given up at MasterTimeout still wait for their replies
//     on the shared connection, so a master slower than its request rate
//     builds a backlog that outlives the slowness. The connection is judged
//     by the age of its oldest pending request: past 2 x MasterTimeout
//     (conn.Options.ReadTimeout, which a read_timeout address parameter
//     sets for one master) it is reset, the backlog dies with it,
//     requests fail fast meanwhile, and it reconnects at once (see the conn
//     package).
//   - Waiting. An attempt whose other masters split their votes needs the
//     slow master's answer and would wait a whole MasterTimeout for it while
//     holding its votes elsewhere, blocking every other contender. A master
//     whose latest reply came after MasterTimeout is therefore not awaited:
//     its answer still counts if it comes in time, but when the outcome hangs
//     on it the attempt fails at once (OutcomeSlow). Its replies, abandoned
//     or not, keep that latency current, so it is awaited again from its
//     first timely reply. When fewer than a quorum would be left to await,
//     every master gets its MasterTimeout as before.
//   - Late SETs. A SET given up at MasterTimeout may still run on the slow
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
// Unlock's script publishes (SPUBLISH), on every master that held the key,
// a message on the shard channel "volley:released:" + key (its payload
// identifies the release, not the token). A Client subscribes (SSUBSCRIBE)
// to the channels of the keys
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
// Within one Client, a lock need not go back to the masters at all: Unlock
// of a lock that a Lock of the same Client waits for hands it straight to
// the longest waiting such Lock, which takes the key over with a token of
// its own and its own TTL in one round trip (a script that replaces the
// token only where the key still holds the old one, and publishes
// nothing). Waiters in other Clients are not woken, so they do not race
// for it; after Config.LocalHandoffs hand-overs in a row (default 3) Unlock
// releases the key on the masters, so that they get their turn. A waiter
// that cannot take the key over (the lock was lost meanwhile) releases
// both tokens and attempts as usual; one that leaves before it took it
// (its ctx ended) releases it. Locks on several keys, and fenced locks,
// whose token must grow from one holder to the next, are not handed over.
//
// A lost message, a pub/sub connection that dropped (it reconnects, and
// the waiters subscribe again), or an ACL that forbids SSUBSCRIBE or
// SPUBLISH (the release's SPUBLISH then fails silently) cost a waiter at
// most its
// RetryDelay: polling is the fallback, never the mechanism. An uncontended
// Lock never touches any of this.
//
// # How much a Lock sends
//
// Whatever the masters answer, a Lock sends a bounded number of commands,
// and a bounded number per second. Each attempt is one command per master
// and, when it fails, at most one release per master. An attempt follows
// either a wait, or nothing: the attempt right after a Lock subscribed
// (once per Lock), a wake-up by a release, or a quick retry after split
// votes. Waits last at least RetryDelay/2, unless a release ends them,
// the key's PTTL does (a holder's key expiring), or the restart guard's
// known end does (see Restart guard). Attempts count toward Config.Tries,
// the first and the one right after subscribing included, except those
// after a wake-up or a split; of those at most 8 come in a row
// (maxFreeAttempts): the next attempt counts. The Lock fails once Tries
// counted attempts have failed, with at most 8 uncounted ones between
// two counted ones, so it makes at most 9*Tries-8 attempts in all. Per second, the attempts
// that no wait paced are bounded by the releases the Client hears (each
// release wakes at most one waiter of the key per Client) and by the
// split back-off, which doubles with every split in a row. Two things keep
// releases from feeding attempts in a loop. A failed attempt whose SET may
// be on a quorum publishes its release, for other Clients' waiters that
// may have seen it as the holder, but that release never wakes a waiter
// of its own Client (waitRoom.noteOwn): before, a Lock on just-started
// masters woke itself with every failed attempt and sent tens of
// thousands of commands per master (TestLockAttemptsAreBoundedByTries
// keeps that broken variant, and catches it). And a Lock that the restart
// guard holds out waits for the guard's end, deaf to releases, so Locks
// of several Clients on guarded masters cannot wake one another either.
// An attempt whose quorum said yes but whose validity ran out (a TTL too
// short for the masters' latency) is not a split: it waits RetryDelay.
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
// # Semaphores
//
// Client.Semaphore(name, P) admits at most P holders at once, each with a
// Permit. A majority quorum over per-master counters would not: if each
// master admitted P holders, P+1 holders could each have a quorum Q of N
// masters whenever (P+1)*Q <= P*N (5 masters, 2 permits: 9 <= 10
// admissions for three holders; the torture's majority-counter variant
// shows it within a second). Instead the semaphore is P locks: permit i is
// the key name+":permit:"+i, and a Permit is one of them held as a Lock
// is held, on a quorum of masters within the validity. An attempt asks
// every master, in one burst, for one index (scripts.SemAcquire): the
// script sets that key with NX and the TTL, or, when it is taken, answers
// which indexes are free on that master. The first attempt asks for a
// random index; a failed one releases what it took and asks next for the
// index free on the most masters (ties at random, so that contenders
// spread out), at once when that is a quorum (TryAcquire too: it fails
// only when no permit was free on a quorum), else after a release wakes
// it (SemRelease publishes on the name's channel, and one waiter per
// release is woken, as for a Lock) or RetryDelay passes.
//
// Why never more than P holders. Permit i's key is a Redlock key: the
// script sets it only when absent, SemExtend changes its TTL only while it
// holds the holder's token and never re-creates it, and SemRelease deletes
// it only for that token. So the Redlock argument holds for each index on
// its own: two holders of index i at once would each have a quorum, the
// quorums share a master, and that master would have held both tokens in
// the one key at once. At most one holder per index, P indexes: at most P
// holders. Case by case:
//
//   - Timeouts, partitions, slow masters: a master that did not answer is
//     in no quorum; the quorum and its intersection are the mutex's.
//   - Expiry and drift: the validity ends DriftFactor*ttl+2ms before the
//     TTL, counted from the burst's start, as for a Lock; a holder whose
//     validity ran out holds nothing.
//   - Restarts: SemAcquire and SemExtend are guarded like Lock and Extend:
//     a master that restarted less than MaxTTL ago (and may have lost a
//     key) does not count.
//   - Partial writes: a failed attempt releases its index on every master
//     that may hold it; one whose release is lost keeps the key until its
//     TTL, which only makes that index less available, as for a Lock.
//   - Corrupted answers: a grant is the attempt's own token echoed, which
//     no other answer becomes by a changed byte (a "taken" list `*1 :1`
//     read as `:1` was one, before) and another request's grant (a reply
//     stream shifted by a swallowed reply) never matches; such answers
//     count as a server error (TestSemaphoreCorruptedTakenIsNotAGrant).
//     A reply of a shape no answer has resets the master's connection
//     before a later reply is read (see replycheck.go), so a stream does
//     not stay shifted.
//   - Availability: with fewer than P holders an index is free on a
//     quorum, found in the first or the next attempt (the answers list the
//     free ones). Keys left by failed attempts on a minority block an
//     index only where they cover more masters than a quorum can spare,
//     until their TTL.
//
// The semaphore's record, the key name, holds "semaphore:"+P while any of
// its permits' keys does (its TTL follows the longest, and the last
// release deletes it). It plays no part in the argument above; it turns a
// configuration mistake into ErrSemaphoreMismatch: a Client with another
// P, or a Lock of the same name, is refused where it meets the record on
// a master, and nothing is written there; the lock scripts in turn refuse
// the record (ErrWrongKind) rather than wait for it as for a holder. A
// record lost (a restart, an eviction) only delays that check until the
// next acquire writes it again. With Config.Fencing a permit carries a fencing token
// (Permit.Fence), taken as a fenced Lock's is (see Fencing): the fenced
// attempt (scripts.SemAcquire given the counter's key) raises each
// counter to the Client's proposal in the step that sets the permit's
// key, and the second round, when needed, is FenceWrite on that key. The
// argument of Fencing holds per permit, whose key has one holder at a
// time: each holder's token is greater than every earlier holder's of the
// same permit (index), which is what a resource used by P holders at once
// can check, keeping the highest token per index.
//
// Over a Redis Cluster every key of one copy of a semaphore carries that
// copy's hash tag, so each master's script runs on one node.
//
// # Read-write locks
//
// Client.RWMutex(name) admits many readers at once or one writer. On each
// master the writer's key is the name itself, a lock's key holding the
// writer's token; the readers are the sorted set name+":readers", each
// reader's token scored by its expiry, read from the master's TIME (the
// clock Redis expires keys by). A writer attempt (scripts.RWLock) sets the
// writer's key only when it is absent and no reader that has not expired
// is in the set; a reader attempt (scripts.RWRLock) adds the reader only
// when the writer's key is absent. Each is held as a Lock is, on a quorum
// of masters within the validity, and the writer's Lock is a Lock of the
// name: Extend, Unlock and DoWrite's renewal are a Lock's.
//
// Why never a reader beside a writer. Let reader R and writer W both hold
// at a moment t. Their quorums share a master m, on which R's entry (its
// expiry beyond R's validity, as a key's TTL is) and W's key both existed
// at t: neither is removed before its holder's validity ends, except by
// its holder. Whichever script ran second on m, at or before t, found the
// other there (W's key, or R's entry not yet expired) and refused: a
// contradiction. Two writers are excluded as two holders of a Lock's key
// are. The cases of faults, expiry, drift and restarts are the semaphore's
// (all three attempt scripts are guarded by the restart guard); a failed
// reader's entry is removed where it may be, and one whose removal is
// lost only keeps writers out until it expires.
//
// Writers are not starved by a stream of readers: a writer that waits
// (Lock, after its first attempt) and finds readers writes the intent,
// name+":intent", with its TTL; while it exists new readers are refused,
// so the readers drain (each within its TTL, unless it keeps extending
// it), each reader's release wakes the writer, and the writer that takes
// the lock deletes the intent. A writer that gives up leaves its intent
// until its TTL ends. Waiting readers are woken together by the writer's
// release (the wait room wakes the readers queued behind the first one
// woken), and an Unlock hands the write lock to a writer waiting in the
// same Client at most Config.LocalHandoffs times in a row. The intent
// plays no part in the argument above.
//
// With Config.Fencing the writer's Lock carries a fencing token, taken as
// a fenced Lock's is (see Fencing): a fenced writer attempt
// (scripts.RWLock given the counter's key) raises each counter to the
// Client's proposal in the same step as it sets the writer's key, and the
// second round, when needed, is FenceWrite on the writer's key. The
// argument of Fencing applies unchanged, since it rests only on the key
// being held by one holder at a time, which the writer's is: each
// writer's token is greater than every earlier writer's, and than every
// earlier fenced Lock's of the name. Read locks carry no token: they
// exclude writers, not each other, and a token orders only holders that
// exclude each other.
//
// # Fencing
//
// A holder that pauses past its validity (GC, swap, SIGSTOP) may still
// write to the resource after the next holder got the lock; no lock can
// prevent that, but the resource can refuse the late write if every
// holder brings a number greater than every earlier holder's, a fencing
// token. With Config.Fencing, Lock.Fence (and FenceFrom in Do) is one.
//
// Each master keeps one counter, the key "volley:fence", for all keys and
// clients: fencing adds three keys per master, whatever the number of
// locks ("volley:fence:run" and the hash "volley:fence:unsure" are the
// other two), so counters cannot pile up. A fenced Lock takes one round in
// the common case, two otherwise. The first round sets the keys, as any
// Lock, and in the same script reads the counter of each master that set
// them and raises it to a token the Client proposes, where that is larger
// (never lowering it). The proposal is the clock in microseconds, or one
// more than the largest counter or token the Client has seen, whichever is
// larger. If a quorum of masters that vouch for their counter (see below)
// set the keys and each read a counter below the proposal, the proposal
// is the token: one round. Otherwise (a Client whose clock is behind the
// others' tokens, or fresh counters ahead of the clock), once a quorum of
// such masters set the keys, the token is the largest counter read plus
// one, and a second round raises the counter to it on every master whose
// keys still hold the lock's token (never lowering it). The lock is
// acquired when a quorum took its token within the validity, counted from
// the first round. The counter is never an INCR: failed attempts would
// raise some masters' counters and not others, and a later holder whose
// quorum misses the high ones would get a smaller token (the torture's
// INCR-and-max variant shows it within seconds).
//
// Why a token cannot go backwards. Let A hold a key and B be the next
// holder. Let W be the quorum that took A's token: in one round, the
// masters whose counter A's lock script raised to it; in two, those of the
// second round. Let R be the quorum of B's first round that decided B's
// token (those below its proposal, or those whose counters it read). W and
// R share a master m. On m, A's write ran while m held A's key (in one
// round, in the same script that set it), and B's lock script ran while m
// held no key (it then set B's). If B's script came after A's write, it
// found m's counter at least A's token: counters only grow. Then, in one
// round, B's proposal exceeded that counter, so B's token exceeds A's; in
// two, B's token is larger than every counter R read, that one included.
// Otherwise B's key was on m before A's, and had gone from m before A set
// its key there: released by B (then B held the lock before A did) or
// expired (then B's validity, which ends before its key expires on m, was
// over before A's set, so again B came first). Either way B came before A,
// a contradiction. So B's token is greater. The proposal's clock is only a
// guess that makes one round likely: no step of the argument rests on it,
// and a wrong guess (a clock behind, or far ahead) costs the second round,
// or larger tokens, never a smaller one (TestFenceSkewedClocks; its broken
// variant, which takes every proposal without reading the counters, hands
// out tokens that go backwards). Case by case:
//
//   - Contention and failed attempts: a loser may have raised some
//     counters, to its proposal in its lock round or in its second round,
//     which only makes later tokens larger; it hands out no token, and
//     what it read is irrelevant.
//   - Timeouts and partitions: a master that did not answer is in neither
//     W nor R; both are quorums of masters that did answer.
//   - Expiry and takeover: the argument above; a holder whose validity ran
//     out before its second round ended gets no lock.
//   - A write of A's that arrives late: it lands only while A's key is
//     still on that master, so before the key's expiry.
//   - Restarts, the hard case: a master that restarts may come back with an
//     older counter (an RDB snapshot, an AOF without appendfsync always) or
//     none, and if it was the only master of W in R, B could read less
//     than A's token. Every connection of a fencing Client therefore runs,
//     before it takes requests, a script that compares the master's run_id
//     with the one recorded when its counter was last vouched for; after a
//     restart they differ, and the script sets the counter aside ("stale")
//     and marks the master unsure. An unsure master's answers do not count
//     toward a fenced lock's quorum (OutcomeUnfenced) and it takes no
//     writes, so R and W only ever hold masters whose counters hold every
//     write they acknowledged. A master restarts by dropping its
//     connections, so no request reaches a restarted master before the
//     check. An unsure master is repaired once it has been unsure for
//     MaxTTL (plus drift): every lock round that may have written to it
//     before the restart has ended by then, so the largest counter of a
//     quorum of the others, read after that wait, is at least every token
//     it ever acknowledged; it gets that (or its stale counter, if larger).
//     Repairs run in the background (one at a time per Client, each step
//     waiting up to a second for slow masters) when a fenced lock meets an
//     unsure master, after a reconnect, and in New. A master that loses
//     its counter without restarting (FLUSHALL, an eviction) answers as
//     unfenced until a repair's first look marks it unsure, from then on
//     like a restarted one.
//   - Most masters restarted at once, or fresh masters: with no quorum
//     that vouches, the unsure masters start again from the largest counter
//     or stale counter any master has, or the masters' clock in
//     microseconds if larger. Exact when the restarted masters kept every
//     write (appendfsync always); otherwise right as long as fewer than one
//     fenced acquisition per microsecond was made on average since the
//     counters began. This is the one case that rests on a clock, and it
//     needs every master that might vouch to answer: while some of them
//     may, fenced locks wait rather than guess.
//
// The cost is a longer script per acquisition, a second round trip when
// the proposal loses (lockbench's latency mode reports volley-fenced next
// to volley), one script per connect, and,
// after a restart, up to MaxTTL during which that master does not count
// for fenced locks. All clients of the same masters must fence (a client
// without Fencing hands out no tokens and ignores the counters) and use
// the same MaxTTL (a repair waits out the MaxTTL of its own Client). Keys named "volley:fence" or starting
// with "volley:fence:" are refused.
//
// # Redis Cluster
//
// A Config.Addrs entry redis-cluster://host:port[,host:port...][?copies=N]
// (rediss-cluster:// with TLS; credentials as in a redis:// URL) makes a
// Redis Cluster the lock store, and must be the only entry. New asks the
// seeds for the slot map (CLUSTER SLOTS) and places N copies of every key
// (default 3, fewer on a cluster of fewer primaries), each one master of
// the quorum (N/2+1). Copy i of a key lives in the i-th of N ranges of the
// 16384 slots (cut where redis-cli --cluster create cuts the slots of N
// primaries), at a slot chosen from the key inside that range, under that
// slot's hash tag ("{vs" + six digits + "}" before the key). Different
// keys therefore spread over every primary that owns part of a range: a
// cluster of 6 primaries serves about twice the locks of 3, and each lock
// still costs N commands. Keys that share a hash tag ("{order:42}:a")
// share their slots: a multi-key lock over a cluster takes only such keys
// (as Redis Cluster's own multi-key commands do), since a key must be the
// same key in every lock that names it.
//
// New fails (ErrMasterUnusable) when N is above the number of primaries,
// when a seed is not a cluster node, when the cluster does not serve every
// slot, and when another Client placed another N or used the earlier
// layout (one slot per copy): New records the layout and N where every
// Client looks ("{vl…}volley:copies", no TTL). Two copies of one key that
// share a primary (uneven ranges, a resharding) are accepted: safety does
// not rest on placement, and Masters (one entry per copy, listing its
// primaries) and Inspect (each key's copy's address) show it.
//
// Moves. A slot changes hands in a failover or a resharding. While a slot
// migrates, a node that answers ASK for a key it does not have is asked
// again on the importing node, behind ASKING, as Redis Cluster clients do.
// Another answer that says the slot moved (MOVED, CLUSTERDOWN, TRYAGAIN,
// READONLY, a failed connection) counts as a failed vote and has the Client read the slot map
// again (at most every 100ms, and every second unasked); every copy with a
// slot in new hands counts as moved, like a restarted master: its yes
// votes do not count until MaxTTL + FailoverGrace after the Client learned
// of the move. FailoverGrace defaults over a cluster to its node timeout
// plus a second (see Config.FailoverGrace). The case-by-case argument that
// mutual exclusion holds whatever the map does is in docs/cluster.md.
//
// Waiters are woken by releases as over standalone masters: each copy's
// release publishes on a shard channel in its key's slot (SPUBLISH), to
// which a waiting Client subscribes on that slot's node. Not yet over a
// cluster: Fencing (New refuses it).
//
// # Sentinel
//
// A Config.Addrs entry redis-sentinel://host:port[,host:port...]/name
// (rediss-sentinel:// with TLS to the primary; credentials and ?db=N are
// the primary's) is one master of the quorum: the primary that the
// Sentinels call name, wherever they place it. New asks them (it fails
// with ErrMasterUnusable when they answer and none knows the name); the
// Client asks again every second, and at once when an answer says READONLY
// (the server was demoted) or a connection fails, and moves the master to
// the server they name, with its pub/sub connection. Entries of several
// Sentinel groups, and standalone masters, make up the quorum together;
// one server under two entries fails New (the same run_id).
//
// A move is the Redis Cluster's failover case above, and is guarded the
// same way (MaxTTL + Config.FailoverGrace from when the Client learned of
// it). Here the deposed primary takes writes for as long as it does not
// know it was deposed: bound that with min-replicas-to-write and
// min-replicas-max-lag on the primaries, and set FailoverGrace above
// that bound.
//
// # Another process's lock
//
// Lock.Token returns the value a lock holds its key with on the masters;
// Client.Resume makes a Lock of a key, a token and the end of its
// validity, in another Client or process, which then extends and
// releases it as its own. The masters check the token as for any lock,
// so a wrong one extends and releases nothing (ErrNotHeld); a malformed
// one fails Resume with ErrBadToken.
//
// # Errors
//
// ErrNotAcquired, ErrNotHeld, ErrExtendFailed and ctx's errors tell the
// kind (errors.Is); an *Error (errors.As) adds each master's outcome. A
// plain contention failure returns ErrNotAcquired itself, without
// allocating. ErrNoPermission ends an acquire at once when the masters'
// ACL denies a command or a key on all but less than a quorum; ErrConfig
// is an invalid Config, address or argument (an empty key, a TTL that
// the drift allowance would leave no validity), refused before anything
// is sent. No error contains a token or a password.
//
// # Concurrency
//
// A Client is safe for concurrent use. It owns one connection (and its
// goroutines) per master, one pub/sub connection per master once a Lock
// has waited, and, with Fencing, at most one goroutine at a time repairing
// fencing counters; Close stops them all and ends the waits under way. A
// Lock is a value: use one copy from one goroutine at a time, and so are
// a Permit and a ReadLock. A Semaphore and an RWMutex are safe for
// concurrent use; Semaphore.Do and RWMutex.DoRead extend their hold from a
// goroutine of their own, which ends before they return. Do
// starts no goroutine: it registers its lock with the Client's renewer (one
// goroutine per Client, started by the first Do, stopped by Close), which extends
// every Do's lock that is due in one batch per master, and unregisters it
// before it returns.
package redlock
