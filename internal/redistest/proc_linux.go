package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the server should the test binary
// die without running its cleanups (a timeout panic, SIGKILL).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
