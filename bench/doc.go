// Package bench holds Volley's cross-library benchmarks, in a module of its
// own so that the library's go.mod stays lean.
//
//   - codec_test.go: RESP decoding, Volley's resp (Parse and Reader) against
//     redcon's ReadNextRESP and redigo's reply reader.
//   - conn_test.go: GET round trips against a real redis-server, Volley's
//     conn against go-redis v9 and rueidis, at 1 to 256 goroutines.
//   - cmd/lockbench: the lock benchmark, Volley against redsync, bsm/redislock
//     and rueidislock on five masters, and against the floor (Linux): the
//     lowest-overhead Lock+Unlock the machine allows, raw sockets and epoll
//     without the Go netpoller (cmd/lockbench/floor.go); and the floor
//     against floor-c, the same done by a C program that lockbench builds
//     with the machine's C compiler (cmd/lockbench/floor_c.go,
//     cmd/lockbench/cfloor/cfloor.c). Its semaphore mode
//     (cmd/lockbench/semaphore.go) sets Volley's Semaphore beside its mutex,
//     and, on one semaphore of 4 permits contended from 4 processes, beside
//     a naive majority-quorum counter and, where node is installed, the npm
//     package redis-semaphore (installed once with npm into the user's
//     cache directory; reported not measured, with why, where it cannot
//     be).
//
// Run the Go benchmarks with
//
//	go test -run '^$' -bench . -benchmem
//
// Plain go test runs only lockbench's tests: its smoke tests and the
// floors' (floor-c's fail without a C compiler).
package bench
