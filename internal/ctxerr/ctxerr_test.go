package ctxerr

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOf(t *testing.T) {
	mine := errors.New("my cause")
	live := context.Background()
	plain, cancel := context.WithCancel(live)
	cancel()
	caused, cancelCause := context.WithCancelCause(live)
	cancelCause(mine)
	past, cancelPast := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancelPast()
	pastCause, cancelPastCause := context.WithDeadlineCause(live, time.Now().Add(-time.Second), mine)
	defer cancelPastCause()

	assert.NoError(t, Of(live))
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		is    []error
		isNot []error
		text  string
	}{
		{"cancel", plain, []error{context.Canceled}, []error{mine, context.DeadlineExceeded}, "context canceled"},
		{"cancel with cause", caused, []error{context.Canceled, mine}, []error{context.DeadlineExceeded}, "my cause"},
		{"deadline", past, []error{context.DeadlineExceeded}, []error{mine, context.Canceled}, "context deadline exceeded"},
		{"deadline with cause", pastCause, []error{context.DeadlineExceeded, mine}, []error{context.Canceled}, "my cause"},
	} {
		err := Of(tc.ctx)
		require.Error(t, err, tc.name)
		for _, want := range tc.is {
			assert.ErrorIs(t, err, want, tc.name)
		}
		for _, not := range tc.isNot {
			assert.NotErrorIs(t, err, not, tc.name)
		}
		assert.Equal(t, tc.text, err.Error(), tc.name)
	}
}

// A cause that already wraps ctx.Err() is returned as it is.
func TestOfCauseWrappingErr(t *testing.T) {
	mine := fmt.Errorf("shutting down: %w", context.Canceled)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(mine)
	assert.Same(t, mine, Of(ctx))
}
