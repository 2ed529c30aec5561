// Package leakcheck fails a test binary that leaves goroutines running.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
//
// After all tests ran it waits up to a few seconds for goroutines to finish,
// then lists every goroutine that is not part of the runtime or the testing
// package and exits non-zero if there is any.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Main runs the tests and then checks for leaked goroutines. It does not
// return: it exits with the tests' code, or 1 if goroutines leaked.
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := Wait(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines still running after the tests:\n\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// Wait waits up to timeout for all non-system goroutines to end and returns
// the stacks of those still running ("" when none is).
func Wait(timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for {
		leaked := interesting()
		if len(leaked) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// interesting returns the stacks of goroutines other than the caller's and
// the runtime's or testing framework's own.
func interesting() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // the calling goroutine
			continue
		}
		if ignored(g) {
			continue
		}
		out = append(out, g)
	}
	return out
}

func ignored(stack string) bool {
	for _, s := range []string{
		"testing.(*M).",
		"testing.tRunner",
		"testing.(*T).Run",
		"testing.runFuzzing",
		"os/signal.signal_recv",
		"os/signal.loop",
		"runtime.ensureSigM",
	} {
		if strings.Contains(stack, s) {
			return true
		}
	}
	return false
}
