package pipe

import "time"

// epoch is the origin of the Conn's own clock readings (see monoNow).
var epoch = time.Now()

// monoNow is a monotonic clock reading in nanoseconds since epoch: one
// read of the runtime's monotonic clock, where time.Now reads the wall
// clock as well, which on a virtual machine costs about as much again. A
// request is stamped with one when it is sent and one when its reply
// arrives. Inside a testing/synctest bubble it reads the bubble's clock,
// as time.Now does.
func monoNow() int64 { return int64(time.Since(epoch)) }

// monoTime returns the time.Time (with its monotonic reading) of a
// reading of monoNow.
func monoTime(ns int64) time.Time { return epoch.Add(time.Duration(ns)) }
