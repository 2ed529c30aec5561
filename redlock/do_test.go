package redlock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// goneAtUnlock: Do reports its lock lost at the final Unlock only when the
// answers show it gone, not when they came late.
func TestGoneAtUnlock(t *testing.T) {
	c := &Client{masters: make([]*master, 3), quorum: 2}
	unlockErr := func(outs ...Outcome) error {
		e := &Error{Op: OpUnlock, Err: ErrNotHeld}
		for _, o := range outs {
			e.Masters = append(e.Masters, MasterResult{Outcome: o})
		}
		return e
	}
	for name, tt := range map[string]struct {
		err  error
		gone bool
	}{
		"released":                    {nil, false},
		"every master answered: gone": {ErrNotHeld, true},
		"two taken, one late":         {unlockErr(OutcomeTaken, OutcomeTaken, OutcomeTimeout), true},
		"two late, one released":      {unlockErr(OutcomeTimeout, OutcomeOK, OutcomeTimeout), false},
		"one taken, two late":         {unlockErr(OutcomeTaken, OutcomeTimeout, OutcomeTimeout), false},
		"ctx ended":                   {&Error{Op: OpUnlock, Err: context.Canceled}, false},
	} {
		assert.Equal(t, tt.gone, c.goneAtUnlock(tt.err), name)
	}
}
