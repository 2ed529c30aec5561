//go:build !unix

package redistest

import "os"

// pauseProcess cannot stop a process here.
func pauseProcess(*os.Process, bool) error { return ErrNoPause }
