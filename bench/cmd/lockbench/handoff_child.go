package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// The child processes of the handoff and semaphore modes: lockbench
// re-executed as `lockbench handoff-child` (not a flag: it is not for
// users), or, for the semaphore mode's redis-semaphore, node running
// semaphore_child.js, which speaks the same protocol. The protocol is JSON
// values, one after another, on the child's stdin and stdout; nothing else
// is written to its stdout (handoffChildMain points os.Stdout at stderr).
// For every job, four messages:
//
//	parent -> child  handoffMsg{Job}      the contender, Setup, key, G, hold, duration
//	child  -> parent handoffReady         set up (connected, a first lock taken), or why not
//	parent -> child  handoffMsg{Go}       the common start time, or skip
//	child  -> parent handoffOut           every acquisition of the run
//
// In the semaphore mode, Setup.Permits is set and the key names a
// semaphore: a holder's Lock takes one of its permits, Unlock gives it
// back (contender_semaphore.go).
//
// The child serves jobs until its stdin ends. It exits on its own when the
// parent closes stdin (done) or dies (stdin ends too; on Linux the kernel
// also kills it, see childProcAttr), and when no start comes within
// handoffGoTimeout of its ready.

// handoffChildCmd is the first argument that makes lockbench a child.
const handoffChildCmd = "handoff-child"

// handoffGoTimeout bounds a child's wait for the start of a job it is
// ready for.
const handoffGoTimeout = time.Minute

// handoffJob is one measurement, the same for every child but Proc.
type handoffJob struct {
	Contender string        `json:"contender"`
	Setup     Setup         `json:"setup"`
	Key       string        `json:"key"`
	Probe     string        `json:"probe"` // key prefix of the first lock, which proves the setup
	Proc      int           `json:"proc"`
	G         int           `json:"g"`
	Hold      time.Duration `json:"hold_ns"`
	Duration  time.Duration `json:"duration_ns"`
	// ProbeMayFail runs the job even where the first lock failed (the
	// child says so in handoffReady.ProbeErr): in the fleet mode, dozens
	// of processes set up at once, and a contender that cannot lock then
	// is measured, not skipped.
	ProbeMayFail bool `json:"probe_may_fail,omitempty"`
}

// handoffGo starts (or skips) the job every child is ready for.
type handoffGo struct {
	StartNs int64 `json:"start_ns"` // Unix ns, the same for every child
	Skip    bool  `json:"skip,omitempty"`
}

// handoffMsg is what the parent sends: one of the two.
type handoffMsg struct {
	Job *handoffJob `json:"job,omitempty"`
	Go  *handoffGo  `json:"go,omitempty"`
}

// handoffReady is the child's answer to a job.
type handoffReady struct {
	Note     string `json:"note,omitempty"`
	Err      string `json:"err,omitempty"`
	ProbeErr string `json:"probe_err,omitempty"` // the first lock failed, and the job runs (ProbeMayFail)
}

// handoffOut is the child's run: every acquisition as [goroutine, Lock
// call began, acquired, release began], Unix ns; and, for a contender
// that counts them (reconnectCounter), per master the connects of its
// lock connection during the run: its reconnects.
type handoffOut struct {
	Events       [][4]int64 `json:"events"`
	Reconnects   []int64    `json:"reconnects,omitempty"`
	LockErrors   int        `json:"lock_errors"`
	UnlockErrors int        `json:"unlock_errors"`
	FirstError   string     `json:"first_error,omitempty"` // of Lock or Unlock
}

