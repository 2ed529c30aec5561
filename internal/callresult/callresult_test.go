package callresult

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/volleylock/volley/redlock"
)

func TestOf(t *testing.T) {
	for err, want := range map[error]string{
		nil:                    "ok",
		redlock.ErrNotAcquired: "not_acquired",
		&redlock.Error{Err: redlock.ErrNotAcquired}: "not_acquired",
		redlock.ErrNotHeld:                          "not_held",
		redlock.ErrExtendFailed:                     "extend_failed",
		fmt.Errorf("x: %w", context.Canceled):       "canceled",
		context.DeadlineExceeded:                    "canceled",
		errors.New("boom"):                          "error",
	} {
		assert.Equal(t, want, Of(err), "%v", err)
	}
}
