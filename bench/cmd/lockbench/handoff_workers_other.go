//go:build !linux

package main

import "syscall"

// childProcAttr: no parent-death signal outside Linux; a handoff child
// ends when its stdin does (the parent closed it, or died).
func childProcAttr() *syscall.SysProcAttr { return nil }
