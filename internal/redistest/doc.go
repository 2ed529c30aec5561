// Package redistest starts real redis-server (or valkey-server) processes
// for tests and benchmarks: independent masters on free 127.0.0.1 ports,
// without persistence, each in its own temporary directory, with control
// over each process (Kill, Restart with or without data, Pause/Resume
// with SIGSTOP/SIGCONT, Flush).
//
// Tests use Start and StartN, which register cleanup with the test; programs
// use StartServer and own the returned Server until Stop. The binary is
// Options.Binary, else $REDIS_SERVER, else redis-server from PATH; a
// missing binary is an error (ErrNoRedisServer), which the test helpers
// turn into a failure, never a skip.
//
// # Topologies
//
// StartCluster (StartClusterT in tests) forms a Redis Cluster of such
// processes with CLUSTER commands alone: equal slot ranges over the
// primaries, replicas, and a view of the topology that its changes keep
// up to date (Failover, KillPrimary and WaitPromoted, MoveSlot). KeySlot
// computes a key's hash slot.
//
// StartSentinelGroup (StartSentinelGroupT in tests) starts a primary, its
// replicas and Sentinels (the same binary, run with --sentinel) that
// monitor it with short timeouts, so that a failover, requested
// (Failover) or after a crash (KillPrimary, WaitNewPrimary), takes a few
// seconds.
//
// Do sends any command to any server or Sentinel, for what the helpers do
// not cover.
//
// # Concurrency
//
// A Server's methods are safe for concurrent use. Each Server owns exactly one
// process at a time and one goroutine that waits for it; Stop (or the test
// cleanup) ends both. Processes are also started with a parent-death signal
// (on Linux), so a test binary killed without cleanup takes its servers with
// it.
//
// A Cluster's and a SentinelGroup's methods are safe for concurrent use;
// their changes run one at a time, each bounded and returning once every
// node (every Sentinel) agrees. Each owns its Servers and starts no
// goroutine of its own.
package redistest
