package faultproxy

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// chunkSize is the largest chunk a reader forwards at once.
const chunkSize = 32 << 10

// delayLine is how many chunks may wait in one direction before its reader
// stops reading.
const delayLine = 256

// dialTimeout bounds the dial to the target for one accepted connection.
const dialTimeout = 2 * time.Second

// Stats counts what a Proxy did since Start. Bytes are counted when the
// write that forwards them returns, so a peer may read bytes a moment
// before they are counted.
type Stats struct {
	Accepted      uint64 // client connections accepted (refused ones included)
	Refused       uint64 // closed at once by Refuse
	DialFailed    uint64 // accepted, but the target could not be reached
	Active        int    // connection pairs open now
	BytesToServer uint64 // bytes forwarded client -> server
	BytesToClient uint64 // bytes forwarded server -> client
	Dropped       uint64 // bytes dropped by Blackhole
	Corrupted     uint64 // server -> client chunks corrupted
	Truncated     uint64 // connections cut by Truncate
	Resets        uint64 // connections closed by ResetAll
}

// Proxy forwards every connection accepted on Addr to its target, with
// faults injected as its knobs say. See the package documentation.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // cancelled by Close: ends dials under way
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every connection goroutine

	mu     sync.Mutex
	closed bool
	pairs  map[*pair]struct{}

	// Knobs.
	latency   [2]atomic.Int64 // per direction (toServer, toClient), nanoseconds
	blackhole atomic.Bool
	refuse    atomic.Bool
	truncate  atomic.Bool
	drip      atomic.Bool
	slow      atomic.Int64  // nanoseconds per server->client byte; 0 is off
	corrupt   atomic.Uint64 // math.Float64bits of the probability
	rngMu     sync.Mutex
	rng       *rand.Rand
	pauseMu   sync.Mutex
	resume    chan struct{} // non-nil while paused; closed by Pause(false)

	accepted, refused, dialFailed atomic.Uint64
	toServer, toClient, dropped   atomic.Uint64
	corrupted, truncated, resets  atomic.Uint64
}

// Directions, indexes of Proxy.latency.
const (
	toServer = 0
	toClient = 1
)

// Start listens on 127.0.0.1:0 and forwards each accepted connection to
// target. The caller owns the Proxy and must Close it.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(errors.New("faultproxy: listen"), err)
	}
	p := &Proxy{
		target: target,
		ln:     ln,
		pairs:  make(map[*pair]struct{}),
		rng:    rand.New(rand.NewPCG(1, 2)),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the proxy's listening address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Close stops accepting, closes every connection and waits for every
// goroutine of the Proxy to end. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	pairs := p.takePairs()
	p.mu.Unlock()
	p.cancel()
	err := p.ln.Close()
	for _, pr := range pairs {
		pr.close(false)
	}
	p.wg.Wait()
	return err
}

// takePairs returns the open pairs. Callers hold p.mu.
func (p *Proxy) takePairs() []*pair {
	out := make([]*pair, 0, len(p.pairs))
	for pr := range p.pairs {
		out = append(out, pr)
	}
	return out
}

// SetLatency adds a delay to every chunk in each direction. A chunk already
// in the delay line is forwarded at its arrival plus the latency in force
// when its turn comes; order is always preserved.
func (p *Proxy) SetLatency(toServerDelay, toClientDelay time.Duration) {
	p.latency[toServer].Store(int64(max(0, toServerDelay)))
	p.latency[toClient].Store(int64(max(0, toClientDelay)))
}

// Blackhole partitions the target: while on, connections are still
// accepted and both directions are still read, but nothing is forwarded;
// the bytes are dropped, also those that were waiting in a delay line.
// When it goes off, traffic resumes with the next bytes read.
//
// A connection that lost bytes is reset when the blackhole ends (as TCP
// gives up on a connection whose segments go unacknowledged): TCP never
// drops bytes from the middle of a stream, and a Redis connection that
// lost a command would otherwise pair every later reply with the wrong
// request, a fault no real network produces. Connections that were idle
// during the blackhole carry on.
func (p *Proxy) Blackhole(on bool) {
	p.blackhole.Store(on)
	if on {
		return
	}
	p.mu.Lock()
	pairs := p.takePairs()
	p.mu.Unlock()
	for _, pr := range pairs {
		if pr.tainted.Load() {
			pr.close(true)
		}
	}
}

// drop counts n bytes dropped by the blackhole on pr and marks pr as
// broken; if the blackhole ended meanwhile, pr is reset here (Blackhole(false)
// may have looked at pr before it was marked).
func (pr *pair) drop(n int) {
	pr.p.dropped.Add(uint64(n))
	pr.tainted.Store(true)
	if !pr.p.blackhole.Load() {
		pr.close(true)
	}
}

