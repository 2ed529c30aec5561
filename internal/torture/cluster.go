package torture

import (
	"errors"
	"fmt"
	"sync"

	"github.com/volleylock/volley/internal/faultproxy"
	"github.com/volleylock/volley/internal/redistest"
)

// cluster is the masters and the proxy in front of each.
type cluster struct {
	servers []*redistest.Server
	proxies []*faultproxy.Proxy
}

// startCluster starts n redis-servers (concurrently) and a proxy for each.
// On error everything started is stopped.
func startCluster(n int) (*cluster, error) {
	cl := &cluster{servers: make([]*redistest.Server, n), proxies: make([]*faultproxy.Proxy, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.servers[i], errs[i] = redistest.StartServer(redistest.Options{})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		cl.stop()
		return nil, fmt.Errorf("torture: starting masters: %w", err)
	}
	for i, s := range cl.servers {
		p, err := faultproxy.Start(s.Addr())
		if err != nil {
			cl.stop()
			return nil, fmt.Errorf("torture: %w", err)
		}
		cl.proxies[i] = p
	}
	return cl, nil
}

// addrs returns the proxies' addresses: what the clients dial.
func (cl *cluster) addrs() []string {
	out := make([]string, len(cl.proxies))
	for i, p := range cl.proxies {
		out[i] = p.Addr()
	}
	return out
}

// stop closes the proxies and kills the servers (paused ones included).
func (cl *cluster) stop() {
	for _, p := range cl.proxies {
		if p != nil {
			p.Close()
		}
	}
	for _, s := range cl.servers {
		if s != nil {
			s.Stop()
		}
	}
}
