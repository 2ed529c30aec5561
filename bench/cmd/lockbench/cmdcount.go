package main

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/volleylock/volley/resp"
)

// cmdCounter is a TCP proxy in front of one master that counts the
// commands clients send through it (top-level RESP frames), so that a
// script's inner calls, which the master's own counters include, are not
// counted. The renewal mode connects every contender through one per
// master. Close stops it and every connection; it owns its goroutines.
type cmdCounter struct {
	ln       net.Listener
	target   string
	commands atomic.Uint64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
}

func startCmdCounter(target string) (*cmdCounter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &cmdCounter{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *cmdCounter) Addr() string { return p.ln.Addr().String() }

func (p *cmdCounter) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *cmdCounter) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c) || !p.track(s) {
			c.Close()
			s.Close()
			continue
		}
		p.wg.Go(func() { // client -> server, counting
			defer s.Close()
			rd := resp.NewReader(io.TeeReader(c, s), 0, resp.Limits{})
			for {
				if _, err := rd.ReadReply(); err != nil {
					return
				}
				p.commands.Add(1)
			}
		})
		p.wg.Go(func() { // server -> client
			defer c.Close()
			io.Copy(c, s)
		})
	}
}

// Close stops accepting, closes every connection and waits for the
// goroutines.
func (p *cmdCounter) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
