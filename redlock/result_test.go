package redlock

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestResultOf(t *testing.T) {
	for err, want := range map[error]string{
		nil:                          "ok",
		ErrNotAcquired:               "not_acquired",
		&Error{Err: ErrNotAcquired}:  "not_acquired",
		ErrNotHeld:                   "not_held",
		&Error{Err: errLostNoQuorum}: "not_held",
		&Error{Err: ErrNoQuorum}:     "no_quorum",
		&Error{Err: &endedNoQuorum{context.DeadlineExceeded}}: "no_quorum",
		ErrExtendFailed:                       "extend_failed",
		ErrUnlockFailed:                       "unlock_failed",
		fmt.Errorf("x: %w", context.Canceled): "canceled",
		context.DeadlineExceeded:              "canceled",
		errors.New("boom"):                    "error",
	} {
		assert.Equal(t, want, ResultOf(err), "%v", err)
	}
}
