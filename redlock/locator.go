package redlock

import (
	"context"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/slot"
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

// refresh reads the slot map from the copies' servers or the seeds, and
// asks the Sentinels, and moves the masters whose server changed.
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
	var cm clusterMap
	if l.entry != nil {
		addrs := make([]string, 0, len(c.masters)+len(l.entry.seeds))
		for _, m := range c.masters {
			addrs = append(addrs, m.conn().Addr())
		}
		addrs = append(addrs, l.entry.seeds...)
		cm, _ = discover(ctx, l.entry, addrs) // on error, the next look tries again
	}
	for i, m := range c.masters {
		var where string
		var opts conn.Options
		switch {
		case m.tag != "" && cm != nil:
			where = cm.owner(slot.Of(m.tag))
			opts = l.entry.nodeOptions(where)
		case m.sentinel != nil:
			where, _ = m.sentinel.primary(ctx)
			opts = m.sentinel.primaryOptions(where)
		}
		if where == "" || where == m.conn().Addr() {
			continue
		}
		opts = c.masterOptions(opts)
		cn, err := conn.New(opts)
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
