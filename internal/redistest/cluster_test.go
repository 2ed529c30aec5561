package redistest

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/resp"
)

// keySlots are hash slots as redis-server 7.0's CLUSTER KEYSLOT computes
// them, hash-tag edge cases among them.
var keySlots = []struct {
	key  string
	slot int
}{
	{"", 0},
	{"foo", 12182},
	{"bar", 5061},
	{"123456789", 12739}, // CRC16/XMODEM check value 0x31C3
	{"Hello, World", 13869},
	{"{user1000}.following", 3443}, // the tag "user1000" alone is hashed
	{"{user1000}.followers", 3443},
	{"{user1000}", 3443},
	{"{}", 15257},           // empty tag: the whole key is hashed
	{"a{}b", 13694},         // empty tag
	{"{}{a}", 13650},        // the first tag is empty: the whole key, not "a"
	{"{", 4092},             // no '}'
	{"{a", 10276},           // no '}'
	{"}", 12090},            // no '{'
	{"a}", 5921},            // no '{'
	{"}{", 12793},           // no '}' after the '{'
	{"{a}{b}", 15495},       // only the first tag counts: "a"
	{"x{a}", 15495},         // the tag need not be at the start
	{"a{b{c}d}", 15725},     // the tag is "b{c"
	{"{{}}", 4092},          // the tag is "{"
	{"foo{{bar}}zap", 4015}, // the tag is "{bar"
}

func TestKeySlot(t *testing.T) {
	for _, tt := range keySlots {
		assert.Equal(t, tt.slot, KeySlot(tt.key), "KeySlot(%q)", tt.key)
	}
}

// TestKeySlotAgreesWithServer: KeySlot and the server's CLUSTER KEYSLOT
// agree on the table's keys and on random keys rich in braces.
func TestKeySlotAgreesWithServer(t *testing.T) {
	s := Start(t, Options{Cluster: true}) // CLUSTER KEYSLOT needs cluster mode
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	keys := make([]string, 0, len(keySlots)+100)
	for _, tt := range keySlots {
		keys = append(keys, tt.key)
	}
	const alphabet = "{}{}ab\x00\xff"
	for range 100 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		keys = append(keys, string(b))
	}
	for _, k := range keys {
		vals, err := Do(s.Addr(), "CLUSTER", "KEYSLOT", k)
		require.NoError(t, err)
		assert.EqualValues(t, vals[0].Int, KeySlot(k), "KeySlot(%q)", k)
	}
}

