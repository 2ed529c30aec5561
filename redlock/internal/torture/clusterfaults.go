package torture

import (
	"fmt"
	"time"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/internal/slot"
)

// The faults of a Redis Cluster run (ClusterFaults), on its shards. Each
// reports a failed step as a nemesis error and leaves the cluster as it
// found it where it can.

// shard picks one shard.
func (in *injection) shard() int {
	s := in.rng.IntN(in.r.cfg.Masters)
	in.targets = []int{s}
	return s
}

// failover: a replica of one shard takes over (CLUSTER FAILOVER).
func (in *injection) failover() {
	rc := in.r.cl.rc
	s := in.shard()
	from := rc.Primary(s).Addr()
	if err := rc.Failover(s); err != nil {
		in.r.errorf("failover of shard %d: %v", s, err)
		return
	}
	in.detail = fmt.Sprintf("CLUSTER FAILOVER: %s took over from %s", rc.Primary(s).Addr(), from)
}

// killPrimary kills one shard's primary and waits for the promotion; the
// heal restarts it, empty, and it rejoins as a replica.
func (in *injection) killPrimary() {
	rc := in.r.cl.rc
	s := in.shard()
	killed := rc.Primary(s)
	killed.Kill()
	if err := rc.WaitPromoted(s); err != nil {
		in.r.errorf("promotion in shard %d: %v", s, err)
	}
	in.detail = fmt.Sprintf("primary %s killed, %s promoted", killed.Addr(), rc.Primary(s).Addr())
	in.heal = func() {
		if err := killed.Restart(false); err != nil {
			in.r.errorf("restart of %s: %v", killed.Addr(), err)
		}
	}
}

// failoverLosingWrites fails one shard over to its replica after cutting
// the replica off for half the fault's time, so that the promoted replica
// lacks what its primary took meanwhile. One shard: a write that a
// majority of a key's copies lose is lost for good, as on a majority of
// standalone masters that restart without it. The heal restarts the
// killed primary, empty, and it rejoins as a replica.
func (in *injection) failoverLosingWrites() {
	rc := in.r.cl.rc
	in.shard()
	var from []string
	for _, s := range in.targets {
		from = append(from, rc.Primary(s).Addr())
	}
	cut := in.dur / 2
	killed, err := rc.FailoverLosingWrites(in.targets, func() { time.Sleep(cut) })
	in.heal = func() {
		for _, k := range killed {
			if err := k.Restart(false); err != nil {
				in.r.errorf("restart of %s: %v", k.Addr(), err)
			}
		}
	}
	if err != nil {
		in.r.errorf("failover of shards %v losing writes: %v", in.targets, err)
		return
	}
	in.detail = fmt.Sprintf("%s took over from %s, missing its last %v of writes", rc.Primary(in.targets[0]).Addr(), from[0], cut.Round(time.Millisecond))
}

// moveSlot moves the slot of a lock copy, with its keys, from one shard
// to another; the heal moves it back.
func (in *injection) moveSlot() {
	rc := in.r.cl.rc
	from := in.shard()
	sl, ok := in.copySlot(rc.Primary(from))
	if !ok {
		in.detail = "no lock key on the shard's primary: nothing moved"
		return
	}
	to := (from + 1 + in.rng.IntN(in.r.cfg.Masters-1)) % in.r.cfg.Masters
	if err := rc.MoveSlot(sl, to); err != nil {
		in.r.errorf("moving slot %d from shard %d to %d: %v", sl, from, to, err)
		return
	}
	in.detail = fmt.Sprintf("slot %d moved from shard %d to shard %d", sl, from, to)
	in.heal = func() {
		if err := rc.MoveSlot(sl, from); err != nil {
			in.r.errorf("moving slot %d back to shard %d: %v", sl, from, err)
		}
	}
}

// copySlot returns the slot of a lock key (a copy's "{vs...}" tag first)
// that primary holds, chosen at random, if it holds any.
func (in *injection) copySlot(primary *redistest.Server) (int, bool) {
	vals, err := redistest.Do(primary.Addr(), "KEYS", "{vs*")
	if err != nil {
		in.r.errorf("KEYS on %s: %v", primary.Addr(), err)
		return 0, false
	}
	var keys []string
	for _, v := range vals[1:] { // after the array's header
		keys = append(keys, string(v.Bytes))
	}
	if len(keys) == 0 {
		return 0, false
	}
	return slot.Of(keys[in.rng.IntN(len(keys))]), true
}
