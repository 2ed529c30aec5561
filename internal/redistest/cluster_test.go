package redistest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/slot"
)

// TestCluster: three primaries with a replica each form a cluster that
// serves every slot; a key written on its slot's owner is read there and
// another primary answers MOVED; a failover swaps a shard's roles; a
// moved slot takes its key along.
func TestCluster(t *testing.T) {
	c := StartClusterT(t, ClusterOptions{})
	require.Len(t, c.Primaries(), 3)
	require.Len(t, c.Nodes(), 6)

	s := slot.Of("foo")
	owner := c.Primary(c.ShardOf(s))
	_, err := Do(owner.Addr(), "SET", "foo", "bar")
	require.NoError(t, err)
	vals, err := Do(owner.Addr(), "CLUSTER", "KEYSLOT", "foo")
	require.NoError(t, err)
	assert.EqualValues(t, s, vals[0].Int, "slot.Of agrees with the server")
	other := c.Primary((c.ShardOf(s) + 1) % 3)
	_, err = Do(other.Addr(), "GET", "foo")
	require.ErrorContains(t, err, "MOVED")

	old := c.Primary(0)
	require.NoError(t, c.Failover(0))
	assert.NotEqual(t, old.Addr(), c.Primary(0).Addr())
	vals, err = Do(old.Addr(), "ROLE")
	require.NoError(t, err)
	assert.Equal(t, "slave", string(vals[1].Bytes), "the old primary is the shard's replica")

	to := (c.ShardOf(s) + 1) % 3
	require.NoError(t, c.MoveSlot(s, to))
	vals, err = Do(c.Primary(to).Addr(), "GET", "foo")
	require.NoError(t, err)
	assert.Equal(t, "bar", string(vals[0].Bytes), "the key moved with its slot")
	_, err = Do(owner.Addr(), "GET", "foo")
	require.ErrorContains(t, err, "MOVED")
}
