//go:build unix

package redistest

import (
	"fmt"
	"os"
	"syscall"
)

// pauseProcess stops (SIGSTOP) or continues (SIGCONT) p.
func pauseProcess(p *os.Process, pause bool) error {
	sig := syscall.SIGCONT
	if pause {
		sig = syscall.SIGSTOP
	}
	if err := p.Signal(sig); err != nil {
		return fmt.Errorf("redistest: %v: %w", sig, err)
	}
	return nil
}
