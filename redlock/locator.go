package redlock

import (
	"context"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/internal/slot"
)

// locator follows where the copies of a Redis Cluster Client are: when an
// answer says a copy's slot is served elsewhere (MOVED, ASK), that the
// cluster is down or busy (CLUSTERDOWN, TRYAGAIN), that the server is a
// replica now (READONLY), or a connection fails, the fan-out pokes it; it
// then reads the slot map again and moves each copy whose slot has a new
// owner to a connection to that owner (see master.move: the move counts
// like a restart for the restart guard).
//
// It owns one goroutine, started by newLocator and stopped by close.
type locator struct {
	c     *Client
	entry *clusterEntry
	poke  chan struct{} // capacity 1
	stop  chan struct{}
	done  chan struct{}
}

// locateEvery bounds how often the locator reads the slot map: at most
// once per locateEvery, however often it is poked, and at least once per
// locateIdle.
const (
	locateEvery = 100 * time.Millisecond
	locateIdle  = 5 * time.Second
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

// refresh reads the slot map from the copies' servers or the seeds and
// moves the copies whose slot changed hands.
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
	addrs := make([]string, 0, len(c.masters)+len(l.entry.seeds))
	for _, m := range c.masters {
		addrs = append(addrs, m.conn().Addr())
	}
	addrs = append(addrs, l.entry.seeds...)
	cm, err := discover(ctx, l.entry, addrs)
	if err != nil {
		return // the next poke tries again
	}
	for i, m := range c.masters {
		owner := cm.owner(slot.Of(m.tag))
		if owner == "" || owner == m.conn().Addr() {
			continue
		}
		opts := c.masterOptions(l.entry.nodeOptions(owner))
		cn, err := conn.New(opts)
		if err != nil {
			continue
		}
		m.opts = opts // only this goroutine reads opts after New
		c.move(i, cn, time.Now())
	}
}
