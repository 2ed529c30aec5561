// Package redistest starts real redis-server processes for tests and
// benchmarks: independent masters on free 127.0.0.1 ports, without
// persistence, each in its own temporary directory, with control over each
// process (Kill, Restart with or without data, Pause/Resume with
// SIGSTOP/SIGCONT, Flush).
//
// Tests use Start and StartN, which register cleanup with the test; programs
// use StartServer and own the returned Server until Stop.
//
// # Concurrency
//
// A Server's methods are safe for concurrent use. Each Server owns exactly one
// process at a time and one goroutine that waits for it; Stop (or the test
// cleanup) ends both. Processes are also started with a parent-death signal,
// so a test binary killed without cleanup takes its servers with it.
package redistest
