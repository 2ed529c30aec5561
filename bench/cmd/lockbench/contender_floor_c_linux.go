//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed" // cfloor's source
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed cfloor/cfloor.c
var cfloorSource []byte

const (
	// floorCDrain is how long cfloor waits for the replies a pair still
	// owes before it fails.
	floorCDrain = 5 * time.Second
	// floorCSlack is what an answer of cfloor may take beyond the longest
	// its run can last.
	floorCSlack = 5 * time.Second
	// floorCExitWait is how long Close waits for cfloor to exit at the end
	// of its stdin before it kills it.
	floorCExitWait = 2 * time.Second
	// floorCMaxPrefix is cfloor's longest key prefix (MAX_PREFIX).
	floorCMaxPrefix = 512
)

var (
	errFloorCNotDone = errors.New("lockbench: floor-c: Lock+Unlock failed: no quorum")
	errFloorCHolder  = errors.New("lockbench: floor-c: no holders: it takes part only in the latency mode")
	errFloorCExited  = errors.New("cfloor exited")
	errFloorCClosed  = errors.New("lockbench: floor-c: closed")
)

// floorC is the floor-c contender (floor_c.go): a cfloor process and the
// two ends of its pipes.
//
// Concurrency: its methods are safe for concurrent use, one call at a
// time (mu): cfloor serves one run at a time. A call that fails to get
// cfloor's whole answer (an I/O error, a protocol error, no answer in
// time, ctx ended) ends cfloor: it is out of step with the protocol. Every
// later call then returns that error; Close reaps cfloor in any case.
type floorC struct {
	setup Setup
	drain time.Duration
	note  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *os.File // cfloor's stdout, a pipe: read deadlines apply
	rd      *bufio.Reader
	stderr  *os.File // cfloor's stderr, a removed temporary file
	scratch []byte
	err     error // why cfloor is gone; every later call returns it
}

// newFloorC builds cfloor, starts it over the masters of s and waits for
// it to have loaded the release script on every master. A MasterTimeout
// of 0 means 50ms, lockbench's default.
func newFloorC(s Setup) (Contender, error) {
	return startFloorC(s, floorCDrain)
}

// startFloorC is newFloorC with how long cfloor waits for owed replies.
func startFloorC(s Setup, drain time.Duration) (*floorC, error) {
	if s.MasterTimeout <= 0 {
		s.MasterTimeout = 50 * time.Millisecond
	}
	dir, err := os.MkdirTemp("", "lockbench-floor-c-")
	if err != nil {
		return nil, fmt.Errorf("lockbench: floor-c: %w", err)
	}
	// cfloor runs on from its removed executable; the open stderr file
	// stays too.
	defer os.RemoveAll(dir)
	bctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cc, bin, _, err := buildCfloor(bctx, dir)
	cancel()
	if err != nil {
		return nil, err
	}
	stderr, err := os.CreateTemp(dir, "stderr-")
	if err != nil {
		return nil, fmt.Errorf("lockbench: floor-c: %w", err)
	}
	out, outW, err := os.Pipe()
	if err != nil {
		stderr.Close()
		return nil, fmt.Errorf("lockbench: floor-c: %w", err)
	}
	args := []string{millis(s.MasterTimeout), millis(drain), floorUnlockScript}
	cmd := exec.Command(bin, append(args, s.Addrs...)...)
	cmd.Stdout, cmd.Stderr = outW, stderr
	cmd.SysProcAttr = childProcAttr()
	in, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	outW.Close() // cfloor's copy is the only writer left
	if err != nil {
		out.Close()
		stderr.Close()
		return nil, fmt.Errorf("lockbench: floor-c: %w", err)
	}
	f := &floorC{
		setup: s, drain: drain,
		note: "C, cfloor.c (" + filepath.Base(cc) + " -O2), own process, self-timed: raw epoll, one write per master, return at a quorum; " +
			"owed replies read untimed before the next pair; one attempt",
		cmd: cmd, in: in, out: out, rd: bufio.NewReader(out), stderr: stderr,
		scratch: make([]byte, 64<<10),
	}
	// cfloor connects to the masters one by one, then loads the script.
	if err := f.out.SetReadDeadline(time.Now().Add(time.Duration(len(s.Addrs)+2) * 5 * time.Second)); err != nil {
		return nil, f.fail(err)
	}
	line, err := f.rd.ReadSlice('\n')
	if err != nil {
		return nil, f.fail(err)
	}
	if want := "ready " + floorScriptSHA() + "\n"; string(line) != want {
		return nil, f.fail(fmt.Errorf("cfloor said %q, not %q", line, want))
	}
	return f, nil
}

