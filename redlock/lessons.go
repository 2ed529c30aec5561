package redlock

import (
	"time"

	"github.com/volleylock/volley/resp"
)

// lessons are what a burst's answers teach the call that runs it, noted
// by the answer readers (see answers) and read by the call's policies:
// the holders and their PTTLs (waitState), the fencing counters
// (fenceState), the free permits (permitState), and what a release did
// to the key's waiters (woke, asleep: see readRelease). The call keeps
// them (call.lessons); its op's readers write them through op.learn.
type lessons struct {
	waitState
	fenceState
	permitState
	woke, asleep int
}

// waitState is what a waiting Lock's attempt learns from a burst (see
// op.waiting): its command's "taken" answers carry the holder's id and
// the key's PTTL, which noteHolder stores in holder and pttl (hasHolder
// says which masters told); contention reads them. It is part of the
// burst's lessons.
type waitState struct {
	hasHolder []bool
	holder    [][releaseIDLen]byte
	pttl      []time.Duration
	free      []time.Duration // scratch of contention and guardEnds
}

func newWaitState(n int) waitState {
	return waitState{
		hasHolder: make([]bool, n),
		holder:    make([][releaseIDLen]byte, n),
		pttl:      make([]time.Duration, n),
		free:      make([]time.Duration, n),
	}
}

// noteHolder stores what a lock script's "taken" answer from master i
// says: the holder's id and the key's PTTL (see scripts.LockWait). Other
// answers have another shape and store nothing.
func (w *waitState) noteHolder(i int, vals []resp.Value) {
	if len(vals) != 3 || vals[1].Type != resp.TypeBulk || vals[2].Type != resp.TypeInteger {
		return
	}
	w.holder[i] = [releaseIDLen]byte{}
	copy(w.holder[i][:], vals[1].Bytes)
	w.pttl[i] = time.Duration(vals[2].Int) * time.Millisecond
	w.hasHolder[i] = true
}

// fenceState is what a fenced Lock's bursts learn and need: the lock
// round stores each master's counter in counter (hasCounter says which
// masters told). It is part of the burst's lessons.
type fenceState struct {
	hasCounter []bool
	counter    []uint64
}

func newFenceState(n int) fenceState {
	return fenceState{hasCounter: make([]bool, n), counter: make([]uint64, n)}
}

// noteCounter keeps the counter b that master i read in a lock round that
// set the keys: OutcomeOK, or ErrFenceRange for a counter Volley cannot
// read.
func (f *fenceState) noteCounter(i int, b []byte) (Outcome, error) {
	n, ok := parseCounter(b)
	if !ok {
		return OutcomeServerError, ErrFenceRange
	}
	f.counter[i], f.hasCounter[i] = n, true
	return OutcomeOK, nil
}

// permitState is what a semaphore's failed attempt learns from a burst:
// per permit, on how many masters it is free (scripts.SemAcquire's
// "taken" answer lists a master's free permits, which notePermits
// counts). It is part of the burst's lessons, sized by the semaphore of
// the current attempt (see resetPermits).
type permitState struct {
	freeOn []int32
}

// resetPermits makes p ready for an attempt on a semaphore of permits
// permits. It allocates only when p last served a smaller semaphore.
func (p *permitState) resetPermits(permits int) {
	if cap(p.freeOn) < permits {
		p.freeOn = make([]int32, permits)
	}
	p.freeOn = p.freeOn[:permits]
	clear(p.freeOn)
}

// notePermits counts the free permits a SemAcquire "taken" answer lists.
// An index out of range (a master that is not what it claims) is ignored.
func (p *permitState) notePermits(vals []resp.Value) {
	for i := 1; i < len(vals); i++ {
		if v := &vals[i]; v.Type == resp.TypeInteger && v.Int >= 0 && v.Int < int64(len(p.freeOn)) {
			p.freeOn[v.Int]++
		}
	}
}