// ResetAll closes every current connection, both sides, with an RST where
// the socket allows it (SO_LINGER 0).
func (p *Proxy) ResetAll() {
	p.mu.Lock()
	pairs := p.takePairs()
	p.mu.Unlock()
	for _, pr := range pairs {
		p.resets.Add(1)
		pr.close(true)
	}
}

// Refuse makes the proxy close new connections at once (with an RST)
// while on. Existing connections are not touched.
func (p *Proxy) Refuse(on bool) { p.refuse.Store(on) }

// Corrupt flips one random byte of each server->client chunk with
// probability prob (0 turns it off), drawing from a generator seeded with
// seed.
func (p *Proxy) Corrupt(prob float64, seed uint64) {
	p.rngMu.Lock()
	p.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p.rngMu.Unlock()
	p.corrupt.Store(math.Float64bits(max(0, prob)))
}

// Truncate, while on, makes each connection forward only the first half of
// its next server->client chunk and then close.
func (p *Proxy) Truncate(on bool) { p.truncate.Store(on) }

// Drip, while on, forwards server->client bytes one at a time, yielding
// the processor between them, so the client sees replies in pieces.
func (p *Proxy) Drip(on bool) { p.drip.Store(on) }

// Pause holds every byte in both directions while on, dropping none, as a
// master stopped with SIGSTOP does: connections stay open and commands
// wait. Pause(false) lets everything through in order.
func (p *Proxy) Pause(on bool) {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	switch {
	case on && p.resume == nil:
		p.resume = make(chan struct{})
	case !on && p.resume != nil:
		close(p.resume)
		p.resume = nil
	}
}

// paused returns the channel Pause(false) closes, or nil when not paused.
func (p *Proxy) paused() chan struct{} {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	return p.resume
}

// Slow makes the master slower than its clients: server->client bytes
// leave one per perByte at most (0 turns it off), each reply trickling in
// byte by byte. The pace is committed when the proxy reads the bytes, so a
// backlog built while Slow is on drains at that pace even after it is
// turned off, as a real backlog in a slow server or link does; a client
// that keeps sending faster than the pace sees its replies fall further and
// further behind. Only new connections escape a backlog.
func (p *Proxy) Slow(perByte time.Duration) { p.slow.Store(int64(max(0, perByte))) }

// Reset turns every knob back to normal: no latency, no blackhole, no
// refusal, no corruption, truncation, drip, slowness or pause. Connections stay
// open; a backlog that Slow committed still drains at its pace.
func (p *Proxy) Reset() {
	p.SetLatency(0, 0)
	p.Blackhole(false)
	p.Refuse(false)
	p.corrupt.Store(0)
	p.Truncate(false)
	p.Drip(false)
	p.Slow(0)
	p.Pause(false)
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	active := len(p.pairs)
	p.mu.Unlock()
	return Stats{
		Accepted:      p.accepted.Load(),
		Refused:       p.refused.Load(),
		DialFailed:    p.dialFailed.Load(),
		Active:        active,
		BytesToServer: p.toServer.Load(),
		BytesToClient: p.toClient.Load(),
		Dropped:       p.dropped.Load(),
		Corrupted:     p.corrupted.Load(),
		Truncated:     p.truncated.Load(),
		Resets:        p.resets.Load(),
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (EMFILE...): back off a little.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		p.accepted.Add(1)
		if p.refuse.Load() {
			p.refused.Add(1)
			reset(c)
			continue
		}
		// Dial in its own goroutine, so a slow target does not stop the
		// accept loop; it is owned by p.wg like every other.
		p.wg.Add(1)
		go p.connect(c)
	}
}

// connect dials the target for client connection c and starts the pair.
func (p *Proxy) connect(c net.Conn) {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	s, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		p.dialFailed.Add(1)
		reset(c)
		return
	}
	pr := &pair{p: p, client: c, server: s, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.pairs[pr] = struct{}{}
	// Added under p.mu, which Close takes before it waits: no Add after Wait.
	p.wg.Add(4)
	p.mu.Unlock()
	up := make(chan chunk, delayLine)
	down := make(chan chunk, delayLine)
	go pr.read(c, up, toServer)
	go pr.write(s, up, toServer)
	go pr.read(s, down, toClient)
	go pr.write(c, down, toClient)
}

// reset closes c with SO_LINGER 0, so the peer sees an RST.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// chunk is a piece of the stream in a delay line; eof marks its end. A
// paced chunk (see Slow) leaves one byte per pace, the first at at+pace.
type chunk struct {
	b    []byte
	at   time.Time
	pace time.Duration
	eof  bool
}