// TestCluster: three primaries with a replica each form a cluster that
// every node agrees on; a key written on its slot's owner is read there
// and another primary answers MOVED; a failover swaps a shard's roles; a
// slot in migration makes its source answer ASK, a moved slot takes its
// key along and its old owner answers MOVED; a killed primary's replica
// takes over.
func TestCluster(t *testing.T) {
	start := time.Now()
	c := StartClusterT(t, ClusterOptions{})
	t.Logf("%s cluster of 6 formed in %v", serverName(t, c.Primary(0)), time.Since(start).Round(time.Millisecond))
	key := "foo"
	s := KeySlot(key)
	ss := strconv.Itoa(s)

	ok := t.Run("formed", func(t *testing.T) {
		require.Len(t, c.Primaries(), 3)
		require.Len(t, c.Nodes(), 6)
		assert.Equal(t, Addrs(c.Primaries()), c.SeedAddrs())
		for i := range 3 {
			require.Len(t, c.Replicas(i), 1)
			r, err := roleOf(c.Replicas(i)[0].Addr())
			require.NoError(t, err)
			assert.Equal(t, role{"slave", c.Primary(i).Addr(), "connected"}, r)
		}
		assert.Equal(t, 0, c.ShardOf(0))
		assert.Equal(t, 0, c.ShardOf(5460))
		assert.Equal(t, 1, c.ShardOf(5461))
		assert.Equal(t, 2, c.ShardOf(16383))
		for _, n := range c.Nodes() {
			info, err := doText(n.Addr(), "CLUSTER", "INFO")
			require.NoError(t, err)
			assert.Equal(t, "ok", infoField(info, "cluster_state"), n.Addr())
			assert.Equal(t, "16384", infoField(info, "cluster_slots_ok"), n.Addr())
			assert.Equal(t, "6", infoField(info, "cluster_known_nodes"), n.Addr())
			assert.Equal(t, "3", infoField(info, "cluster_size"), n.Addr())
			checkShards(t, c, n)
		}
		require.NoError(t, c.WaitOK(0))
	})
	if !ok {
		return
	}

	ok = t.Run("MOVED", func(t *testing.T) {
		owner := c.Primary(c.ShardOf(s))
		_, err := Do(owner.Addr(), "SET", key, "bar")
		require.NoError(t, err)
		vals, err := Do(owner.Addr(), "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "bar", string(vals[0].Bytes))
		other := c.Primary((c.ShardOf(s) + 1) % 3)
		_, err = Do(other.Addr(), "GET", key)
		require.ErrorContains(t, err, "MOVED "+ss+" "+owner.Addr())
		_, err = Do(other.Addr(), "SET", key, "baz")
		require.ErrorContains(t, err, "MOVED "+ss+" "+owner.Addr())
	})
	if !ok {
		return
	}

	ok = t.Run("Failover", func(t *testing.T) {
		i := c.ShardOf(s)
		old, replica := c.Primary(i), c.Replicas(i)[0]
		start := time.Now()
		require.NoError(t, c.Failover(i))
		t.Logf("failover in %v", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, replica, c.Primary(i))
		assert.Equal(t, []*Server{old}, c.Replicas(i))
		r, err := roleOf(old.Addr())
		require.NoError(t, err)
		assert.Equal(t, role{"slave", replica.Addr(), "connected"}, r, "the old primary is the shard's replica")
		vals, err := Do(replica.Addr(), "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "bar", string(vals[0].Bytes), "the promoted replica has the key")
		_, err = Do(old.Addr(), "GET", key)
		require.ErrorContains(t, err, "MOVED "+ss+" "+replica.Addr())

		require.ErrorContains(t, c.Failover(3), "no shard 3")
	})
	if !ok {
		return
	}

	ok = t.Run("MoveSlot", func(t *testing.T) {
		from := c.ShardOf(s)
		to := (from + 1) % 3
		src, dst := c.Primary(from), c.Primary(to)
		missing := "{" + key + "}missing" // same slot, no key

		// The migration step by step, to see ASK.
		require.NoError(t, c.beginMove(s, to))
		vals, err := Do(src.Addr(), "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "bar", string(vals[0].Bytes), "the source serves the keys it still has")
		_, err = Do(src.Addr(), "GET", missing)
		require.ErrorContains(t, err, "ASK "+ss+" "+dst.Addr())
		_, err = Do(dst.Addr(), "GET", key)
		require.ErrorContains(t, err, "MOVED "+ss+" "+src.Addr(), "the destination redirects a request without ASKING")
		require.NoError(t, c.migrateKeys(s, to, time.Now().Add(10*time.Second)))
		_, err = Do(src.Addr(), "GET", key)
		require.ErrorContains(t, err, "ASK "+ss+" "+dst.Addr())
		require.NoError(t, c.finishMove(s, to))
		require.NoError(t, c.WaitOK(10*time.Second))
		assert.Equal(t, to, c.ShardOf(s))
		vals, err = Do(dst.Addr(), "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "bar", string(vals[0].Bytes), "the key moved with its slot")
		_, err = Do(src.Addr(), "GET", key)
		require.ErrorContains(t, err, "MOVED "+ss+" "+dst.Addr())

		// And back in one call.
		require.NoError(t, c.MoveSlot(s, from))
		assert.Equal(t, from, c.ShardOf(s))
		vals, err = Do(src.Addr(), "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "bar", string(vals[0].Bytes))
		_, err = Do(dst.Addr(), "GET", key)
		require.ErrorContains(t, err, "MOVED "+ss+" "+src.Addr())
		require.NoError(t, c.MoveSlot(s, from), "a move to the owner does nothing")

		require.ErrorContains(t, c.MoveSlot(-1, 0), "not a slot")
		require.ErrorContains(t, c.MoveSlot(s, 3), "no shard 3")
	})
	if !ok {
		return
	}

	t.Run("KillPrimary", func(t *testing.T) {
		i := c.ShardOf(s)
		killed, replica := c.Primary(i), c.Replicas(i)[0]
		err := c.waitPromoted(i, time.Now().Add(50*time.Millisecond))
		require.ErrorContains(t, err, "no replica of "+killed.Addr()+" promoted yet")
		require.ErrorContains(t, err, "log tail", "a wait that gives up shows the logs")
		start := time.Now()
		killed.Kill()
		require.Error(t, c.WaitOK(0), "a killed primary is a change")
		require.NoError(t, c.WaitPromoted(i))
		t.Logf("replica promoted and agreed on %v after the kill", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, replica, c.Primary(i))
		assert.Equal(t, []*Server{killed}, c.Replicas(i))
		vals, err := Do(replica.Addr(), "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "bar", string(vals[0].Bytes), "the promoted replica has the key")
		require.ErrorContains(t, c.Failover(i), "no running replica", "the shard's only replica is dead")

		// The killed node, restarted empty, rejoins as the shard's replica.
		require.NoError(t, killed.Restart(false))
		require.NoError(t, c.WaitOK(20*time.Second))
		t.Logf("restarted node in sync %v after the kill", time.Since(start).Round(time.Millisecond))
		vals, err = Do(killed.Addr(), "ROLE")
		require.NoError(t, err)
		assert.Equal(t, "slave", string(vals[1].Bytes))
		require.NoError(t, c.Failover(i), "the restarted node can take over")
		assert.Equal(t, killed, c.Primary(i))
	})
}

// checkShards checks n's CLUSTER SHARDS against c: three shards, each
// with its slot range, its primary online and its replica.
func checkShards(t *testing.T, c *Cluster, n *Server) {
	t.Helper()
	vals, err := Do(n.Addr(), "CLUSTER", "SHARDS")
	require.NoError(t, err)
	shards := children(vals, 0)
	require.Len(t, shards, 3, n.Addr())
	seen := map[string]string{} // addr -> role
	for _, sh := range shards {
		fields := mapOf(vals, sh)
		require.Contains(t, fields, "slots")
		require.Contains(t, fields, "nodes")
		slots := children(vals, fields["slots"])
		require.Len(t, slots, 2, "one range per shard")
		first := int(vals[slots[0]].Int)
		i := c.ShardOf(first)
		assert.EqualValues(t, (i+1)*16384/3-1, vals[slots[1]].Int)
		for _, node := range children(vals, fields["nodes"]) {
			nf := mapOf(vals, node)
			addr := "127.0.0.1:" + strconv.FormatInt(vals[nf["port"]].Int, 10)
			seen[addr] = string(vals[nf["role"]].Bytes)
			assert.Equal(t, "online", string(vals[nf["health"]].Bytes), addr)
			assert.Equal(t, c.id(nodeAt(t, c, addr)), string(vals[nf["id"]].Bytes), addr)
		}
	}
	for i := range 3 {
		assert.Equal(t, "master", seen[c.Primary(i).Addr()], "%s as seen by %s", c.Primary(i).Addr(), n.Addr())
		assert.Equal(t, "replica", seen[c.Replicas(i)[0].Addr()], "%s as seen by %s", c.Replicas(i)[0].Addr(), n.Addr())
	}
}

// mapOf returns the fields of the map (a flat array in RESP2) at vals[i]:
// each name with the index of its value.
func mapOf(vals []resp.Value, i int) map[string]int {
	out := map[string]int{}
	kids := children(vals, i)
	for j := 0; j+1 < len(kids); j += 2 {
		out[string(vals[kids[j]].Bytes)] = kids[j+1]
	}
	return out
}

func nodeAt(t *testing.T, c *Cluster, addr string) *Server {
	t.Helper()
	for _, n := range c.Nodes() {
		if n.Addr() == addr {
			return n
		}
	}
	t.Fatalf("no node at %s", addr)
	return nil
}
