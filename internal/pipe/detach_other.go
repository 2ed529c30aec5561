//go:build !linux

package pipe

import (
	"errors"
	"net"
)

// detached exists only on Linux (see detach_linux.go); elsewhere every
// socket stays in the Go runtime's network poller and is read by its
// reader goroutine.
type detached struct{ drained bool }

func detach(net.Conn) *detached { return nil }

// errWouldBlock is never returned where nothing is detached.
var errWouldBlock = errors.New("conn: no input yet")

func (*detached) acquire() bool                 { return false }
func (*detached) release()                      {}
func (*detached) shutdown()                     {}
func (*detached) Read([]byte) (int, error)      { return 0, net.ErrClosed }
func (*detached) Write([]byte) (int, error)     { return 0, net.ErrClosed }
func (*detached) writeSome([]byte) (int, error) { return 0, net.ErrClosed }
func (*detached) watchInput(bool)               {}
func (*detached) park(func(uintptr) bool) error { return net.ErrClosed }
func (*detached) hungUp(uintptr) bool           { return false }
func (*detached) hungUpIdle() bool              { return false }
func (*detached) closeEpoll()                   {}
