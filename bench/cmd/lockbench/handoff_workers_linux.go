package main

import "syscall"

// childProcAttr has the kernel kill a child (a handoff child, cfloor)
// when the parent dies, even by SIGKILL, where stdin's end would come only
// once the child reads it. (Pdeathsig follows the thread that started the child; the Go
// runtime does not end its threads but for locked goroutines'.)
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
