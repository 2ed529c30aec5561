package main

import "errors"

// floor-blocking is floor-pipelined's batching behind a blocking call: the
// cheapest Lock and Unlock that block their goroutine that we have built
// on this machine. G caller goroutines queue their commands (a Lock's SET,
// an Unlock's release); one driver goroutine writes what is queued, in
// order and at most floorDepth commands at a time as floor-pipelined does,
// in one write per master, reads every master's replies, and wakes their
// callers. So a Lock+Unlock pays floor-pipelined's system calls, shared
// over a batch, plus what blocking adds: its goroutine parked and woken
// twice, the queue's lock, a wake-up of the driver, the driver's thread
// blocked in epoll_wait. Its CPU per operation against floor-pipelined's
// is the price of blocking the caller; Volley's against it is what
// Volley's own machinery (a writer and a reader per master, returning at
// a quorum, deadlines, reconnection) adds to that price.
//
// A variant that wrote the queued Locks and the queued Unlocks in separate
// batches cost 6% and 9% more CPU per operation at 16 and 64 goroutines
// and the same at 256 (medians of 4 interleaved pairs, within this
// machine's noise): this one is kept as the simpler, and no dearer.
//
// It is a reference, not a lock: it never retries, never reconnects,
// keeps no drift margin, answers a batch only once every master has (or
// MasterTimeout passed), and waits out its batch when the caller's context
// ends. Linux only, like the floor (contender_floor_blocking_linux.go).

const nameFloorBlocking = "floor-blocking"

// floorBlockingModes are the modes floor-blocking takes part in: the
// throughput mode, whose CPU per operation it is a reference for, and the
// latency mode, where one caller shows what the hand-off to the driver
// costs a lone Lock+Unlock.
var floorBlockingModes = []string{modeLatency, modeThroughput}

var errFloorClosed = errors.New("lockbench: floor-blocking: closed")
