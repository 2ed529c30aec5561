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
// QUIT, INFO (sections server and keyspace), TIME, GET, SET (NX, XX, GET,
// EX, PX, EXAT, PXAT, KEEPTTL), DEL, EXISTS, PEXPIRE (NX, XX, GT, LT),
// PTTL, TTL, EVAL, EVALSHA and SCRIPT LOAD|EXISTS|FLUSH. Values are strings
// only. Scripts are not interpreted: EVAL and SCRIPT LOAD accept only
// CompareAndDeleteScript and CompareAndPexpireScript (whitespace and quote
// style may differ), which run natively in Go; any other script is refused
// with an error that says so.
//
// Keys expire by the Options.Clock, lazily when read, and a few at a time
// as commands run, so no goroutine sweeps them; a ManualClock lets tests
// expire keys without sleeping. Keys counts live keys only.
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
// The Server owns one goroutine that accepts connections and one per open
// connection; Close ends all of them and waits for them, also connections
// that hang on a fault. Every command runs under one server-wide lock, as
// on Redis' single thread, so each command and each script is atomic with
// respect to every other. A connection answers its commands in order,
// writing the replies to everything it has read in one write; a fault's
// Latency delays only its own connection. ManualClock is safe for
// concurrent use; a custom Clock must be too.
package fakeredis
