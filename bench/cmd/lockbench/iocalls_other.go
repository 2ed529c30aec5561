//go:build !linux

package main

// ioCalls is not measured on this platform (Linux's /proc/self/io).
func ioCalls() (int64, bool) { return 0, false }
