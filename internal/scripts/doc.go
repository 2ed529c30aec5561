// Package scripts holds the Lua scripts of Redlock, one copy of each: the
// lock layer (package redlock) sends them to Redis, and the fake master
// (internal/fakeredis) recognises them, by text or SHA-1, and runs them
// natively.
//
// Each script is a .lua file of this directory, embedded at build time.
// Each file begins with a comment that says, as the Go value's doc does,
// what the script does, what its KEYS and ARGV are and what it returns
// (the prelude fence_vouch.lua returns nothing: the script after it
// answers), then has one statement a line; comments stand on lines of
// their own. A script's Source, the exact bytes sent with EVAL and
// SCRIPT LOAD, is the file's code on one line: comment and blank lines
// dropped, the others trimmed and joined by a space (so the masters get
// a third of the file's bytes, and an error a script raises names line
// 1). Its SHA, the hex SHA-1 of Source that Redis names it by, is
// computed when the package is initialised.
//
// # Ownership and concurrency
//
// The package owns every Script and All. They never change after
// initialisation, so they are safe for concurrent use; callers must not
// modify them. A Script is a small value of three strings: copying it
// copies no script text.
package scripts
