package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/internal/redistest"
)

// Kinds of masters: a local server's binary name ("redis-server" or
// "valkey-server"), or one of these.
const (
	kindFake     = "fakeredis (in-process)"
	kindExternal = "external"
)

// serverBinaries are the servers lockbench can start as local masters
// (-server).
var serverBinaries = map[string]string{"redis": "redis-server", "valkey": "valkey-server"}

// Masters are the independent masters of a run.
type Masters struct {
	Kind  string   `json:"kind"`
	Addrs []string `json:"addrs"`
	// TLSAddrs are the same masters' TLS ports, in Addrs' order, when
	// they have some (see tlsmasters.go); TLSRoots trusts them.
	TLSAddrs []string       `json:"tls_addrs,omitempty"`
	TLSRoots *x509.CertPool `json:"-"`
}

// startMasters starts n local masters: processes of bin (redis-server or
// valkey-server) when it is installed (and fake is false), in-process
// fakes when it is not. The returned stop function stops every one of
// them; it is never nil.
func startMasters(n int, fake bool, bin string) (Masters, func(), error) {
	if !fake {
		ms, stop, err := startServers(n, bin)
		if err == nil {
			return ms, stop, nil
		}
		if !errors.Is(err, redistest.ErrNoRedisServer) || bin != "redis-server" {
			// Fakes stand in for a missing redis-server only: -server
			// valkey without valkey-server is an error, not a fake.
			return Masters{}, func() {}, err
		}
	}
	return startFakes(n)
}

// tlsPortAttempts bounds the TLS ports a server is started with before
// it starts without one.
const tlsPortAttempts = 3

func startServers(n int, bin string) (Masters, func(), error) {
	servers := make([]*redistest.Server, n)
	tlsPorts := make([]int, n)
	errs := make([]error, n)
	// Each server gets a TLS port beside its plain one, for volley-tls;
	// a server built without TLS starts without it. The TLS port is
	// probed free before the server binds it, and another process may
	// take it meanwhile (make test-stress saw one master start without
	// TLS, and the run lose volley-tls): a few ports are tried first.
	dir, err := os.MkdirTemp("", "lockbench-tls-")
	if err != nil {
		return Masters{}, func() {}, err
	}
	cert, certErr := newBenchCert(dir)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for attempt := 0; certErr == nil && attempt < tlsPortAttempts; attempt++ {
				port, err := freePort()
				if err != nil {
					break
				}
				servers[i], errs[i] = redistest.StartServer(redistest.Options{Binary: bin, Args: cert.tlsArgs(port)})
				if errs[i] == nil {
					tlsPorts[i] = port
					return
				}
			}
			servers[i], errs[i] = redistest.StartServer(redistest.Options{Binary: bin})
		})
	}
	wg.Wait()
	stop := func() {
		for _, s := range servers {
			if s != nil {
				s.Stop()
			}
		}
		os.RemoveAll(dir)
	}
	if err := errors.Join(errs...); err != nil {
		stop()
		return Masters{}, func() {}, err
	}
	ms := Masters{Kind: bin}
	for i, s := range servers {
		ms.Addrs = append(ms.Addrs, s.Addr())
		if tlsPorts[i] != 0 {
			ms.TLSAddrs = append(ms.TLSAddrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(tlsPorts[i])))
		}
	}
	if len(ms.TLSAddrs) != n {
		ms.TLSAddrs = nil // all or none
	} else {
		ms.TLSRoots = cert.pool
	}
	return ms, stop, nil
}

func startFakes(n int) (Masters, func(), error) {
	var servers []*fakeredis.Server
	stop := func() {
		for _, s := range servers {
			s.Close()
		}
	}
	ms := Masters{Kind: kindFake}
	for range n {
		s, err := fakeredis.Start(fakeredis.Options{})
		if err != nil {
			stop()
			return Masters{}, func() {}, fmt.Errorf("lockbench: fake master: %w", err)
		}
		servers = append(servers, s)
		ms.Addrs = append(ms.Addrs, s.Addr())
	}
	return ms, stop, nil
}
