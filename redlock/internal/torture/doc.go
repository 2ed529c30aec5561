// Package torture runs Redlock under faults and checks mutual exclusion.
//
// Run starts N real redis-server masters, each behind a faultproxy, and
// several independent lock clients (each its own redlock.Client with its own
// connections), with many goroutines each contending on a few keys. Every
// holder records its interval on one monotonic clock: from the moment Lock
// returned to the moment it stopped working, which is when it called
// Unlock or, if that came later, when its validity (Lock.Until) ended. The
// Checker flags any two intervals of one key that overlap. Meanwhile a
// nemesis rotates faults: partitions of a minority and of a majority, slow
// masters, connection resets, corrupt replies, paused (SIGSTOP) masters,
// crashes with a delayed or an immediate restart. The Report counts
// acquisitions, failures by kind, latencies, operations stuck past their
// deadline, panics, goroutines and heap, and the violations with both
// holders and the faults active at the time.
//
// The checker is tested on synthetic intervals and against a deliberately
// broken lock (SET without NX), which it must catch.
//
// # Concurrency
//
// Run owns everything it starts: servers, proxies, clients, workers and
// the nemesis. All of them stop, and the servers are killed, before Run
// returns, also when its context is cancelled. A Checker is safe for
// concurrent use.
package torture
