package main

import "errors"

// floor-blocking is the floor's sockets behind a blocking call: the
// cheapest Lock and Unlock that block their goroutine that we have built
// on this machine. G caller goroutines queue their commands (a Lock's SET,
// an Unlock's release) under one mutex and park on a channel of their
// own; one driver goroutine writes whatever is queued each time it comes
// round, in one write per master (every master the same bytes), while
// earlier commands are still unanswered (up to 256 in flight), reads the
// replies as epoll reports them, and wakes a caller once every master has
// answered its command or let MasterTimeout pass. So a Lock+Unlock pays
// the floor's system calls, shared over what each write carries, plus
// what blocking adds: its goroutine parked and woken twice, the queue's
// lock, a wake-up of the driver, the driver's thread blocked in
// epoll_wait. Its CPU per operation against floor-pipelined's is the price
// of blocking the caller; Volley's against it is what Volley's own
// machinery (a writer and a reader per master, returning at a quorum,
// deadlines, reconnection) adds to that price.
//
// Measured against simpler drivers (throwaway builds, interleaved 5 s
// windows; medians): one that wrote a batch of at most 64 commands and
// waited for every reply before writing the next cost the same at 64
// goroutines (7.51 against 7.37 us per Lock+Unlock) and 1.6x as much at
// 256 (5.94 against 3.66), where the cap of 64 bound it; without the cap
// it cost 3.88 us at 256, and with a queue per master besides (five locks
// and five copies per command, as Volley's Conns have) 5%, 13% and 21%
// more than with one queue at 16, 64 and 256 goroutines.
//
// It is a reference, not a lock: it never retries, never reconnects,
// keeps no drift margin, answers a caller only once every master has
// answered or timed out (not at a quorum), and waits out its command when
// the caller's context ends. Linux only, like the floor
// (contender_floor_blocking_linux.go).

const nameFloorBlocking = "floor-blocking"

// floorBlockingModes are the modes floor-blocking takes part in: the
// throughput mode, whose CPU per operation it is a reference for, and the
// latency mode, where one caller shows what the hand-off to the driver
// costs a lone Lock+Unlock.
var floorBlockingModes = []string{modeLatency, modeThroughput}

var errFloorClosed = errors.New("lockbench: floor-blocking: closed")
