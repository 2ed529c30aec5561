//go:build !linux

package main

import (
	"errors"
	"runtime"
)

// newFloorC fails: cfloor is raw epoll sockets, Linux only, and lockbench
// lists floor-c as skipped.
func newFloorC(Setup) (Contender, error) {
	return nil, errors.New("not measured: needs Linux (cfloor is epoll), not " + runtime.GOOS)
}
