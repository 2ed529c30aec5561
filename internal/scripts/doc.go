// Package scripts holds the Lua scripts of Redlock, one copy of each: the
// lock layer (package redlock) sends them to Redis, and the fake master
// (internal/fakeredis) recognises them, by text or SHA-1, and runs them
// natively.
//
// Each script is a .lua file of this directory, embedded at build time.
// Its Source is the file's content without its final newline, the exact
// bytes sent with EVAL and SCRIPT LOAD; its SHA, the hex SHA-1 of Source
// that Redis names it by, is computed when the package is initialised. A
// comment in a .lua file would change those bytes, so what a script does
// (what its KEYS and ARGV are, what it returns) is documented on its Go
// value instead.
//
// # Ownership and concurrency
//
// The package owns every Script and All. They never change after
// initialisation, so they are safe for concurrent use; callers must not
// modify them. A Script is a small value of three strings: copying it
// copies no script text.
package scripts
