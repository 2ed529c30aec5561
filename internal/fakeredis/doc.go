// Package fakeredis is an in-process fake Redis master for tests and
// benchmarks, built on github.com/tidwall/redcon's command reader.
//
// It exists for two reasons. Tests of the connection and lock layers need
// faults a real server cannot produce on demand: a reply that comes late,
// never comes, stops half-way, or is not valid RESP; a server that forgets
// its scripts or restarts with a new run_id. Set them per command with
// Server.SetFault, RefuseConnections and Restart. And the benchmark harness
// needs a master when redis-server is not installed, so the fake serves
// many concurrent connections and pipelined commands.
//
// It speaks RESP2 and, after HELLO 3, RESP3, and answers the commands a
// Redlock client sends byte for byte as Redis 7.0.15 does, error texts
// included: PING, ECHO, AUTH, HELLO, SELECT, CLIENT SETNAME|GETNAME|ID,
// QUIT, INFO (sections server and keyspace), TIME, GET, MGET, SET (NX, XX, GET,
// EX, PX, EXAT, PXAT, KEEPTTL), DEL, EXISTS, TYPE, PEXPIRE (NX, XX, GT,
// LT), PTTL, TTL, HSET, HGET, HGETALL, ZSCORE, ZCARD, EVAL, EVALSHA,
// SCRIPT LOAD|EXISTS|FLUSH, SUBSCRIBE, UNSUBSCRIBE, PUBLISH, SSUBSCRIBE,
// SUNSUBSCRIBE and SPUBLISH. Values are strings, hashes (for fencing's
// "volley:fence:unsure") or sorted sets (a read-write lock's readers),
// with Redis' WRONGTYPE error where one is used as another; HGETALL lists
// a hash's fields in the order they were first set, as Redis does for
// hashes of up to 128 fields of up to 64 bytes, and ZSCORE writes a score
// as Redis 7.0 does, with C's "%.17g".
// Scripts are not interpreted: EVAL and SCRIPT LOAD accept only the lock
// scripts redlock sends, those of internal/scripts (scripts.All;
// whitespace and quote style may differ), which run natively in Go, their
// SPUBLISH, INFO and TIME included, with Lua's reading and comparison of
// numbers (doubles);
// any other script is refused with an error that says so. A script that
// fails (a missing argument, a key of the wrong type, a counter Lua cannot
// compare) keeps what it changed before, and replies with Redis' error;
// the errors a semaphore's script returns itself (PERMITS, WRONGKIND) are
// worded as Redis passes on redis.error_reply.
//
// # Pub/sub
//
// Channels and shard channels work as on a standalone Redis 7 (no
// patterns). They are two namespaces that never meet: PUBLISH reaches only
// the subscribers of SUBSCRIBE, SPUBLISH only those of SSUBSCRIBE, also on
// a channel of the same name. The release scripts publish with SPUBLISH,
// on the shard channel "volley:released:" followed by the key (a
// semaphore's record key, for scripts.SemRelease when told to; the
// writer's key, for a reader's scripts.RWRUnlock). The count a
// confirmation carries is the connection's subscriptions in that
// namespace alone, as Redis 7 counts them. UNSUBSCRIBE and SUNSUBSCRIBE
// without channels confirm them in the order of their names (Redis'
// order is that of its hash table, unpredictable); with no subscription
// in their namespace, they answer one confirmation with a null channel and
// a count of 0, as Redis 7.0 does (Valkey 8 answers a NOSUB error instead
// when the connection has no subscription at all).
//
// A message goes to every connection subscribed to its channel, as a RESP2
// array or a RESP3 push (["message", channel, payload], or "smessage" for
// a shard channel), and PUBLISH or SPUBLISH answers how many there are. A
// RESP2 connection with subscriptions in either namespace runs only
// SUBSCRIBE, UNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE, PING (answered as
// ["pong", message]) and QUIT, and refuses the rest with Redis' error; a
// RESP3 one runs anything. A message reaches a connection between two of
// its replies, never inside one, after the replies of the commands that
// ran before the PUBLISH or SPUBLISH: a connection that publishes to
// itself gets the message before the command's (or the script's) reply,
// as on Redis 7.0 (Valkey 8 sends the reply first).
//
// Messages wait for a connection in a buffer of at most 8 MiB: a
// subscriber that does not read them, or that hangs on a fault, is
// disconnected when it would hold more, as Redis does with its
// client-output-buffer-limit for pub/sub clients (32 MiB at once, or
// 8 MiB for a minute, by default), so that it never delays the publisher
// or anyone else. Server.DropMessages loses deliveries on purpose, and
// Server.KillSubscribers closes the subscribed connections (to channels or
// shard channels), as CLIENT KILL TYPE pubsub does; Restart and Close
// close them too.
//
// Keys expire by the Options.Clock, lazily when read, and a few at a time
// as commands run, so no goroutine sweeps them; a ManualClock lets tests
// expire keys without sleeping. The fencing scripts read TIME from the
// same clock, and INFO's run_id, which Restart changes; the read-write
// lock's scripts score readers by TIME's milliseconds, so that a reader
// expires by the clock as a key does (a script reads the clock once).
// Keys counts live keys only.
//
// Start a server with Start (the caller owns it and must Close it) or, in
// tests, StartT (closed by the test's cleanup):
//
//	srv := fakeredis.StartT(t, fakeredis.Options{})
//	srv.SetFault("SET", fakeredis.Fault{Latency: 50 * time.Millisecond, Times: 1})
//	// dial srv.Addr() ...
//
// # Concurrency
//
// A Server's methods are safe for concurrent use, also while it serves.
// The Server owns one goroutine that accepts connections, one per open
// connection, and one more per connection that has subscribed, which
// writes the messages published to it while the connection waits for
// commands. Close ends all of them and waits for them, also connections
// that hang on a fault or are blocked writing to a client that does not
// read. Every command runs under one server-wide lock, as on Redis' single
// thread, so each command and each script is atomic with respect to every
// other, and a PUBLISH or SPUBLISH hands its message to every subscriber
// before the lock is released. A connection answers its commands in order, writing
// the replies to everything it has read in one write; a fault's Latency
// delays only its own connection. ManualClock is safe for concurrent use;
// a custom Clock must be too.
package fakeredis
