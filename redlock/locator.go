package redlock

import (
	"context"
	"time"

	"github.com/volleylock/volley/internal/pipe"
)

// locator follows where the masters that a Redis Cluster or Sentinels
// place are: when an answer says a copy's slot is served elsewhere (MOVED,
// ASK), that the cluster is down or busy (CLUSTERDOWN, TRYAGAIN), that the
// server is a replica now (READONLY), or a connection fails, the fan-out
// pokes it; it then reads the slot map again, and asks the Sentinels, and
// moves each master whose server changed to a connection to the new one
// (see Client.move: the move counts like a restart for the restart guard).
//
// It owns one goroutine, started by newLocator and stopped by close.
type locator struct {
	c     *Client
	entry *clusterEntry // nil without a cluster
	poke  chan struct{} // capacity 1
	stop  chan struct{}
	done  chan struct{}
}

// locateEvery bounds how often the locator looks: at most once per
// locateEvery, however often it is poked, and at least once per
// locateIdle. The idle look finds the moves that no answer revealed: an
// answer that came after its operation's decision is read by no one (a
// lock decided by the two other copies never sees the third's MOVED),
// and an old primary that Sentinels deposed may still take writes.
const (
	locateEvery = 100 * time.Millisecond
	locateIdle  = time.Second
)

func newLocator(c *Client, e *clusterEntry) *locator {
	l := &locator{c: c, entry: e, poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop()
	return l
}

// touch asks for a look at the slot map soon. It never blocks.
func (l *locator) touch() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

func (l *locator) close() {
	close(l.stop)
	<-l.done
}

func (l *locator) loop() {
	defer close(l.done)
	idle := time.NewTimer(locateIdle)
	defer idle.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.poke:
		case <-idle.C:
		}
		l.refresh()
		idle.Reset(locateIdle)
		select { // at most one look per locateEvery
		case <-l.stop:
			return
		case <-time.After(locateEvery):
		}
	}
}

// refresh reads the slot map from the nodes or the seeds, and asks the
// Sentinels, and moves the masters whose server changed.
func (l *locator) refresh() {
	c := l.c
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Conn.dialTimeout()+c.cfg.MasterTimeout)
	defer cancel()
	go func() { // ends the look when the Client closes
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if l.entry != nil {
		l.refreshCluster(ctx)
	}
	for i, m := range c.masters {
		if m.sentinel == nil {
			continue
		}
		where, _ := m.sentinel.primary(ctx)
		if where == "" || where == m.conn().Addr() {
			continue
		}
		opts := c.masterOptions(m.sentinel.primaryOptions(where))
		cn, err := pipe.New(opts)
		if err != nil {
			continue
		}
		// Moved once connected (or once the look's time is up): a
		// connection still dialing would fail the master's requests fast
		// meanwhile.
		cn.WaitReady(ctx)
		c.move(i, cn, opts, time.Now())
	}
}

// refreshCluster reads the slot map and, where it changed, publishes the
// new view: new nodes are connected first (or until the look's time is
// up), a node that took over a slot of a copy's range counts as moved for
// that copy from now on (before any request can reach it there), and the
// nodes no longer named are closed once no burst can pick them.
func (l *locator) refreshCluster(ctx context.Context) {
	c, cs := l.c, l.c.cluster
	old := cs.view.Load()
	addrs := make([]string, 0, len(old.nodes)+len(l.entry.seeds))
	for _, n := range old.nodes {
		addrs = append(addrs, n.addr)
	}
	addrs = append(addrs, l.entry.seeds...)
	cm, err := discover(ctx, l.entry, addrs)
	if err != nil || !changed(cm, old) {
		return // on error, the next look tries again
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	v, made, dropped, err := c.buildView(cm, old)
	if err != nil {
		return
	}
	for _, n := range made {
		n.cn.WaitReady(ctx)
	}
	for _, n := range dropped {
		if n.gidx >= 0 {
			cs.free = append(cs.free, n.gidx)
		}
	}
	for _, n := range made {
		if k := len(cs.free); k > 0 {
			n.gidx, cs.free = cs.free[k-1], cs.free[:k-1]
			c.group.Replace(n.gidx, n.cn)
		}
	}
	now := time.Now()
	var moved []int
	for i := range c.masters {
		rerouted := false
		for p := range cs.width {
			if s := cs.copySlot(i, p); v.owner[s].addr != old.owner[s].addr {
				v.owner[s].moved[i].Store(now.UnixNano())
				rerouted = true
			}
		}
		if rerouted {
			moved = append(moved, i)
		}
	}
	cs.view.Store(v)
	c.noteSharing(old, v)
	for _, i := range moved {
		c.room.rerouted(i)
	}
	c.room.dropped(dropped)
	for _, n := range dropped {
		n.cn.Close() // requests still pending there fail
	}
}

// changed reports whether cm gives some slot another primary than v.
func changed(cm clusterMap, v *clusterView) bool {
	for _, r := range cm {
		for s := r.first; s <= r.last; s++ {
			if v.owner[s].addr != r.primary {
				return true
			}
		}
	}
	return false
}