// handoffChild serves jobs read from in, answering on out, until in ends,
// and returns the exit code. defs are the contenders it can build.
func handoffChild(defs []contenderDef, in io.Reader, out, diag io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msgs := make(chan handoffMsg)
	go func() { // the only reader of in; its end (parent done or gone) ends ctx
		defer cancel()
		defer close(msgs)
		dec := json.NewDecoder(in)
		for {
			var m handoffMsg
			if err := dec.Decode(&m); err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintln(diag, "lockbench handoff-child: stdin:", err)
				}
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	enc := json.NewEncoder(out)
	for m := range msgs {
		if m.Job == nil {
			fmt.Fprintln(diag, "lockbench handoff-child: expected a job")
			return 2
		}
		if err := serveHandoffJob(ctx, defs, *m.Job, msgs, enc); err != nil {
			fmt.Fprintln(diag, "lockbench handoff-child:", err)
			return 1
		}
	}
	return 0
}

// serveHandoffJob sets the job up, waits for its start and runs it.
func serveHandoffJob(ctx context.Context, defs []contenderDef, job handoffJob, msgs <-chan handoffMsg, enc *json.Encoder) error {
	c, setupErr := newHandoffContender(ctx, defs, job)
	if c != nil {
		defer c.Close()
	}
	ready := handoffReady{}
	switch {
	case setupErr != nil && c != nil && job.ProbeMayFail:
		ready.Note, ready.ProbeErr = c.Note(), setupErr.Error()
		setupErr = nil
	case setupErr != nil:
		ready.Err = setupErr.Error()
	default:
		ready.Note = c.Note()
	}
	if err := enc.Encode(ready); err != nil {
		return err
	}
	var g *handoffGo
	t := time.NewTimer(handoffGoTimeout)
	defer t.Stop()
	select {
	case m, ok := <-msgs:
		if !ok {
			return errors.New("stdin ended before the start")
		}
		if g = m.Go; g == nil {
			return errors.New("expected a start")
		}
	case <-t.C:
		return errors.New("no start within " + handoffGoTimeout.String())
	}
	if setupErr != nil || g.Skip {
		return enc.Encode(handoffOut{})
	}
	holders := make([]Holder, job.G)
	for i := range holders {
		holders[i] = c.NewHolder()
	}
	rc, counts := c.(reconnectCounter)
	var before []uint64
	if counts {
		before = rc.Connects()
	}
	out := handoffLoop(ctx, holders, job.Key, job.Setup.TTL, job.Hold, time.Unix(0, g.StartNs), job.Duration)
	if err := ctx.Err(); err != nil {
		return err
	}
	if counts {
		out.Reconnects = reconnectsSince(before, rc.Connects())
	}
	return enc.Encode(out)
}

// reconnectCounter is a contender that counts its connects per master:
// the fleet mode's reconnects are their growth over a run, as the
// processes themselves saw them (the masters' accepted connections also
// count a pub/sub connection's first connect and the processes' exits).
type reconnectCounter interface {
	Connects() []uint64
}

// reconnectsSince returns, per master, after's connects less before's.
func reconnectsSince(before, after []uint64) []int64 {
	out := make([]int64, min(len(before), len(after)))
	for i := range out {
		out[i] = int64(after[i] - before[i])
	}
	return out
}

// newHandoffContender builds the job's contender and takes a first lock,
// which proves it works (and loads scripts, dials pools) before the start.
// When only that lock failed, it returns the contender with the error.
func newHandoffContender(ctx context.Context, defs []contenderDef, job handoffJob) (Contender, error) {
	for _, d := range defs {
		if d.name != job.Contender {
			continue
		}
		c, err := d.new(job.Setup)
		if err != nil {
			return nil, err
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := c.LockUnlock(pctx, job.Probe+strconv.Itoa(job.Proc), job.Setup.TTL); err != nil {
			return c, fmt.Errorf("first lock failed: %w", err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("unknown contender %q", job.Contender)
}

// handoffLoop runs one goroutine per holder from start until start+d,
// each taking key, holding it for hold, noting the release and unlocking
// it, and returns every acquisition. A Lock call that fails before the end
// is an error; one cut by the end is not.
func handoffLoop(ctx context.Context, holders []Holder, key string, ttl, hold time.Duration, start time.Time, d time.Duration) handoffOut {
	t := time.NewTimer(time.Until(start))
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return handoffOut{}
	}
	rctx, cancel := context.WithDeadline(ctx, start.Add(d))
	defer cancel()
	per := make([]handoffOut, len(holders))
	var wg sync.WaitGroup
	for i, h := range holders {
		o := &per[i]
		wg.Go(func() {
			for rctx.Err() == nil {
				began := time.Now().UnixNano()
				if err := h.Lock(rctx, key, ttl); err != nil {
					if rctx.Err() == nil {
						o.LockErrors++
						o.noteError(err.Error())
					}
					continue
				}
				acquired := time.Now().UnixNano()
				if hold > 0 {
					time.Sleep(hold)
				}
				runtime.Gosched() // let a broken lock's other holders run
				released := time.Now().UnixNano()
				uctx, ucancel := context.WithTimeout(ctx, 5*time.Second)
				if err := h.Unlock(uctx); err != nil {
					o.UnlockErrors++
					o.noteError(err.Error())
				}
				ucancel()
				o.Events = append(o.Events, [4]int64{int64(i), began, acquired, released})
			}
		})
	}
	wg.Wait()
	var out handoffOut
	for _, o := range per {
		out.Events = append(out.Events, o.Events...)
		out.LockErrors += o.LockErrors
		out.UnlockErrors += o.UnlockErrors
		out.noteError(o.FirstError)
	}
	return out
}

// noteError keeps the first error's text.
func (o *handoffOut) noteError(msg string) {
	if o.FirstError == "" {
		o.FirstError = msg
	}
}
