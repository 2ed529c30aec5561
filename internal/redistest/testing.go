package redistest

import "testing"

// Start starts one redis-server for the test and registers its cleanup: the
// process is killed when the test ends, also when it fails or panics, and the
// tail of its log is printed if the test failed. A missing redis-server fails
// the test with a message that says how to install it; it never skips.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := StartServer(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("redis-server %s log tail:\n%s", s.Addr(), s.LogTail(30))
		}
		s.Stop()
	})
	return s
}

// StartN starts n independent masters (no replication between them) with the
// same options, as Start does for one.
func StartN(tb testing.TB, n int, opts Options) []*Server {
	tb.Helper()
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = Start(tb, opts)
	}
	return servers
}

// Addrs returns the addresses of servers, in order.
func Addrs(servers []*Server) []string {
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	return addrs
}
