package redlock

import (
	"math/rand/v2"
)

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
