package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress reports what the harness is doing on stderr: on a terminal one
// line rewritten in place at every step; otherwise a line per phase only.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	start time.Time
	dirty bool // a \r line is on screen
}

// newProgress writes to f (nil: nowhere).
func newProgress(f *os.File) *progress {
	p := &progress{w: io.Discard, start: time.Now()}
	if f != nil {
		p.w = f
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) stamp() string {
	return fmt.Sprintf("[%5.1fs] ", time.Since(p.start).Seconds())
}

// phase starts a new phase: a line of its own.
func (p *progress) phase(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s%s", p.stamp(), fmt.Sprintf(format, args...))
		p.dirty = true
		return
	}
	fmt.Fprintf(p.w, "%s%s\n", p.stamp(), fmt.Sprintf(format, args...))
}

// step updates the live line (terminal only).
func (p *progress) step(format string, args ...any) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K%s%s", p.stamp(), fmt.Sprintf(format, args...))
	p.dirty = true
}

// note prints a line that stays.
func (p *progress) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	fmt.Fprintf(p.w, "lockbench: %s\n", fmt.Sprintf(format, args...))
}

// done clears the live line.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}

func (p *progress) clearLocked() {
	if p.tty && p.dirty {
		fmt.Fprint(p.w, "\r\033[K")
		p.dirty = false
	}
}
