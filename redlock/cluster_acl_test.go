package redlock

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/redistest"
)

// clusterACL is the least-privileged user of docs/deployments.md ("The
// ACL a deployment needs") over a Redis Cluster, for locks on keys under
// app:lock:, as the docs derive it from the standalone user (minimalACL):
// the copies' tags in its key and channel patterns (fencing's keys
// included), plus the slot map and the record of the number of copies.
// TestDeploymentACLLines checks that the docs' line is this user.
func clusterACL() []string {
	var rules []string
	for _, r := range minimalACL {
		switch {
		case r == "~app:lock:*":
			r = "~{vs*}app:lock:*"
		case r == "&volley:released:app:lock:*":
			r = "&volley:released:{vs*}app:lock:*"
		case r == "~volley:fence" || r == "~volley:fence:*":
			r = "~{vs*}" + r[1:]
		}
		rules = append(rules, r)
	}
	return append(rules, "+cluster|slots", "~{vl*}volley:copies")
}

// TestClusterMinimalACL: over a cluster whose every node has only the
// documented user, New reads the slot map and records the copies, and a
// lock, its extension, a waiter woken by the release, Inspect and a
// fenced lock work.
// Without +cluster|slots (the broken variant) New fails, naming NOPERM.
func TestClusterMinimalACL(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	cl := redistest.StartClusterT(t, redistest.ClusterOptions{Replicas: -1})
	for _, n := range cl.Nodes() {
		require.NoError(t, n.Command(clusterACL()...))
		rules := slices.DeleteFunc(clusterACL(), func(r string) bool { return r == "+cluster|slots" })
		rules[2] = "noslots"
		require.NoError(t, n.Command(rules...))
	}
	user := Connection{Username: "volley", Password: "volley-pw"}
	a := clusterClient(t, cl, Config{Conn: user})
	var failed atomic.Int32
	b := clusterClient(t, cl, waiterConfig(Config{Conn: user}, &failed))
	key := "app:lock:cluster-acl"

	l, err := a.Lock(bg, key, 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Extend(bg, 10*time.Second))
	requireWokenByRelease(t, l, b, key, &failed)
	states, err := a.Inspect(bg, key)
	require.NoError(t, err)
	assert.Len(t, states, 3)

	f := clusterClient(t, cl, Config{Conn: user, Fencing: true, RetryDelay: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	fl, err := f.Lock(ctx, key+":fenced", time.Second)
	require.NoError(t, err, "a fenced lock as the documented user")
	assert.NotZero(t, fl.Fence())
	require.NoError(t, fl.Unlock(bg))

	_, err = New(bg, Config{Addrs: []string{clusterAddr(cl, "")}, Conn: Connection{Username: "noslots", Password: "volley-pw"}})
	require.Error(t, err, "New must refuse a user that may not read the slot map")
	assert.Contains(t, err.Error(), "NOPERM")
}
