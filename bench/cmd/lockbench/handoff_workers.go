package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"
)

// handoffWorkers is the parent's side of the children of the handoff and
// semaphore modes (handoff_child.go has the protocol): P processes,
// lockbench's own binary or another program that speaks the protocol (the
// semaphore mode's node child), started once for the whole mode and given
// one job per measurement. They end with close (stdin closed, each exits)
// or kill; either reaps every child.
type handoffWorkers struct {
	ctx    context.Context         // the children's: its end kills them (exec.CommandContext)
	cancel context.CancelCauseFunc //
	name   string                  // what error messages call them: the mode, the program
	ws     []*handoffWorker
	done   bool
}

type handoffWorker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	enc *json.Encoder
	dec *json.Decoder
}

// handoffRun is one measurement, every child's events merged.
type handoffRun struct {
	setupErr     string // why a child could not set up (then nothing ran)
	note         string // the contender's Note, as a child built it
	probeErrs    int    // children whose first lock failed, and that ran (handoffJob.ProbeMayFail)
	probeErr     string // the first of those, "process i: ..."
	start, end   int64  // Unix ns
	events       []holdEvent
	reconnects   []int64 // per master, summed over the children that count them (nil: none does)
	lockErrors   int
	unlockErrors int
	firstError   string // "process i: ..."
}

// lockbenchChild is the command line of a child that is lockbench itself.
func lockbenchChild() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{exe, handoffChildCmd}, nil
}

// startHandoffWorkers starts n children, each running argv, that error
// messages call name; on error, every child started is killed and reaped.
func startHandoffWorkers(ctx context.Context, name string, argv []string, n int) (*handoffWorkers, error) {
	wctx, cancel := context.WithCancelCause(ctx)
	h := &handoffWorkers{ctx: wctx, cancel: cancel, name: name}
	for i := range n {
		cmd := exec.CommandContext(wctx, argv[0], argv[1:]...)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = childProcAttr()
		cmd.WaitDelay = 2 * time.Second // Wait does not hang on a pipe a grandchild holds
		in, err := cmd.StdinPipe()
		if err != nil {
			h.kill()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			in.Close()
			h.kill()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			in.Close()
			out.Close()
			h.kill()
			return nil, fmt.Errorf("lockbench: %s: child %d: %w", name, i, err)
		}
		h.ws = append(h.ws, &handoffWorker{cmd: cmd, in: in, enc: json.NewEncoder(in), dec: json.NewDecoder(bufio.NewReader(out))})
	}
	return h, nil
}

// run gives job to every child (Proc set to its index), starts them
// together lead from the moment all are ready, and merges their events. A
// child whose setup failed makes every child skip the run (setupErr). A
// child that does not answer within the job's duration plus
// handoffGoTimeout is killed, with every other, and run fails.
//
// atStart, when not nil, is called once every child is ready and the
// start is set, before it is sent, with the run's start and end (a run
// that skips gets no call); its time counts in lead. The fleet mode reads
// the masters' counters there.
func (h *handoffWorkers) run(job handoffJob, lead time.Duration, atStart func(start, end time.Time)) (handoffRun, error) {
	limit := job.Duration + handoffGoTimeout
	watchdog := time.AfterFunc(limit, func() { h.cancel(fmt.Errorf("no answer within %v", limit)) })
	defer watchdog.Stop()
	var res handoffRun
	for i, w := range h.ws {
		j := job
		j.Proc = i
		if err := w.enc.Encode(handoffMsg{Job: &j}); err != nil {
			return res, h.fail(i, err)
		}
	}
	for i, w := range h.ws {
		var rd handoffReady
		if err := w.dec.Decode(&rd); err != nil {
			return res, h.fail(i, err)
		}
		if rd.Err != "" && res.setupErr == "" {
			res.setupErr = fmt.Sprintf("process %d: %s", i, rd.Err)
		}
		if rd.ProbeErr != "" {
			if res.probeErrs++; res.probeErr == "" {
				res.probeErr = fmt.Sprintf("process %d: %s", i, rd.ProbeErr)
			}
		}
		res.note = rd.Note
	}
	start := time.Now().Add(lead)
	res.start, res.end = start.UnixNano(), start.Add(job.Duration).UnixNano()
	g := handoffGo{StartNs: res.start, Skip: res.setupErr != ""}
	if atStart != nil && !g.Skip {
		atStart(start, start.Add(job.Duration))
	}
	for i, w := range h.ws {
		if err := w.enc.Encode(handoffMsg{Go: &g}); err != nil {
			return res, h.fail(i, err)
		}
	}
	for i, w := range h.ws {
		var out handoffOut
		if err := w.dec.Decode(&out); err != nil {
			return res, h.fail(i, err)
		}
		for _, e := range out.Events {
			res.events = append(res.events, holdEvent{Proc: i, G: int(e[0]), Began: e[1], Acquired: e[2], Released: e[3]})
		}
		res.reconnects = addEach(res.reconnects, out.Reconnects)
		res.lockErrors += out.LockErrors
		res.unlockErrors += out.UnlockErrors
		if res.firstError == "" && out.FirstError != "" {
			res.firstError = fmt.Sprintf("process %d: %s", i, out.FirstError)
		}
	}
	return res, nil
}

// fail names the child an exchange with failed, and why it may have.
func (h *handoffWorkers) fail(i int, err error) error {
	if h.ctx.Err() != nil {
		err = fmt.Errorf("%w (children killed: %w)", err, context.Cause(h.ctx))
	}
	return fmt.Errorf("lockbench: %s: child %d: %w", h.name, i, err)
}

// close closes every child's stdin, which ends it, kills any still
// running 5s later, and reaps them all.
func (h *handoffWorkers) close() error {
	if h.done {
		return nil
	}
	h.done = true
	for _, w := range h.ws {
		w.in.Close()
	}
	t := time.AfterFunc(5*time.Second, func() { h.cancel(errors.New("still running 5s after its stdin closed")) })
	defer t.Stop()
	var errs []error
	for i, w := range h.ws {
		if err := w.cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("child %d: %w", i, err))
		}
	}
	h.cancel(nil)
	return errors.Join(errs...)
}

// kill kills every child and reaps it; after close, it does nothing.
func (h *handoffWorkers) kill() {
	if h.done {
		return
	}
	h.done = true
	h.cancel(errors.New("killed"))
	for _, w := range h.ws {
		w.cmd.Wait()
	}
}

// addEach adds b to a, element by element, and returns a (b's copy when
// a is nil).
func addEach(a, b []int64) []int64 {
	if a == nil {
		return slices.Clone(b)
	}
	for i := range min(len(a), len(b)) {
		a[i] += b[i]
	}
	return a
}
