package redlock

import (
	"github.com/volleylock/volley/internal/scripts"
)

// The lock's scripts are in internal/scripts, one copy of each, shared with
// the fake master. What is the lock layer's own follows.

// The channels of waiting (see subscriptions.go). A Lock that found its key taken
// waits for the holder's release, which publishes on the key's channel,
// scripts.ReleasedChannelPrefix followed by the key (scripts.Release and
// scripts.ReleaseMulti), a message that identifies the release: the first
// 16 hex digits of the SHA-1 of the released token (token.releaseID: the
// token itself never leaves the master; scripts.Release takes it from the
// Client, the others compute it). The id tells the N messages of one release (one per
// master) from those of the next, and the holders of a key on different
// masters apart. A failed attempt is released quietly
// (scripts.ReleaseQuiet, scripts.ReleaseMultiQuiet): waiters learn how to
// go on from their own attempts, not from the release of a loser's partial
// votes.
const releasedChannelPrefix = scripts.ReleasedChannelPrefix

// The keys of fencing (see fence.go and the fencing scripts). Every master
// keeps one fencing counter, fenceKey, for all keys and all clients; a
// master that restarted since it last vouched for its counter has none,
// only fenceUnsureKey (a hash: since, the master's TIME in microseconds
// when it noticed; stale, the counter it had then, if any) until a repair
// gives it one. fenceRunKey holds the run_id under which the counter was
// last vouched for (scripts.FenceCheck). The keys are fixed: fencing adds
// three keys per master, however many locks there are.
const (
	fenceKey       = "volley:fence"
	fenceRunKey    = "volley:fence:run"
	fenceUnsureKey = "volley:fence:unsure"
)

// The keys that follow a fencing command's own (see command.fenceKey):
// the counter's on standalone masters; over a Redis Cluster, where the
// check is made per slot by the cluster forms of the scripts, the
// counter's again (the last of the script's own keys), then the run key
// and the unsure hash, all in the slot of the lock's copy.
var (
	fenceTailMaster  = []string{fenceKey}
	fenceTailCluster = []string{fenceKey, fenceKey, fenceRunKey, fenceUnsureKey}
)

// fenceTail returns the keys that follow a fencing command's own for c.
func fenceTail(c *Client) []string {
	if c.vouching() {
		return fenceTailCluster
	}
	return fenceTailMaster
}

// vouching reports whether c's fencing scripts make the check of the
// counters per slot (their cluster forms): over a Redis Cluster.
func (c *Client) vouching() bool { return c.cluster != nil && !unvouchedCluster }

// unvouchedCluster, set by tests only, has a Client over a cluster run
// the standalone fencing scripts, which trust whatever counter a slot's
// node has: the broken variant that TestClusterFenceLostWrites must
// catch (after a failover that lost writes, tokens go backwards).
var unvouchedCluster bool

// announcedPayload is what scripts.ElectAnnounce publishes on the leader's
// key's release channel: not a release's id (hex digits), so waiters are
// not woken by it, only watchers (see waitRoom.watch).
const announcedPayload = "leader-announced"
