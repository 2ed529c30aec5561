package main

// The floor is the lowest-overhead Redlock Lock+Unlock this machine
// allows, shown next to every library so that each run measures Volley's
// distance to it. It is Go without the runtime's netpoller in the way: raw
// non-blocking TCP sockets and epoll (golang.org/x/sys/unix), one socket
// per master with TCP_NODELAY, each command written with one write() per
// master, replies parsed in place (floor_reply.go), no goroutines and no
// allocation per operation. It is Linux only (contender_floor_linux.go);
// elsewhere its constructor fails and lockbench lists it as skipped.
//
// It is a floor, not a library: it never reconnects (a master whose socket
// failed counts as a failed master until Close), keeps no clock-drift
// margin (a lock counts if a quorum said +OK within the TTL), and trusts
// the script cache (loaded once, at construction).
//
// Two rows come from it:
//
//   - floor: a Contender, Lock+Unlock one at a time per caller, in the
//     latency, throughput, contended and allocs modes;
//   - floor-pipelined: the throughput mode only, the most Lock+Unlock pairs
//     per second the masters serve (floorDepth pairs in flight per master),
//     the row the throughput table's "x floor" column is relative to.

const (
	nameFloor          = "floor"
	nameFloorPipelined = "floor-pipelined"
)

// floorModes are the modes the floor takes part in. It has no waiting, no
// renewal and no multi-key lock, and the skew, degraded and handoff modes
// measure behaviour under faults, not overhead.
var floorModes = []string{modeLatency, modeThroughput, modeContended, modeAllocs}

// floorDepth is how many Lock+Unlock pairs floor-pipelined keeps in flight
// per master: one batch of SETs, then one batch of releases. At most 64:
// floorSet.pipelined keeps a batch's outcomes in a uint64.
const floorDepth = 64

// floorUnlockScript is the standard compare-and-delete release: delete the
// key only if it still holds the caller's token.
const floorUnlockScript = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
