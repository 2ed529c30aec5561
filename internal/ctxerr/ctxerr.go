// Package ctxerr reports why a context ended, keeping both the context's
// error and its cause, so that a caller can test for either with errors.Is.
package ctxerr

import (
	"context"
	"errors"
)

// Of returns the error to report for a context that has ended: ctx.Err()
// itself when the cause is that same error (a plain cancel or deadline),
// the cause when it already wraps ctx.Err(), otherwise an error that wraps
// both ctx.Err() and context.Cause(ctx), so
// that errors.Is(err, context.Canceled) and errors.Is(err, cause) both
// hold. Its text is the cause's, which says more. It returns nil while ctx
// is live. The joined error allocates: use it on error paths only.
func Of(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	cause := context.Cause(ctx)
	switch {
	case cause == nil || cause == err:
		return err
	case errors.Is(cause, err):
		return cause // already matches both
	}
	return &ended{err: err, cause: cause}
}

// ended is a context's end with a cause of its own.
type ended struct{ err, cause error }

func (e *ended) Error() string   { return e.cause.Error() }
func (e *ended) Unwrap() []error { return []error{e.cause, e.err} }
