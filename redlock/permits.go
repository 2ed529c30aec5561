package redlock

import (
	"math/rand/v2"

	"github.com/volleylock/volley/resp"
)

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

// bestPermit picks the permit a semaphore's next attempt asks for, after
// a failed attempt on permit tried: the one free on the most masters, by
// the attempt's answers (the masters where tried was ours count it free:
// the failed attempt releases it), ties broken at random so that
// contenders that read the same answers spread out. It returns the
// permit and on how many masters it is free.
func (p *permitState) bestPermit(res votes, tried int) (permit, free int) {
	for i := range res {
		if out := res[i].Outcome; out == OutcomeOK || out == OutcomeGuarded {
			p.freeOn[tried]++
		}
	}
	ties := 0
	for p, n := range p.freeOn {
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
