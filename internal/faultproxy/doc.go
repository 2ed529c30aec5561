// Package faultproxy is a fault-injecting TCP proxy for tests, torture runs
// and benchmarks: one Proxy stands in front of one master, and its knobs
// add latency, partition it (blackhole), reset or refuse connections, and
// corrupt, truncate, drip or pace the replies (Slow: a master slower than
// its request rate, whose backlog outlives the fault), while traffic flows.
//
//	p, err := faultproxy.Start(server.Addr())
//	...
//	defer p.Close()
//	// point the client at p.Addr()
//	p.Blackhole(true) // partition the master
//
// # Data path
//
// Each accepted connection is paired with a connection to the target, and
// each direction has a reader goroutine and a writer goroutine joined by a
// bounded FIFO of chunks (the delay line): the reader stamps every chunk
// with its arrival time, the writer forwards it at arrival+latency, so a
// latency delays each byte without cutting throughput. A full delay line
// stops the reader (backpressure).
//
// # Concurrency
//
// Every method is safe for concurrent use, and every knob takes effect at
// once on existing connections as well as new ones. A Proxy owns its
// listener, its connections and all its goroutines (one accept loop, four
// per connection); Close stops all of them before it returns.
package faultproxy
