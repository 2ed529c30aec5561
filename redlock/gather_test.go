package redlock

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/scripts"
	"github.com/volleylock/volley/resp"
)

// TestGatheredRoundsOnTheDriver runs the rounds that hear every answer
// (see fanout.gather) through the Group's driver, as they go when other
// callers keep it busy: a waiter's look at a key, Inspect, Election.Leader
// and the fencing counters' state. Each reads what the masters hold, as
// on the lone caller's path.
func TestGatheredRoundsOnTheDriver(t *testing.T) {
	setDriven(t, true)
	servers := masters(t, 5)
	c := client(t, servers, Config{MasterTimeout: time.Second, Fencing: true})
	other := client(t, servers, Config{MasterTimeout: time.Second})

	l, err := other.TryLock(bg, "gather", 10*time.Second)
	require.NoError(t, err)
	o := c.getOp()
	assert.True(t, c.heldElsewhere(o, "gather", -1, nil), "a look at a held key")
	assert.True(t, o.fan.driven, "the look went to the driver")
	assert.False(t, c.heldElsewhere(o, "gather:free", -1, nil), "a look at a free key")
	c.putOp(o)

	states := inspectAll(t, l.Inspect, func(s KeyState) bool { return s.Ours })
	require.Len(t, states, 5)
	for _, s := range states {
		assert.True(t, s.Exists && s.Ours, "%+v", s)
		assert.InDelta(t, 10*time.Second, s.TTL, float64(time.Second))
	}
	require.NoError(t, l.Unlock(bg))

	e, err := c.Election("gather:election", 10*time.Second)
	require.NoError(t, err)
	lead, err := e.Campaign(bg, "leader")
	require.NoError(t, err)
	info, err := e.Leader(bg)
	require.NoError(t, err)
	assert.Equal(t, LeaderInfo{Term: lead.Term(), Value: "leader"}, info)
	require.NoError(t, lead.Resign(bg))

	// The fence repair's first step reads every master's counter state.
	answered := 0
	c.eachMaster(bg, c.placement("gather"), time.Second, func(_ int, w *wire) {
		c.encodeFenceScript(w, &scripts.FenceState, &scripts.FenceStateVouched)
	}, func(i int, vals []resp.Value) {
		if parseMasterFence(vals).answered {
			answered++
		}
	})
	assert.Equal(t, 5, answered, "masters whose fencing state was read")
}

// TestRunsModeIsTheEnvironments holds a driven run to its mode (see
// TestMain): with VOLLEY_DRIVEN=1 a lone caller's Lock goes to the
// Group's driver, as under load, so make test's driven pass cannot
// quietly run the lone caller's path. Otherwise either path may serve it
// (a Client's own start-up rounds can hold the sockets).
func TestRunsModeIsTheEnvironments(t *testing.T) {
	servers := masters(t, 3)
	c := client(t, servers, Config{MasterTimeout: time.Second})
	o := c.getOp()
	defer c.putOp(o)
	tok := newToken()
	o.encode(c.lockCommand(false, false), args{key: "mode", tok: &tok, arg: o.ttlArg(time.Second)})
	br := o.run(nil)
	require.GreaterOrEqual(t, br.ok, c.quorum, "the lock on a quorum")
	if os.Getenv("VOLLEY_DRIVEN") == "1" {
		assert.True(t, o.fan.driven, "the Lock went to the driver")
	}
	o.releaseAfterFailure("mode", nil, &tok, false)
}
