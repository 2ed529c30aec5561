// Package callresult names how a lock call ended, for the labels and
// attributes of the telemetry adapters (redlockotel, redlockprom), so that
// both say the same thing.
package callresult

import (
	"context"
	"errors"

	"github.com/volleylock/volley/redlock"
)

// Of names a Lock, TryLock, Extend, Unlock or Do result: ok, not_acquired,
// not_held, extend_failed, canceled (the caller's context ended) or error.
func Of(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, redlock.ErrNotAcquired):
		return "not_acquired"
	case errors.Is(err, redlock.ErrNotHeld):
		return "not_held"
	case errors.Is(err, redlock.ErrExtendFailed):
		return "extend_failed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	default:
		return "error"
	}
}
