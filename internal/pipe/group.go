package pipe

import "time"

// Group is a fixed set of Conns, one per master, that Batches fan out to.
// On Linux, a Batch of the Group that is alone on the Group's connections
// may claim them and read its replies itself, in one epoll set, instead of
// having each Conn's reader goroutine read them and hand them over (see
// Batch.Claim): a burst to N masters then wakes no other thread. That is
// the fast path of a lone caller that fans out (a Redlock client, a
// latency harness); every other caller is served as usual, and so is
// everyone where claims are not possible.
//
// Ownership: the creator owns the Group and must Close it; the Conns stay
// the creator's. A Group is safe for concurrent use; one of its Batches at
// a time holds the claim.
type Group struct {
	p *poller
	d *driver
}

// NewGroup returns a Group over conns (the Group keeps its own copy; see
// Replace).
//
// lateBound is how long after it was sent an answer that nobody waits for
// any more (one after its caller's decision) may stay unread: until then
// the next claim may read it on its way, after that the Conn's reader
// goroutine reads it as it comes. Such an answer makes ReplyLatency read
// high, up to lateBound (or a quarter of the Conn's ReadTimeout, when that
// is smaller, or when lateBound is not positive); a latency above that
// bound is exact. A caller that compares ReplyLatency with a timeout
// passes less than that timeout (the redlock package passes half its
// MasterTimeout).
func NewGroup(conns []*Conn, lateBound time.Duration) *Group {
	p := newPoller(append([]*Conn(nil), conns...), lateBound)
	return &Group{p: p, d: newDriver(p)}
}

// Replace makes c the Group's Conn i (in NewGroup's conns order) from the
// next claim on, waiting for a claim in progress to end: for a member
// that moved to another server. The Group does not close the Conn it
// replaces; its creator does.
func (g *Group) Replace(i int, c *Conn) { g.p.replace(i, c) }

// NewBatch returns a Batch of slots slots whose rounds may claim g's
// connections (see Batch.Claim).
func (g *Group) NewBatch(slots int) *Batch {
	b := NewBatch(slots)
	b.group = g
	return b
}

// Close ends the Group, waiting for a claim in progress to end; claims fail
// from then on. It does not close the Conns. Safe to call more than once.
func (g *Group) Close() {
	g.d.close()
	g.p.close()
}
