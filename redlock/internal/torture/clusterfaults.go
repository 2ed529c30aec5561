package torture

import (
	"fmt"
	"strconv"
	"strings"
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
// to another; the heal moves it back. The detail says how many ASKINGs
// the importing node ran during each move: the ASKs the clients
// followed (see moveCounted).
func (in *injection) moveSlot() {
	rc := in.r.cl.rc
	from := in.shard()
	sl, ok := in.copySlot(rc.Primary(from))
	if !ok {
		in.detail = "no lock key on the shard's primary: nothing moved"
		return
	}
	to := (from + 1 + in.rng.IntN(in.r.cfg.Masters-1)) % in.r.cfg.Masters
	asked, err := in.moveCounted(sl, to)
	if err != nil {
		in.r.errorf("moving slot %d from shard %d to %d: %v", sl, from, to, err)
		return
	}
	in.detail = fmt.Sprintf("slot %d moved from shard %d to shard %d (%d ASKINGs)", sl, from, to, asked)
	in.heal = func() {
		back, err := in.moveCounted(sl, from)
		if err != nil {
			in.r.errorf("moving slot %d back to shard %d: %v", sl, from, err)
			return
		}
		in.detail += fmt.Sprintf(" and back (%d ASKINGs)", back)
	}
}

// moveCounted moves slot sl to shard to, and returns how many ASKING
// commands that shard's primary ran meanwhile (INFO commandstats): the
// ASKs the clients followed there while the slot was migrating. It adds
// them to the run's count (Report.AskingsInSlotMoves).
func (in *injection) moveCounted(sl, to int) (uint64, error) {
	rc := in.r.cl.rc
	dst := rc.Primary(to).Addr()
	before := in.askings(dst)
	if err := rc.MoveSlot(sl, to); err != nil {
		return 0, err
	}
	asked := max(in.askings(dst), before) - before // 0 if it restarted meanwhile
	in.r.askings.Add(asked)
	return asked, nil
}

// askings returns how many ASKING commands the server at addr has run
// since it started, or since its statistics were reset (0 on error,
// which it records).
func (in *injection) askings(addr string) uint64 {
	vals, err := redistest.Do(addr, "INFO", "commandstats")
	if err != nil {
		in.r.errorf("INFO commandstats on %s: %v", addr, err)
		return 0
	}
	if len(vals) == 0 {
		return 0
	}
	for line := range strings.Lines(string(vals[0].Bytes)) {
		rest, ok := strings.CutPrefix(line, "cmdstat_asking:calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, _ := strconv.ParseUint(calls, 10, 64)
		return n
	}
	return 0
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