// buildCfloor writes cfloor's source to dir and compiles it there; it
// returns the compiler, the executable and what the compiler printed, or
// errNoCCompiler.
func buildCfloor(ctx context.Context, dir string) (cc, bin string, output []byte, err error) {
	if cc, err = findCCompiler(); err != nil {
		return "", "", nil, err
	}
	src, bin := filepath.Join(dir, "cfloor.c"), filepath.Join(dir, "cfloor")
	if err := os.WriteFile(src, cfloorSource, 0o644); err != nil {
		return "", "", nil, fmt.Errorf("lockbench: floor-c: %w", err)
	}
	output, err = exec.CommandContext(ctx, cc, append(cFlags, "-o", bin, src)...).CombinedOutput()
	if err != nil {
		return "", "", output, fmt.Errorf("lockbench: floor-c: %s: %w: %s", cc, err, bytes.TrimSpace(output))
	}
	return cc, bin, output, nil
}

// millis formats d as whole milliseconds, rounded up, at least 1.
func millis(d time.Duration) string {
	return strconv.FormatInt(max(1, int64((d+time.Millisecond-1)/time.Millisecond)), 10)
}

func (f *floorC) Name() string { return nameFloorC }

func (f *floorC) Note() string {
	if f.setup.Defaults {
		return f.note + "; defaults: none of its own, the shared settings"
	}
	return f.note
}

// LockUnlock runs one pair on key. It is a round trip to cfloor: the
// latency mode measures floor-c through Samples instead.
func (f *floorC) LockUnlock(ctx context.Context, key string, ttl time.Duration) error {
	s, failed, err := f.Samples(ctx, key, 0, 1, ttl, 0, nil)
	if err != nil {
		return err
	}
	if failed > 0 || len(s) != 1 {
		return errFloorCNotDone
	}
	return nil
}

