//go:build !linux

package main

import (
	"errors"
	"runtime"
)

// newFloorBlocking fails: floor-blocking is the floor's raw epoll sockets,
// Linux only, and lockbench lists it as skipped.
func newFloorBlocking(Setup) (Contender, error) {
	return nil, errors.New("needs Linux (raw epoll sockets), not " + runtime.GOOS)
}
