package redlock

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/internal/slot"
	"github.com/volleylock/volley/resp"
)

func TestParseClusterAddr(t *testing.T) {
	e, err := parseClusterAddr("redis-cluster://alice:s3cret@10.0.0.1:7000,10.0.0.2:7001?copies=5", pipe.Options{DB: 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1:7000", "10.0.0.2:7001"}, e.seeds)
	assert.Equal(t, 5, e.copies)
	assert.Equal(t, "alice", e.opts.Username)
	assert.Equal(t, "s3cret", e.opts.Password)
	assert.Zero(t, e.opts.DB, "cluster nodes have one database")
	assert.Nil(t, e.opts.TLS)

	e, err = parseClusterAddr("rediss-cluster://h:1", pipe.Options{})
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
		_, err := parseClusterAddr(bad, pipe.Options{})
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

// TestPlacement: copy i of n of a key lies in the i-th of n slot ranges,
// at the key's place, which keys sharing a hash tag share; every tag has
// one length (see wire); and 10,000 names spread over six primaries that
// own equal ranges with three copies (each range two primaries), every
// primary's share of the copies within 0.8-1.2x of the mean (the copies
// of the earlier layout sat on three of them).
func TestPlacement(t *testing.T) {
	for n := 1; n <= 9; n++ {
		cs := newClusterState(nil, n)
		c := &Client{cluster: cs}
		for k := range 200 {
			key := fmt.Sprintf("key:%d", k)
			p := c.placement(key)
			require.Equal(t, p, c.placement("{"+key+"}:other"), "a shared hash tag shares the place")
			for i := range n {
				s := cs.copySlot(i, p)
				end := slot.Count
				if i+1 < n {
					end = cs.first[i+1]
				}
				assert.True(t, s >= cs.first[i] && s < end, "copy %d of %d: slot %d", i, n, s)
				assert.Len(t, c.tagFor(i, p), slot.TagLen)
				assert.Equal(t, s, slot.Of(c.tagFor(i, p)+key))
			}
		}
	}

	const primaries, names = 6, 10000
	c := &Client{cluster: newClusterState(nil, 3)}
	// The ranges of six primaries as redis-cli --cluster create cuts them.
	owner := func(s int) int {
		for i, last := range []int{2730, 5460, 8191, 10922, 13652, 16383} {
			if s <= last {
				return i
			}
		}
		panic(s)
	}
	assert.Equal(t, []int{0, 5461, 10923}, c.cluster.first, "copy i starts where primary 2i does")
	var share [primaries]int
	for k := range names {
		p := c.placement(fmt.Sprintf("job:%d", k))
		for i := range 3 {
			share[owner(c.cluster.copySlot(i, p))]++
		}
	}
	mean := float64(3*names) / primaries
	for i, got := range share {
		assert.InDelta(t, 1, float64(got)/mean, 0.2, "primary %d serves %d copies of %d names (mean %.0f)", i, got, names, mean)
	}
	t.Logf("copies per primary, %d names, 3 copies, %d primaries: %v", names, primaries, share)
}

// TestLegacyTags: where Clients of the earlier layout kept copy 0 of n.
func TestLegacyTags(t *testing.T) {
	tags := legacyTags(6)
	require.NotEmpty(t, tags)
	for _, tag := range tags {
		assert.Regexp(t, `^\{vl\d{5}\}$`, tag)
	}
	assert.Less(t, slot.Of(tags[len(tags)-1]), slot.Count/6)
}

// fakeCluster starts three fake masters that answer CLUSTER SLOTS as the
// primaries of a cluster, each serving a third of the slots (as
// redis-cli cuts them), and returns them and a redis-cluster:// address.
func fakeCluster(t *testing.T) ([]*fakeredis.Server, string) {
	servers, addrs := fakeMasters(t, 3)
	ranges := [][2]int64{{0, 5460}, {5461, 10922}, {10923, 16383}}
	reply := resp.AppendArrayHeader(nil, len(ranges))
	for i, r := range ranges {
		host, port, err := net.SplitHostPort(addrs[i])
		require.NoError(t, err)
		p, err := strconv.ParseInt(port, 10, 64)
		require.NoError(t, err)
		reply = resp.AppendArrayHeader(reply, 3)
		reply = resp.AppendInteger(reply, r[0])
		reply = resp.AppendInteger(reply, r[1])
		reply = resp.AppendArrayHeader(reply, 3)
		reply = resp.AppendBulkString(reply, host)
		reply = resp.AppendInteger(reply, p)
		reply = resp.AppendBulkString(reply, fmt.Sprintf("%040d", i))
	}
	for _, s := range servers {
		s.SetFault("CLUSTER", fakeredis.Fault{Raw: reply})
	}
	return servers, "redis-cluster://" + addrs[0]
}

// TestNewRetriesLayoutRecord: New records the cluster's layout on the
// node that serves each record's slot; when the cluster is changing
// (CLUSTERDOWN during a failover, TRYAGAIN, MOVED once a slot moved) it
// asks again, MOVED at the node it names, within the dial timeout,
// rather than failing.
func TestNewRetriesLayoutRecord(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(owner, other *fakeredis.Server, s int) string
		times int
		moved bool // the record ends on other
	}{
		{"CLUSTERDOWN", func(_, _ *fakeredis.Server, _ int) string { return "-CLUSTERDOWN The cluster is down\r\n" }, 3, false},
		{"TRYAGAIN", func(_, _ *fakeredis.Server, _ int) string {
			return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
		}, 1, false},
		{"MOVED", func(_, other *fakeredis.Server, s int) string {
			return fmt.Sprintf("-MOVED %d %s\r\n", s, other.Addr())
		}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers, addr := fakeCluster(t)
			tag := legacyTags(3)[0]
			i := slot.Of(tag) * 3 / slot.Count // the node that serves it
			owner, other := servers[i], servers[(i+1)%3]
			owner.SetFault("SET", fakeredis.Fault{Raw: []byte(tc.reply(owner, other, slot.Of(tag))), Times: tc.times})
			c, err := New(bg, Config{Addrs: []string{addr}, DisableNativeCommands: true})
			require.NoError(t, err)
			defer c.Close()
			want, at, wrong := "spread:3", owner, other
			if tc.moved {
				at, wrong = other, owner
			}
			val, _, ok := at.Lookup(tag + copiesKey)
			assert.True(t, ok && val == want, "the record is not on %s", at.Addr())
			_, _, ok = wrong.Lookup(tag + copiesKey)
			assert.False(t, ok, "the record is on %s", wrong.Addr())
		})
	}

	// MOVED to a node the map New read did not name yet: asked there, on
	// a connection of its own.
	servers, addr := fakeCluster(t)
	newNode, _ := fakeMasters(t, 1)
	tag := legacyTags(3)[0]
	owner := servers[slot.Of(tag)*3/slot.Count]
	owner.SetFault("SET", fakeredis.Fault{Raw: []byte(fmt.Sprintf("-MOVED %d %s\r\n", slot.Of(tag), newNode[0].Addr())), Times: 1})
	c, err := New(bg, Config{Addrs: []string{addr}, DisableNativeCommands: true})
	require.NoError(t, err)
	c.Close()
	val, _, ok := newNode[0].Lookup(tag + copiesKey)
	assert.True(t, ok && val == "spread:3", "the record is not on the node MOVED named")

	// A cluster that stays down fails New once the dial timeout is over,
	// saying why.
	servers, addr = fakeCluster(t)
	for _, s := range servers {
		s.SetFault("SET", fakeredis.Fault{Raw: []byte("-CLUSTERDOWN The cluster is down\r\n")})
	}
	start := time.Now()
	_, err = New(bg, Config{Addrs: []string{addr}, DisableNativeCommands: true, Conn: Connection{DialTimeout: 300 * time.Millisecond}})
	require.ErrorContains(t, err, "CLUSTERDOWN")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}
