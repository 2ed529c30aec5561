package main

import (
	"errors"
	"os/exec"
)

// floor-c is the floor's Lock+Unlock done by a C program, cfloor
// (cfloor/cfloor.c, embedded): the same commands, the release script
// sent from floorUnlockScript, one socket per master and epoll, no
// threads; what a client without Go's runtime costs on this machine, so
// that each run shows how far the floor itself is from it (the latency
// table's "x floor-c" columns). It is Linux only, like the floor
// (contender_floor_c_linux.go), and needs a C compiler: lockbench builds
// cfloor at startup with the first of cCompilers in PATH, into a
// temporary directory it removes once cfloor runs. Without one, or
// elsewhere than Linux, its constructor fails and lockbench lists it as
// skipped: "floor-c: not measured (no C compiler)".
//
// cfloor is a child process serving lockbench over its stdin and stdout
// (the protocol is at the top of cfloor.c). A round trip to it per
// operation would be part of what is measured, so cfloor times its own
// pairs and the latency mode asks it for a whole measurement at once
// (selfTimer), then merges its samples into the same summaries as every
// other contender's. Two things differ from the floor: a pair is one
// attempt (a failed Lock is a failed pair, not retried), and the replies
// a pair still owes when it returns (the slowest masters') are read
// before the next pair starts, outside its time, where the floor reads
// them during the next operation.

const nameFloorC = "floor-c"

// floorCModes are the modes floor-c takes part in: the latency mode, the
// one it is a reference for. It has no holder (NewHolder's locks fail)
// and no concurrent callers.
var floorCModes = []string{modeLatency}

// errNoCCompiler is floor-c's reason to be skipped on a machine without a
// C compiler.
var errNoCCompiler = errors.New("not measured (no C compiler)")

// cCompilers are the compilers floor-c builds cfloor with: the first one
// in PATH.
var cCompilers = []string{"cc", "gcc", "clang"}

// cFlags are cfloor's compiler flags: -O2 and every warning of -Wall and
// -Wextra (it compiles without any; a test checks).
var cFlags = []string{"-std=c11", "-O2", "-Wall", "-Wextra"}

// findCCompiler returns the path of the first of cCompilers in PATH, or
// errNoCCompiler.
func findCCompiler() (string, error) {
	for _, cc := range cCompilers {
		if path, err := exec.LookPath(cc); err == nil {
			return path, nil
		}
	}
	return "", errNoCCompiler
}
