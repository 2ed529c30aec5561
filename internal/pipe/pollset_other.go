//go:build !linux

package pipe

import "time"

// pollSet exists only on Linux (see pollset_linux.go): elsewhere no socket
// is detached, and Claim always reports false.
type pollSet struct{}

func (*pollSet) init(int)                {}
func (*pollSet) ok() bool                { return false }
func (*pollSet) watch(int, *socket) bool { return false }
func (*pollSet) wait(time.Duration) int  { return 0 }
func (*pollSet) index(int) int           { return 0 }
func (*pollSet) close()                  {}