// pair is one proxied connection: the client's and the server's sockets.
type pair struct {
	p              *Proxy
	client, server net.Conn
	done           chan struct{}
	once           sync.Once
	tainted        atomic.Bool // lost bytes to a blackhole
	paceEnd        time.Time   // when the last paced byte is due; the toClient reader's own
}

// close closes both sockets (with RST when rst) and tells the writers to
// stop. Safe to call more than once.
func (pr *pair) close(rst bool) {
	pr.once.Do(func() {
		pr.p.mu.Lock()
		delete(pr.p.pairs, pr)
		pr.p.mu.Unlock()
		close(pr.done)
		if rst {
			reset(pr.client)
			reset(pr.server)
		} else {
			pr.client.Close()
			pr.server.Close()
		}
	})
}

// read moves chunks from src into the delay line until src fails or the
// pair closes. A clean EOF is queued, so the bytes before it still go out.
func (pr *pair) read(src net.Conn, line chan<- chunk, dir int) {
	defer pr.p.wg.Done()
	buf := make([]byte, chunkSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if pr.p.blackhole.Load() {
				pr.drop(n)
			} else {
				c := chunk{b: append([]byte(nil), buf[:n]...), at: time.Now()}
				if pace := time.Duration(pr.p.slow.Load()); pace > 0 && dir == toClient {
					// Committed now: these bytes keep their place in the
					// backlog even if Slow is turned off before they leave.
					c.at = later(c.at, pr.paceEnd)
					c.pace = pace
					pr.paceEnd = c.at.Add(time.Duration(n) * pace)
				}
				select {
				case line <- c:
				case <-pr.done:
					return
				}
			}
		}
		if err != nil {
			select {
			case line <- chunk{eof: true, at: time.Now()}:
			case <-pr.done:
			}
			return
		}
	}
}

// write forwards the delay line's chunks to dst, each at its arrival plus
// the latency, applying the faults of its direction, until the pair closes.
func (pr *pair) write(dst net.Conn, line <-chan chunk, dir int) {
	defer pr.p.wg.Done()
	p := pr.p
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var c chunk
		select {
		case c = <-line:
		case <-pr.done:
			return
		}
		if d := time.Until(c.at.Add(time.Duration(p.latency[dir].Load()))); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-pr.done:
				return
			}
		}
		if ch := p.paused(); ch != nil {
			select {
			case <-ch:
			case <-pr.done:
				return
			}
		}
		if c.eof {
			pr.close(false)
			return
		}
		if p.blackhole.Load() {
			pr.drop(len(c.b))
			continue
		}
		var err error
		switch {
		case c.pace > 0:
			err = pr.writePaced(dst, c, timer)
		case dir == toClient:
			err = pr.writeToClient(dst, c.b)
		default:
			_, err = dst.Write(c.b)
			p.toServer.Add(uint64(len(c.b)))
		}
		if err != nil {
			pr.close(false)
			return
		}
	}
}

// writeToClient forwards one server->client chunk with corruption,
// truncation and drip applied. An error ends the pair.
func (pr *pair) writeToClient(dst net.Conn, b []byte) error {
	p := pr.p
	if prob := math.Float64frombits(p.corrupt.Load()); prob > 0 {
		p.rngMu.Lock()
		if p.rng.Float64() < prob {
			i := p.rng.IntN(len(b))
			b[i] ^= byte(1 + p.rng.IntN(255)) // never 0: the byte changes
			p.corrupted.Add(1)
		}
		p.rngMu.Unlock()
	}
	if p.truncate.Load() {
		half := b[:len(b)/2]
		n, _ := dst.Write(half)
		p.toClient.Add(uint64(n))
		p.truncated.Add(1)
		return errTruncated
	}
	if p.drip.Load() {
		for i := range b {
			n, err := dst.Write(b[i : i+1])
			p.toClient.Add(uint64(n))
			if err != nil {
				return err
			}
			runtime.Gosched()
			select {
			case <-pr.done:
				return net.ErrClosed
			default:
			}
		}
		return nil
	}
	n, err := dst.Write(b)
	p.toClient.Add(uint64(n))
	return err
}

// writePaced forwards a paced chunk one byte per c.pace (see Slow), each
// byte at its due time after the chunk's start (latency included).
func (pr *pair) writePaced(dst net.Conn, c chunk, timer *time.Timer) error {
	start := c.at.Add(time.Duration(pr.p.latency[toClient].Load()))
	for i := range c.b {
		if d := time.Until(start.Add(time.Duration(i+1) * c.pace)); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-pr.done:
				return net.ErrClosed
			}
		}
		n, err := dst.Write(c.b[i : i+1])
		pr.p.toClient.Add(uint64(n))
		if err != nil {
			return err
		}
	}
	return nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

var errTruncated = errors.New("faultproxy: truncated")
