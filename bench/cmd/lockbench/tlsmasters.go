package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/volleylock/volley/internal/redistest"
)

// The TLS side of the masters (issue #56: managed Redis is TLS): local
// servers that lockbench starts listen on a TLS port beside the plain
// one, with a self-signed certificate made for the run, so that the
// volley-tls contender can measure Volley over TLS against Volley over
// plain sockets on the same servers, in the same run.

// benchCert is a self-signed certificate for 127.0.0.1, valid for a day,
// in PEM files in dir, and the pool that trusts it.
type benchCert struct {
	certFile, keyFile string
	pool              *x509.CertPool
}

func newBenchCert(dir string) (benchCert, error) {
	c, err := redistest.MakeCert(dir, 24*time.Hour)
	if err != nil {
		return benchCert{}, err
	}
	return benchCert{certFile: c.CertFile, keyFile: c.KeyFile, pool: c.Pool}, nil
}

// tlsArgs are a server's arguments for a TLS port beside its plain one.
func (c benchCert) tlsArgs(port int) []string {
	return []string{
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", c.certFile, "--tls-key-file", c.keyFile, "--tls-ca-cert-file", c.certFile,
		"--tls-auth-clients", "no",
	}
}

// freePort returns a TCP port of 127.0.0.1 that nobody listened on a
// moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// loadRoots reads the PEM certificates of path (-tls-ca) into a pool.
func loadRoots(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("lockbench: -tls-ca %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// errNoTLSMasters is volley-tls's reason to sit out a run.
var errNoTLSMasters = errors.New("no TLS masters: the redis-server or valkey-server masters lockbench starts get a TLS port when the server was built with TLS (fakes never); with -masters, name the same masters' TLS ports with -tls-masters and their CA with -tls-ca")
