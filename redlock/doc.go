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
// Each section below says what a feature does and guarantees; why it
// holds, case by case, is in the repository's [docs/design.md] under the
// same heading, and for Redis Cluster in [docs/cluster.md].
//
// # Types
//
//   - [Client], made by [New] from a [Config], holds the connections to
//     the masters and makes every lock. [Connection] configures those
//     connections.
//   - [Lock] is a held lock on one key ([Client.Lock], [Client.TryLock])
//     or on several ([Client.LockMulti]): Extend, Unlock, Validity, Fence,
//     Token, Inspect. [Client.Do] and [Client.DoMulti] hold one while a
//     function runs, extending it, and release it.
//   - [Semaphore] ([Client.Semaphore]) admits at most P holders at once,
//     each with a [Permit].
//   - [RWMutex] ([Client.RWMutex]) admits many readers, each with a
//     [ReadLock], or one writer, whose lock is a [Lock].
//   - [Election] ([Client.Election]) elects one leader at a time, each
//     with a [Leadership] whose term fences its writes; followers read
//     the leader as a [LeaderInfo].
//   - [Error] is a failed operation ([Op]) with each master's
//     [MasterResult] and [Outcome].
//   - [Hooks] observe calls ([CallEnd]), each master's answers and lock
//     events ([Event]); [ResultOf] names a call's result for telemetry.
//     The redlockotel and redlockprom modules set them.
//   - [Client.Masters] ([MasterStatus]) and the Inspect methods
//     ([KeyState]) show how the masters are and what they hold, for
//     operators and debugging.
//   - Package redlocktest starts in-process masters that a test can break
//     (restart empty, pause, slow, partition), for testing code that locks.
//
// # Algorithm
//
// Acquire sends SET key token NX PX ttl to every master at once and counts
// the answers; the lock is held when a quorum (N/2+1) said OK and the
// validity, ttl - elapsed - (ttl*DriftFactor + 2ms) on the monotonic clock,
// is still positive. A failed attempt is released on every master that
// may hold it. Extend and Unlock run the Redlock spec's compare-and-pexpire
// and compare-and-delete scripts, so they act only where the key still
// holds the lock's token. A granted Extend (or renewal) sends the lock
// again to masters where its key is gone (SET NX, with what remains of the
// new TTL), never counted as a vote: see "Restored copies" in
// docs/design.md. Where a
// master's server has them (by the name and version it reports at each
// connect), a lock on one key uses its native compare-and-set commands
// instead, with the same meaning: SET key token IFEQ token PX ttl
// (Valkey 8.1, Redis 8.4) to extend, DELIFEQ key token (Valkey 9.0) or
// DELEX key IFEQ token (Redis 8.4) to release (see
// Config.DisableNativeCommands). Every
// operation on a master is bounded by Config.MasterTimeout. Tokens carry
// 128 bits from a ChaCha8 CSPRNG seeded by crypto/rand.
//
// Mutual exclusion holds while clocks drift less than Config.DriftFactor
// of the TTL, a holder works only within Lock.Validity, and fewer than a
// quorum of masters lose a lock they granted (the restart guard below
// covers masters that restart without persistence). Replies are assumed
// intact, as TCP delivers them on a trusted path; a reply of a shape its
// command cannot have resets that master's connection. A holder that
// pauses past its validity is not excluded by any lock: see Fencing.
//
// # Restart guard
//
// A master that restarts without persistence forgets its keys, and two
// clients could then both count it in their quorum. The restart guard
// keeps a master whose process started less than Config.MaxTTL ago out of
// the quorum (its OK is recorded as OutcomeGuarded); the Client reads each
// master's run_id and uptime on every connect. The price: a freshly
// started set of masters grants no lock for MaxTTL, and TTLs above MaxTTL
// are refused (ErrConfig). A Lock that the guard keeps from a quorum
// waits until the guard ends, or until the keys of other holders on
// enough masters expire to make a quorum without the guarded ones, if
// that is sooner (one wait, counted as one of Config.Tries), or, when
// ctx ends first, fails at once with the guard named. Config.DisableRestartGuard turns it off: only for masters that
// persist every write (appendfsync always), or in tests.
//
// # Slow masters
//
// A master that is slow but alive neither stalls other callers nor grants
// anything. When its oldest pending request has waited 2 x MasterTimeout
// (the conn package's Options.ReadTimeout; a read_timeout address parameter
// sets it for one master), new commands to it wait in the client until it
// catches up, and those given up meanwhile (MasterTimeout) are never sent;
// its connection is reset only when it has besides answered nothing for as
// long, and at least a second (hung, paused, cut off), and reconnects after
// a short random wait, with a backoff that grows while it cannot answer the
// handshake in time. A release that a reset drops is sent again after the
// reconnect, while the value it releases could still be there (MaxTTL). A
// master whose latest reply came after MasterTimeout is not awaited when
// the outcome hangs on it (OutcomeSlow) until it answers in time again,
// unless fewer than a quorum would be left to await. When a quorum is that
// slow (a busy machine: the latencies are of replies that came), every
// operation waits up to twice the quorum's latest latency, at most a
// second, instead of MasterTimeout: a busy but healthy quorum does not fail
// Extends (which in Do would cancel the work), Unlocks, or a Lock's votes.
// A master that went silent does not stretch the wait. A release (Unlock,
// and the other kinds' releases) short of answers at MasterTimeout waits
// for them up to half a second (or MasterTimeout, if longer) in any case:
// it plays no part in exclusion, and a lock won on exactly a quorum failed
// its Unlock when one master of the quorum answered a few milliseconds
// late. A late SET on a slow master is followed by the failed attempt's
// release on the same connection (sent again if a reset drops it). None of
// this can grant a lock: it only turns votes into failures.
//
// # Waiting
//
// A Lock that finds its key taken does not poll: it waits for the release.
// Unlock publishes (SPUBLISH), on every master that held the key, a message
// on the shard channel "volley:released:" + key (its payload identifies
// the release, not the token). A Client with a waiting Lock subscribes
// (SSUBSCRIBE) on one pub/sub connection per master, opened when its first
// Lock waits and closed by Close; a key's subscriptions outlive its last
// waiter by two seconds, so a Lock that waits on it again soon finds them
// made. A release heard from a quorum wakes the
// longest-waiting Lock of the key in one Client, which attempts at once:
// a key is taken about a round trip after its release. Which Client: a
// waiting Lock's attempt enrolls its Client among the key's waiters, a
// sorted set on each master named key + ":volley:waiters", and the
// release tells the Client that has waited longest, on that Client's own
// channel of the key, so one release reaches one process however many
// wait (a release that names nobody, as a native command's, wakes one
// waiter in each Client). For 200 ms the other Clients' waiting attempts
// leave the free key to the one told (key + ":volley:named"). A new Lock of a
// key queues behind the Client's waiters for it rather than barging in.
// Every attempt that waits, among the waiters or not (a fenced or
// multi-key Lock, a read-write lock's writer or reader, or a Client whose
// ACL refuses the sorted set), also marks the key (key +
// ":volley:listen", living as long as the waiters' set would). A release
// that finds no mark publishes nothing: an uncontended Unlock costs the
// master one EXISTS, not a publish (a native release, DELIFEQ or DELEX,
// is followed by its SPUBLISH all the same). A key stays marked for its
// waiters' TTL after its last waiter took it, and its releases publish
// until then.
// When waiters of several processes split the votes, they agree on one to
// try again at once; the others back off.
//
// # Many processes on one key
//
// Waking another process and its attempt take a millisecond or more (10-15
// ms among 64 processes on two cores), and a process that releases a key
// in a loop would take it back first: its waiter would have been woken for
// nothing. So a Client that takes a key back right after releasing it
// keeps its turn: the release of a one-key Lock wakes no waiter of another
// Client until the longest has waited Config.HandOffAfter (default 500ms),
// and then, once this Client has held the key for 12 ms since its turn
// began, the release wakes it and this Client's next Lock of the key waits
// behind it instead of taking the key back. A release that woke nobody
// wakes the longest waiter a millisecond later when its Client did not
// come back for the key. So a fleet runs at about the
// speed of one process looping on the key (the README's fleet figures)
// while no waiter waits much longer than HandOffAfter plus 12 ms and a
// hand-off for each process whose turn came first. A negative
// HandOffAfter wakes the longest waiter at every release.
// Native releases (DELIFEQ) do not take part (see DisableNativeCommands).
//
// Every wait is bounded by a random draw in [RetryDelay/2, RetryDelay]
// (Config.RetryDelay, Config.RetryDelayFunc) and by the holder's key's
// expiry, so a lost message, a dropped pub/sub connection (it reconnects)
// or an ACL that forbids SSUBSCRIBE or SPUBLISH costs a waiter at most
// RetryDelay. A wait for a one-key Lock's holder that runs out first looks
// at the key: one MGET of the key and the name a release left on it, at
// one master that answered the last attempt "taken" (drawn at random),
// where an attempt runs a script of five commands on every master. It
// attempts when the key is free for it (not held, and not named for
// another Client) at two looks 2 ms apart at that master (the first may
// fall in the moment between a Client's release and its next take), and
// otherwise waits again; in a fleet, the waiters behind the longest, whom
// no release wakes, send looks, not attempts.
// Within one Client, Unlock hands the lock straight to a
// waiting Lock of the same key, which takes it over with a token and a TTL
// of its own in one round trip and without a release, at most
// Config.LocalHandoffs times in a row (default 3), so that other Clients'
// waiters get their turn. Locks on several keys and fenced locks are not
// handed over. An uncontended Lock never touches any of this, nor does
// one that too few masters could vote on (see ErrNoQuorum): it waits the
// retry delay, subscribed to nothing, and attempts again.
//
// # How much a Lock sends
//
// Whatever the masters answer, a Lock sends a bounded number of commands,
// and a bounded number per second. Each attempt is one command per master
// and, when it fails, at most one release per master; a look (above) is
// one command (one per master when no master answered "taken"), and
// counts as an attempt when it finds the key
// taken (one that finds it free is followed, 2 ms later, by a look that
// counts or by the attempt). Attempts count
// toward Config.Tries, except those a release woke and quick retries after
// split votes, of which at most 8 come in a row: a Lock makes at most
// 9*Tries-8 attempts. Waits last at least RetryDelay/2 unless a release,
// the holder's key expiring, the restart guard's end or a free look's
// second look cuts them short; a
// failed attempt's release never wakes a waiter of its own Client, and a
// Lock held out by the restart guard is deaf to releases. An attempt whose
// quorum said yes but whose validity ran out (a TTL too short for the
// masters' latency) waits RetryDelay.
//
// # Several keys
//
// LockMulti, TryLockMulti and DoMulti take up to MaxKeys keys as one lock.
// On each master one script sets every key to the lock's token only if
// none of them exists, so a master votes yes for the whole set or for none
// of it; the quorum and the validity are counted as for one key, and
// Extend and Unlock act on every key all or nothing (Unlock deletes
// whatever is still the lock's). Nobody ever holds part of a set, so
// overlapping sets cannot deadlock: they contend like single keys. The
// keys are sorted and deduplicated (Lock.Keys); a steady stream of
// multi-key locks allocates nothing.
//
// # Semaphores
//
// Client.Semaphore(name, P) admits at most P holders at once (P from 1 to
// MaxPermits), each with a Permit. The semaphore is P locks, not a
// counter: permit i is the key name+":permit:"+i, held as a Lock's key is,
// on a quorum of masters within the validity; at most one holder per
// permit gives at most P holders, under the assumptions of Algorithm.
// Acquire asks every master for one permit in one burst, and the masters
// answer which permits are free; a failed attempt asks next for the one
// free on the most masters, at once when that is a quorum, else when a
// release wakes it or RetryDelay passes. TryAcquire fails only when no
// permit was free on a quorum. Semaphore.Do keeps a permit extended while
// a function runs, renewed in batches with the Client's other permits. Every Client must give the same P: the name itself
// holds a record of it while a permit is held, and another P, or a Lock of
// the name, fails with ErrSemaphoreMismatch where it meets the record,
// writing nothing there. With Config.Fencing a permit carries Permit.Fence,
// greater than every earlier holder's of the same Permit.Index. Over a
// Redis Cluster every key of one copy of a semaphore carries that copy's
// hash tag.
//
// # Read-write locks
//
// Client.RWMutex(name) admits many readers at once or one writer: never a
// reader beside a writer, under the assumptions of Algorithm. The writer's
// lock (Lock, TryLock, DoWrite) is a Lock of the name: its key is the name
// itself, and Extend, Unlock, hand-overs and renewal are a Lock's. Readers
// (RLock, TryRLock, DoRead) are entries of the sorted set name+":readers",
// scored by their expiry on the master's clock; a writer is granted only
// where no reader that has not expired is, a reader only where the
// writer's key is absent. Writers are not starved: a writer that waits and
// finds readers writes an intent (name+":intent", with its TTL) that keeps
// new readers out until it takes the lock or the intent expires. A
// writer's release wakes every reader of a Client waiting for it. With
// Config.Fencing the writer's Lock carries a fencing token, greater than
// every earlier writer's and every earlier fenced Lock's of the name; read
// locks carry none.
//
// # Fencing
//
// A holder that pauses past its validity (GC, swap, SIGSTOP) may still
// write to the resource after the next holder got the lock; no lock can
// prevent that, but the resource can refuse the late write if every
// holder brings a number greater than every earlier holder's, a fencing
// token. With Config.Fencing, Lock.Fence (and FenceFrom in Do's function)
// is one: strictly greater than every earlier holder's of its key, across
// all clients with Fencing on and across master restarts.
//
// Each master keeps one counter, the key "volley:fence", for all keys and
// clients, and two bookkeeping keys ("volley:fence:run" and the hash
// "volley:fence:unsure"): three keys per master whatever the number of
// locks. Keys named "volley:fence" or starting with "volley:fence:" are
// refused. A fenced Lock takes one round trip when the token its Client
// proposes (the clock in microseconds, or one more than the largest token
// it has seen) is above a quorum's counters, and two otherwise; a wrong
// clock costs the second round or larger tokens, never a smaller one. A
// master that restarted, or lost its counter, does not count toward a
// fenced lock's quorum (OutcomeUnfenced) until the Client has repaired its
// counter from the others', MaxTTL (plus drift) after it found it unsure;
// repairs run in the background. When most masters restart at once, the
// counters start again from the largest one left or the masters' clock in
// microseconds: exact with appendfsync always, otherwise right as long as
// fewer than one fenced acquisition per microsecond was made on average.
// All clients of the same masters must set Fencing (a client without it
// hands out no tokens) and the same MaxTTL.
//
// Over a Redis Cluster each copy keeps one counter per place (see Redis
// Cluster), in the slot of the copy's keys, and each fencing script
// first checks, for its slot, that the node serving it is the one that
// last vouched for the counter (its run_id and master_replid): a slot
// that moved (a failover, a migration) or a node that restarted sets the
// counter aside, and that copy does not count toward fenced locks of its
// keys until a repair, MaxTTL (plus drift) + FailoverGrace later. Why
// tokens still grow through migrations, failovers that lose writes and
// restarts is argued in docs/cluster.md ("Fencing over a cluster").
//
// # Elections
//
// Client.Election(name, ttl) (which needs Config.Fencing) elects one
// leader at a time among the processes that Campaign: a leadership is a
// fenced Lock of the name, so it has the mutex's guarantees, and its term
// (Leadership.Term) is the lock's fencing token, greater than every
// earlier leader's. Campaign takes it with the acquire loop every lock
// uses, waiting for the leader's release, which wakes it; the winner then
// writes its record (term and value) to the key name+":leader" on every
// master, with the lock's TTL, and publishes it on the name's release
// channel. The Client's renewer keeps the leadership and its record
// extended (no goroutine per leadership, MaxExtensions does not apply),
// and cancels Leadership.Context with the reason when it is lost, a tenth
// of the TTL before its validity would end if renewals keep failing, or
// with ErrResigned at Resign, which releases it and wakes the next
// candidate. Election.Leader reads the record a quorum holds
// (ErrNoLeader if none); Election.Observe streams each new leader, woken
// by the releases and announcements. Over a Redis Cluster the election's
// keys share one place, as a lock's.
//
// # Redis Cluster
//
// A Config.Addrs entry redis-cluster://host:port[,host:port...][?copies=N]
// (rediss-cluster:// with TLS; credentials as in a redis:// URL) makes a
// Redis Cluster the lock store, and must be the only entry. New reads the
// slot map and places N copies of every key (default 3, fewer on a cluster
// of fewer primaries), each one master of the quorum (N/2+1), in different
// ranges of slots under hash tags of their own ("{vs" + six digits + "}"
// before the key). Different keys spread over every primary, and a lock
// costs N commands whatever the cluster's size. A multi-key lock takes
// only keys that share a hash tag ("{order:42}:a"), as Redis Cluster's own
// multi-key commands do.
//
// New fails (ErrMasterUnusable) when N is above the number of primaries,
// when a seed is not a cluster node, when the cluster does not serve every
// slot, and when another Client placed another N or another layout of
// copies, which it learns from a record it writes on the cluster; a
// cluster that answers that write with CLUSTERDOWN, TRYAGAIN or MOVED (a
// failover or a resharding under way) is asked again after a short
// random back-off, at the node a MOVED names, for up to
// Connection.DialTimeout within New's ctx. A slot that changed hands (a failover, a resharding) is
// followed, and the node that took it over is held out for that copy like
// a restarted master until MaxTTL + Config.FailoverGrace after the Client
// learned of the move
// (FailoverGrace defaults over a cluster to its node timeout plus a
// second); a key whose slot is migrating is asked for on the importing
// node (ASKING). Client.Masters and Inspect show which primaries hold each
// copy. Waiters are woken by releases as over standalone masters.
//
// # Sentinel
//
// A Config.Addrs entry redis-sentinel://host:port[,host:port...]/name
// (rediss-sentinel:// with TLS to the primary; credentials and ?db=N are
// the primary's; sentinel_user, sentinel_password and sentinel_tls
// parameters are the Sentinels') is one master of the quorum: the primary
// that the Sentinels call name, wherever they place it. New asks them (it
// fails with ErrMasterUnusable when they answer and none knows the name);
// the Client follows failovers and holds the new primary out for MaxTTL +
// Config.FailoverGrace, as a restarted master. A deposed primary takes
// writes until it knows it was deposed: bound that with
// min-replicas-to-write and min-replicas-max-lag on the primaries, which
// New then reads to set FailoverGrace (their max-lag plus a second),
// unless the Config sets it. Entries of several Sentinel groups, and
// standalone masters, make up the quorum together; one server under two
// entries fails New.
//
// # Another process's lock
//
// Lock.Token returns the value a lock holds its key with on the masters
// (as redsync's WithValue or bsm/redislock's Token); Client.Resume makes
// a Lock of a key, a token and the end of its validity, in another Client
// or process, which then extends and releases it as its own. The masters
// check the token as for any lock, so a wrong one extends and releases
// nothing (ErrNotHeld); a malformed one fails Resume with ErrBadToken. A
// token is a secret: whoever has it can release the lock.
//
// # Errors
//
// errors.Is tells the kind:
//
//   - [ErrNotAcquired]: the lock or permit is held by others: TryLock's
//     one attempt, or Lock's Config.Tries counted attempts, failed. A
//     plain contention failure returns it as is, without allocating.
//   - [ErrNoQuorum]: an outage, not contention: in the last attempt of a
//     Lock, TryLock, LockMulti, Semaphore, RWMutex or Campaign, the
//     masters that gave no vote (timed out, connection failed or refused,
//     answered with a server error, or slow and not awaited) were more
//     than N - quorum, so the others could not have made a quorum
//     whatever they answered (a master not awaited because the outcome
//     was decided without it counts as one that may have voted). A Lock
//     keeps attempting meanwhile, each Config.RetryDelay or so, without
//     waiting for releases; when ctx ends first its error matches
//     ErrNoQuorum beside ctx's if its last answers showed an outage. It
//     never matches ErrNotAcquired.
//   - [ErrNotHeld]: the lock is no longer the caller's (expired, released
//     or taken over), from Extend and Unlock; Do cancels its function's
//     context with it as the cause when the lock is lost, and returns it.
//     A Do's lock or a Leadership whose validity ran out while too few
//     masters could vote on its extensions is lost with an error that
//     matches ErrNoQuorum as well.
//   - [ErrExtendFailed]: Extend reached no quorum in time, yet no quorum
//     said the lock was lost; it keeps its previous validity.
//   - [ErrUnlockFailed]: Unlock reached no quorum in time; the masters
//     that did not answer may keep the key until its TTL ends.
//   - [ErrMasterUnusable]: from New, a master no retry can make usable:
//     refused credentials, an ACL that denies a handshake command or
//     EVAL, a TLS certificate that does not verify, a TLS mismatch
//     (rediss:// to a port without TLS, redis:// to a TLS port: the
//     error says which scheme to use), a refused database, a
//     cluster node, Sentinel or replica given as a master, one server
//     under two entries, or a cluster or Sentinel setup that cannot work
//     (see those sections). A master that is merely down does not fail
//     New: Client.Masters reports it, and Client.WaitQuorum waits.
//   - [ErrConfig]: an invalid Config, address or argument (an address
//     whose host cannot be one, as in redis//10.0.0.1:7001, an empty key,
//     a TTL out of range or no longer than its drift allowance, a number
//     of permits), refused before anything is sent.
//   - [ErrNoKeys]: LockMulti, TryLockMulti or DoMulti got no key; it
//     matches ErrConfig.
//   - [ErrNoPermission]: the masters' ACL denies a command or key on all
//     but less than a quorum, so the call stops at once; the per-master
//     errors are the servers' NOPERM replies (see [docs/deployments.md] for
//     the ACL a deployment needs).
//   - [ErrWrongKind]: a lock's name is in use as something else (a
//     semaphore's record, a value that is not a string).
//   - [ErrSemaphoreMismatch]: a semaphore's name is in use as something
//     else (a semaphore of another size, a lock, another type); nothing
//     was written.
//   - [ErrBadToken]: Resume got a token Lock.Token cannot have returned.
//   - [ErrNoLeader]: Election.Leader found no record on a quorum.
//   - [ErrResigned]: the cause of a Leadership's context after Resign.
//   - [ErrFenceRange]: a master's fencing counter is above 2^53-1, which
//     counting never reaches: only a write from elsewhere.
//   - [ErrClosed]: the Client was closed; a Do under way when Close ran
//     returns an error that matches ErrNotHeld and ErrClosed.
//   - When ctx ends, the error matches both ctx.Err() and
//     context.Cause(ctx).
//
// An [*Error] (errors.As) adds each master's outcome (ok, taken, timeout,
// connection error, server error, restart guard, cancelled, slow,
// unfenced, or not awaited when the call was decided before it answered;
// when ctx ends a Lock, each master's last real answer).
// A connection error that looks like a TLS mismatch names the scheme the
// server likely needs. No error contains a token or a password.
//
// # Concurrency
//
// A Client is safe for concurrent use. The goroutines it owns, all
// stopped by Close, which also ends the waits under way:
//
//   - Per master (over a Redis Cluster, per primary node), one
//     connection from New to Close: one goroutine for its whole life
//     (connect, liveness check, reconnect) and, while connected, a reader
//     and a writer (see the conn package, whose code it runs on). A timer reads the answers that
//     came after their call's decision.
//   - Per master (per node over a cluster), a pub/sub connection with the
//     same goroutines, from the first Lock that waits until Close.
//   - The renewer: one goroutine, started by the first Do (Client.Do,
//     DoMulti, Semaphore.Do, RWMutex.DoWrite and DoRead) or Campaign,
//     which extends every such call's lock, permit, read lock or
//     leadership that is due, in one batch per kind and master. These
//     calls start no goroutine of their own.
//   - Per Election.Observe call, one goroutine that feeds its channel,
//     until its ctx ends or Close.
//   - With a redis-cluster:// or redis-sentinel:// entry, the locator: one
//     goroutine from New to Close that reads the slot map or asks the
//     Sentinels, plus, during each look, one that ends the look if the
//     Client closes, and short-lived connections to the seeds or
//     Sentinels asked.
//   - With Config.Fencing, at most one goroutine at a time repairing
//     fencing counters in the background.
//
// A Lock is a value: use one copy from one goroutine at a time, and so are
// a Permit and a ReadLock. A Semaphore, an RWMutex, an Election and a
// Leadership are safe for concurrent use.
//
// [docs/design.md]: https://github.com/volleylock/volley/blob/main/docs/design.md
// [docs/cluster.md]: https://github.com/volleylock/volley/blob/main/docs/cluster.md
// [docs/deployments.md]: https://github.com/volleylock/volley/blob/main/docs/deployments.md
package redlock
