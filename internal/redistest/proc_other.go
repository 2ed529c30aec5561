//go:build !linux

package redistest

import "os/exec"

// dieWithParent does nothing where the kernel offers no parent-death
// signal: a test binary killed without its cleanups leaves the server
// running, until its temporary directory's owner stops it.
func dieWithParent(*exec.Cmd) {}