// Samples runs pairs in cfloor (see selfTimer): "run" and cfloor's
// answer, "done N FAILED" and N durations. With keys 0, every pair is on
// the key prefix itself. On error, buf is returned as it came.
func (f *floorC) Samples(ctx context.Context, prefix string, keys, ops int, ttl, d time.Duration, buf []time.Duration) ([]time.Duration, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n0 := len(buf)
	switch {
	case f.err != nil:
		return buf, 0, f.err
	case len(prefix) == 0 || len(prefix) > floorCMaxPrefix || strings.ContainsFunc(prefix, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return buf, 0, fmt.Errorf("lockbench: floor-c: key prefix %q: want 1 to %d bytes, no spaces or control characters", prefix, floorCMaxPrefix)
	case keys < 0 || ops < 0 || d < 0 || (ops == 0 && d == 0):
		return buf, 0, fmt.Errorf("lockbench: floor-c: want a count of pairs or a duration (keys %d, ops %d, d %v)", keys, ops, d)
	case ttl < time.Millisecond:
		return buf, 0, fmt.Errorf("lockbench: floor-c: TTL %v: want at least 1ms", ttl)
	}
	if err := ctx.Err(); err != nil {
		return buf, 0, err
	}
	// The longest a run can last: its duration and one more pair, or its
	// pairs; a pair is two exchanges and the wait for owed replies.
	pair := 2*f.setup.MasterTimeout + f.drain
	limit := d + pair
	if ops > 0 && (d == 0 || time.Duration(ops)*pair < limit) {
		limit = time.Duration(ops) * pair
	}
	if err := f.out.SetReadDeadline(time.Now().Add(limit + floorCSlack)); err != nil {
		return buf, 0, f.fail(err)
	}
	// ctx's end cuts the read short: cfloor is then out of step and goes.
	cut := context.AfterFunc(ctx, func() { f.out.SetReadDeadline(time.Now()) })
	buf, failed, err := f.run(prefix, keys, ops, ttl, d, buf)
	if !cut() && err == nil {
		err = ctx.Err()
	}
	switch {
	case err != nil && ctx.Err() != nil:
		err = ctx.Err()
		if cause := context.Cause(ctx); cause != err {
			err = fmt.Errorf("%w: %w", err, cause)
		}
		return buf[:n0], 0, f.fail(err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return buf[:n0], 0, f.fail(fmt.Errorf("no answer from cfloor within %v", limit+floorCSlack))
	case err != nil:
		return buf[:n0], 0, f.fail(err)
	}
	return buf, failed, nil
}

// run writes one run command and reads its answer.
func (f *floorC) run(prefix string, keys, ops int, ttl, d time.Duration, buf []time.Duration) ([]time.Duration, int, error) {
	cmd := fmt.Appendf(f.scratch[:0], "run %s %d %d %d %d\n", prefix, keys, ops, d.Microseconds(), ttl.Milliseconds())
	if _, err := f.in.Write(cmd); err != nil {
		return buf, 0, err
	}
	line, err := f.rd.ReadSlice('\n')
	if err != nil {
		return buf, 0, err
	}
	fields := strings.Fields(string(line))
	if len(fields) != 3 || fields[0] != "done" {
		return buf, 0, fmt.Errorf("cfloor answered %q, not done N FAILED", line)
	}
	n, err1 := strconv.Atoi(fields[1])
	failed, err2 := strconv.Atoi(fields[2])
	// Hostile counts: at most ops pairs, or one per microsecond of d and
	// one more.
	most := ops
	if most == 0 {
		most = int(d.Microseconds()) + 1
	}
	if err1 != nil || err2 != nil || n < 0 || failed < 0 || n > most || failed > most {
		return buf, 0, fmt.Errorf("cfloor answered %q: counts out of range (at most %d)", line, most)
	}
	for n > 0 {
		chunk := f.scratch[:8*min(n, len(f.scratch)/8)]
		if _, err := io.ReadFull(f.rd, chunk); err != nil {
			return buf, 0, err
		}
		for i := 0; i < len(chunk); i += 8 {
			buf = append(buf, time.Duration(binary.LittleEndian.Uint64(chunk[i:])))
		}
		n -= len(chunk) / 8
	}
	return buf, failed, nil
}

// fail ends cfloor, reaps it and keeps err, with what cfloor said on
// stderr, as the error of every later call.
func (f *floorC) fail(err error) error {
	if f.err != nil {
		return f.err
	}
	f.cmd.Process.Kill() // if it has not exited already
	f.in.Close()
	werr := f.cmd.Wait()
	f.out.Close()
	said := f.said()
	f.stderr.Close()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errFloorCExited
	}
	if said != "" {
		err = fmt.Errorf("%w (%v): %s", err, werr, said)
	}
	f.err = fmt.Errorf("lockbench: floor-c: %w", err)
	return f.err
}

// said returns what cfloor wrote on stderr, on one line, its first 1000
// bytes at most.
func (f *floorC) said() string {
	b := make([]byte, 1000)
	n, _ := f.stderr.ReadAt(b, 0)
	return strings.Join(strings.Fields(string(b[:n])), " ")
}

func (f *floorC) NewHolder() Holder { return floorCHolder{} }

// Close ends cfloor's stdin, on which cfloor exits, and reaps it; one that
// has not exited after floorCExitWait is killed.
func (f *floorC) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil // already reaped
	}
	f.err = errFloorCClosed
	f.in.Close()
	kill := time.AfterFunc(floorCExitWait, func() { f.cmd.Process.Kill() })
	err := f.cmd.Wait()
	kill.Stop()
	f.out.Close()
	f.stderr.Close()
	if err != nil {
		return fmt.Errorf("lockbench: floor-c: cfloor: %w", err)
	}
	return nil
}

// floorCHolder is floor-c's Holder: it has none (floorCModes).
type floorCHolder struct{}

func (floorCHolder) Lock(context.Context, string, time.Duration) error { return errFloorCHolder }
func (floorCHolder) Unlock(context.Context) error                      { return errFloorCHolder }
