//go:build !linux

package main

import (
	"errors"
	"runtime"
)

// newFloor fails: the floor is raw epoll sockets, Linux only, and
// lockbench lists it as skipped.
func newFloor(Setup) (Contender, error) {
	return nil, errors.New("needs Linux (raw epoll sockets), not " + runtime.GOOS)
}
