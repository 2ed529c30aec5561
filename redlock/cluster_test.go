package redlock

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/slot"
	"github.com/volleylock/volley/resp"
)

func TestParseClusterAddr(t *testing.T) {
	e, err := parseClusterAddr("redis-cluster://alice:s3cret@10.0.0.1:7000,10.0.0.2:7001?copies=5", conn.Options{DB: 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1:7000", "10.0.0.2:7001"}, e.seeds)
	assert.Equal(t, 5, e.copies)
	assert.Equal(t, "alice", e.opts.Username)
	assert.Equal(t, "s3cret", e.opts.Password)
	assert.Zero(t, e.opts.DB, "cluster nodes have one database")
	assert.Nil(t, e.opts.TLS)

	e, err = parseClusterAddr("rediss-cluster://h:1", conn.Options{})
	require.NoError(t, err)
	require.NotNil(t, e.opts.TLS)
	assert.Equal(t, "h", e.nodeOptions("h:1").TLS.ServerName)

	for _, bad := range []string{
		"redis-cluster://",
		"redis-cluster://h",
		"redis-cluster://h:1?copies=0",
		"redis-cluster://h:1?copies=x",
		"redis-cluster://h:1?replicas=1",
		"redis-cluster://pw:sec%zzret@h:1",
	} {
		_, err := parseClusterAddr(bad, conn.Options{})
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "sec", "an error must not show the password")
	}
}

func TestParseClusterSlots(t *testing.T) {
	// Three primaries, one with a replica; Redis 7 adds a metadata map to
	// each node, and an empty ip means the node asked.
	raw := "*3\r\n" +
		"*4\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n%0\r\n*3\r\n$9\r\n127.0.0.1\r\n:7003\r\n$2\r\nid\r\n" +
		"*3\r\n:5461\r\n:10922\r\n*4\r\n$0\r\n\r\n:7001\r\n$2\r\nid\r\n%1\r\n$8\r\nhostname\r\n$1\r\nh\r\n" +
		"*3\r\n:10923\r\n:16383\r\n*3\r\n$9\r\n127.0.0.2\r\n:7002\r\n$2\r\nid\r\n"
	vals, _, err := resp.Parse(nil, []byte(raw), resp.Limits{})
	require.NoError(t, err)
	cm, err := parseClusterSlots(vals, "10.1.1.1:7001")
	require.NoError(t, err)
	assert.Equal(t, clusterMap{{0, 5460, "127.0.0.1:7000"}, {5461, 10922, "10.1.1.1:7001"}, {10923, 16383, "127.0.0.2:7002"}}, cm)
	assert.Equal(t, "10.1.1.1:7001", cm.owner(6000))
	assert.Len(t, cm.primaries(), 3)

	// A cluster that does not serve every slot is refused.
	vals, _, err = resp.Parse(nil, []byte("*1\r\n*3\r\n:0\r\n:100\r\n*2\r\n$1\r\nh\r\n:1\r\n"), resp.Limits{})
	require.NoError(t, err)
	_, err = parseClusterSlots(vals, "h:1")
	require.ErrorContains(t, err, "serves 101 of 16384 slots")

	for _, bad := range []string{"*1\r\n:1\r\n", "*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n$1\r\nh\r\n:1\r\n", "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n$1\r\n1\r\n", "+OK\r\n"} {
		vals, _, err := resp.Parse(nil, []byte(bad), resp.Limits{})
		require.NoError(t, err, bad)
		_, err = parseClusterSlots(vals, "h:1")
		require.Error(t, err, bad)
	}
}

// TestCopyTags: copy i of n lies in the i-th of n equal slot ranges, and
// every tag has the same length (see wire).
func TestCopyTags(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for i := range n {
			tag := copyTag(i, n)
			s := slot.Of(tag)
			assert.True(t, s >= i*slot.Count/n && s < (i+1)*slot.Count/n, "copy %d of %d: slot %d", i, n, s)
			assert.Len(t, tag, len(copyTag(0, 1)))
		}
	}
}
