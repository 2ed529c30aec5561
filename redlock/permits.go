package redlock

import (
	"math/rand/v2"

	"github.com/volleylock/volley/resp"
)

// permitState is what a semaphore's failed attempt learns from a burst:
// per permit, on how many masters it is free (scripts.SemAcquire's
// "taken" answer lists a master's free permits, which notePermits
// counts). It lives in the op, embedded, and is sized by the semaphore of
// the op's current attempt (see resetPermits).
type permitState struct {
	freeOn []int32
	permit int // the permit the attempt asks for
}

// resetPermits makes the op ready for an attempt on a semaphore of
// permits permits. It allocates only when the op last served a smaller
// semaphore.
func (o *op) resetPermits(permits int) {
	if cap(o.freeOn) < permits {
		o.freeOn = make([]int32, permits)
	}
	o.freeOn = o.freeOn[:permits]
	clear(o.freeOn)
}

// notePermits counts the free permits a SemAcquire "taken" answer lists.
// An index out of range (a master that is not what it claims) is ignored.
func (o *op) notePermits(vals []resp.Value) {
	for i := 1; i < len(vals); i++ {
		if v := &vals[i]; v.Type == resp.TypeInteger && v.Int >= 0 && v.Int < int64(len(o.freeOn)) {
			o.freeOn[v.Int]++
		}
	}
}

// bestPermit picks the permit a semaphore's next attempt asks for, after
// a failed attempt on permit tried: the one free on the most masters, by
// the attempt's answers (the masters where tried was ours count it free:
// the failed attempt releases it), ties broken at random so that
// contenders that read the same answers spread out. It returns the
// permit and on how many masters it is free.
func (o *op) bestPermit(tried int) (permit, free int) {
	for i := range o.res {
		if out := o.res[i].Outcome; out == OutcomeOK || out == OutcomeGuarded {
			o.freeOn[tried]++
		}
	}
	ties := 0
	for p, n := range o.freeOn {
		switch {
		case int(n) > free:
			permit, free, ties = p, int(n), 1
		case int(n) == free:
			ties++
			if rand.N(ties) == 0 {
				permit = p
			}
		}
	}
	return permit, free
}
