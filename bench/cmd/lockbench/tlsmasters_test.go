package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVolleyTLSLocksOverTheMastersTLSPorts: the local masters lockbench
// starts get a TLS port each, volley-tls locks over them (and says so in
// its name), and without TLS ports it sits the run out with the reason.
func TestVolleyTLSLocksOverTheMastersTLSPorts(t *testing.T) {
	mas, stop, err := startMasters(2, false, "redis-server")
	t.Cleanup(stop)
	require.NoError(t, err)
	require.Len(t, mas.TLSAddrs, 2, "every local master has a TLS port")
	require.NotNil(t, mas.TLSRoots)

	s := Setup{Addrs: mas.Addrs, TLSAddrs: mas.TLSAddrs, TLSRoots: mas.TLSRoots, MasterTimeout: 100 * time.Millisecond, TTL: 10 * time.Second, RetryDelay: 5 * time.Millisecond, Tries: 3}
	c, err := newVolleyTLS(s)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	assert.Equal(t, nameVolleyTLS, c.Name())
	require.NoError(t, c.LockUnlock(context.Background(), "lb:test:tls", s.TTL))

	s.TLSAddrs = nil
	_, err = newVolleyTLS(s)
	assert.ErrorIs(t, err, errNoTLSMasters)
}
