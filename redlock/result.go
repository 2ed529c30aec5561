package redlock

import (
	"context"
	"errors"
)

// ResultOf names how a Lock, TryLock, Extend, Unlock or Do call ended, by
// its error, for the labels and attributes of telemetry (the redlockotel
// and redlockprom adapters use it, so that both say the same thing): "ok",
// "not_acquired", "not_held", "no_quorum" (an acquisition that too few
// masters could vote on, see ErrNoQuorum, also when the caller's context
// ended meanwhile), "extend_failed", "unlock_failed", "canceled" (the
// caller's context ended) or "error". The set is closed: these are every
// value it returns.
func ResultOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrNotAcquired):
		return "not_acquired"
	case errors.Is(err, ErrNotHeld):
		return "not_held"
	case errors.Is(err, ErrNoQuorum):
		return "no_quorum"
	case errors.Is(err, ErrExtendFailed):
		return "extend_failed"
	case errors.Is(err, ErrUnlockFailed):
		return "unlock_failed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	default:
		return "error"
	}
}
