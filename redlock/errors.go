package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/volleylock/volley/resp"
)

var (
	// ErrNotAcquired: the lock is held by someone else. Lock and TryLock
	// return it as is (no allocation) when every master answered and the
	// vote was lost to contention alone; when a master failed (timeout,
	// connection, server error, restart guard) but enough of them could
	// vote for a quorum to have been possible, they return an *Error that
	// wraps it and says what each master did. Otherwise they return
	// ErrNoQuorum.
	ErrNotAcquired = errors.New("redlock: lock not acquired")
	// ErrNoQuorum: too few masters could vote for a quorum to have been
	// possible: an outage, not contention. A master votes when it answers
	// about the key (yes, taken, or a yes that the restart guard or
	// fencing holds out); it does not when it times out, its connection
	// fails, is refused or its address does not resolve, it answers with
	// a server error (LOADING, READONLY, ...), or it is slow and not
	// awaited. An attempt fails with ErrNoQuorum when more than N - quorum
	// of its N masters did not vote (Error gives the rule by Outcome):
	// those left could not have made a quorum whatever they answered. The
	// acquisitions (Lock, TryLock, LockMulti, a Semaphore's, an RWMutex's,
	// Campaign) return it in an *Error when their last attempt failed so
	// and, when ctx ended first, beside ctx's error if their last answers
	// showed it. It never matches ErrNotAcquired. A Lock facing it
	// attempts again after each retry delay, waiting for no release,
	// until its tries or ctx run out: masters come back.
	ErrNoQuorum = errors.New("redlock: too few masters could vote for a quorum")
	// ErrNotHeld: the lock is no longer ours: its validity ran out, it was
	// released, or another client took it over. Unlock and Extend return it
	// (possibly inside an *Error), and Do cancels fn's context with it as
	// the cause.
	ErrNotHeld = errors.New("redlock: lock not held")
	// ErrExtendFailed: Extend could not reach a quorum of masters in time,
	// yet no quorum said the lock was lost. The lock keeps its previous
	// validity (see Lock.Validity); trying again may succeed.
	ErrExtendFailed = errors.New("redlock: extend failed")
	// ErrUnlockFailed: Unlock could not reach a quorum of masters in time
	// (half a second or MasterTimeout, whichever is longer, or more when
	// a quorum is slow: see Lock.Unlock),
	// yet no quorum said the lock was gone. The masters that did not
	// answer may still hold the key until its TTL ends; waiters there wait
	// that long at most. Nothing is to be done: the lock is not the
	// caller's any more either way.
	ErrUnlockFailed = errors.New("redlock: unlock not confirmed")
	// ErrFenceRange: a master's fencing counter is beyond what Volley
	// reads exactly (2^53-1, the masters' Lua numbers); it is never reached
	// by counting (see Config.Fencing), only by a write from elsewhere.
	ErrFenceRange = errors.New("redlock: fencing counter out of range")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("redlock: client closed")
	// ErrWrongKind: a master keeps the lock's name for something else: a
	// semaphore's record (see Client.Semaphore), or a value that is not a
	// string. The lock scripts say so: LockMulti, a fenced Lock and an
	// RWMutex learn it at their first attempt, a Lock that waits at its
	// second; an unfenced TryLock's plain SET only finds the name taken
	// (ErrNotAcquired). The *Error around it names the masters and what
	// each said; what the attempt wrote elsewhere is released.
	ErrWrongKind = errors.New("redlock: the name is in use, but not as a lock")
	// ErrNoPermission: the masters' ACL denies this Client's user a
	// command or a key the call needs, on so many masters that no quorum
	// is left: Lock stops at once (no retry can succeed) and returns it in
	// an *Error whose masters' errors are the servers' NOPERM replies,
	// which name the command or key. Grant them: see "The ACL a
	// deployment needs" in docs/deployments.md.
	ErrNoPermission = errors.New(`redlock: permission denied by the masters' ACL (grant the user the commands and keys named below: see "The ACL a deployment needs" in docs/deployments.md)`)
	// ErrConfig: a Config, an address in it, or an argument of a call (an
	// empty key or name, a TTL out of range, a number of permits) is
	// invalid. New and the calls return it inside an error that says what
	// is wrong, before anything is sent; no retry can succeed.
	ErrConfig = errors.New("redlock: invalid configuration or argument")
)

// configError is an invalid Config or argument: it matches ErrConfig and
// wraps the error that says what is wrong (see invalid).
type configError struct{ err error }

func (e *configError) Error() string {
	return "redlock: invalid configuration or argument: " + strings.TrimPrefix(e.err.Error(), "redlock: ")
}

func (e *configError) Unwrap() []error { return []error{ErrConfig, e.err} }

// invalid returns err as an error matching ErrConfig (err itself when it
// does already).
func invalid(err error) error {
	if err == nil || errors.Is(err, ErrConfig) {
		return err
	}
	return &configError{err}
}

// invalidf is invalid of fmt.Errorf(format, args...).
func invalidf(format string, args ...any) error {
	return &configError{fmt.Errorf(format, args...)}
}

// Op is an operation on a lock. The set is closed: OpLock, OpExtend and
// OpUnlock are every value an Error or a Master hook carries; OpDo is also
// given to Hooks.Call.
type Op uint8

const (
	OpLock   Op = iota + 1 // Lock or TryLock: SET key token NX PX ttl on every master
	OpExtend               // Extend: the compare-and-pexpire script
	OpUnlock               // Unlock: the compare-and-delete script
	OpDo                   // Do: a lock held while a function runs (Hooks.Call only)
)

// opNames is indexed by Op; the zero Op names nothing.
var opNames = [...]string{"", "lock", "extend", "unlock", "do"}

// String returns "lock", "extend", "unlock" or "do".
func (op Op) String() string {
	if op > 0 && int(op) < len(opNames) {
		return opNames[op]
	}
	return "op(" + strconv.Itoa(int(op)) + ")"
}

// Outcome is what one master did in one operation.
type Outcome uint8

const (
	OutcomeNone        Outcome = iota // the call was decided before this master answered
	OutcomeOK                         // acquired, extended or released
	OutcomeTaken                      // held by someone else (or, for extend/unlock, not ours any more)
	OutcomeTimeout                    // no answer within Config.MasterTimeout
	OutcomeConnError                  // the connection to the master failed or is down
	OutcomeServerError                // the master answered with an error
	OutcomeGuarded                    // answered OK, but the restart guard kept it out of the quorum
	OutcomeCancelled                  // the caller's context ended first
	OutcomeSlow                       // not awaited: its replies lately came after Config.MasterTimeout, and the outcome hung on it
	OutcomeUnfenced                   // answered OK, but has no fencing counter it vouches for (it restarted, or over a cluster its slot moved; see Config.Fencing): not counted for a fenced lock
)

var outcomeNames = [...]string{"not awaited", "ok", "taken", "timeout", "connection error", "server error", "restart guard", "cancelled", "slow", "unfenced"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// MasterResult is one master's part in an operation.
type MasterResult struct {
	Addr    string
	Outcome Outcome
	Latency time.Duration // from the burst to this master's answer; 0 without one
	Err     error         // the connection or server error, if any
	// GuardedSince and GuardedUntil are set when Outcome is OutcomeGuarded:
	// when the master (re)started and when its vote will count again.
	GuardedSince, GuardedUntil time.Time
}

// Error is a failed lock, extend or unlock with each master's outcome.
// errors.Is(err, ErrNotAcquired), ErrNoQuorum, ErrNotHeld, ErrExtendFailed,
// ErrUnlockFailed, context.Canceled or context.DeadlineExceeded tells the
// kind. An acquisition's Error matches ErrNoQuorum, not ErrNotAcquired,
// when the masters whose Outcome is OutcomeTimeout, OutcomeConnError,
// OutcomeServerError or OutcomeSlow are more than len(Masters) minus the
// quorum: too few were left that could vote (OutcomeOK, OutcomeTaken,
// OutcomeGuarded, OutcomeUnfenced; OutcomeNone and OutcomeCancelled
// count as masters that may have). It never contains the lock's token.
type Error struct {
	Op       Op
	Key      string
	Err      error // the kind, see above
	Attempts int   // attempts made (Lock retries)
	Masters  []MasterResult
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("redlock: ")
	b.WriteString(e.Op.String())
	b.WriteString(" ")
	b.WriteString(strconv.Quote(e.Key))
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "redlock: "))
	if e.Attempts > 1 {
		b.WriteString(" after ")
		b.WriteString(strconv.Itoa(e.Attempts))
		b.WriteString(" attempts")
	}
	if len(e.Masters) > 0 {
		b.WriteString(" (")
		for i, n := range e.Masters {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(n.Addr)
			b.WriteString(": ")
			b.WriteString(n.Outcome.String())
			switch {
			case n.Outcome == OutcomeGuarded:
				b.WriteString(" (restarted ")
				b.WriteString(n.GuardedSince.Format(time.RFC3339))
				b.WriteString(", counts again from ")
				b.WriteString(n.GuardedUntil.Format(time.RFC3339))
				b.WriteString(")")
			case n.Err != nil:
				b.WriteString(": ")
				b.WriteString(n.Err.Error())
			}
		}
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the kind of failure.
func (e *Error) Unwrap() error { return e.Err }

// errLostNoQuorum is why a value that Do or an Election's renewer kept
// extended is lost when its validity ran out while too few masters could
// vote on its extensions (see ErrNoQuorum): it matches ErrNotHeld and
// ErrNoQuorum.
var errLostNoQuorum error = lostNoQuorum{}

type lostNoQuorum struct{}

func (lostNoQuorum) Error() string {
	return "redlock: lock not held: its validity ran out while too few masters could vote to extend it"
}

func (lostNoQuorum) Unwrap() []error { return []error{ErrNotHeld, ErrNoQuorum} }

// endedNoQuorum is the kind of an acquisition that its context ended
// while its latest answers showed too few masters that could vote: it
// matches the context's error (see ctxerr.Of) and ErrNoQuorum.
type endedNoQuorum struct{ ctx error }

func (e *endedNoQuorum) Error() string {
	return e.ctx.Error() + " (" + strings.TrimPrefix(ErrNoQuorum.Error(), "redlock: ") + ")"
}

func (e *endedNoQuorum) Unwrap() []error { return []error{e.ctx, ErrNoQuorum} }

var (
	errEmptyReply      = errors.New("empty reply")
	errUnexpectedReply = errors.New("unexpected reply")
)

// isNoPermission reports whether err is an ACL's refusal (NOPERM). (Its
// own function, as isMismatch: the *resp.ServerError that errors.As fills
// escapes, and is only made for a server error.)
func isNoPermission(err error) bool {
	var se *resp.ServerError
	return errors.As(err, &se) && se.Prefix == "NOPERM"
}

// isMismatch reports whether err is a script's refusal of a name kept for
// something else.
func isMismatch(err error) bool {
	var se *resp.ServerError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Prefix {
	case "PERMITS", "WRONGKIND", "WRONGTYPE":
		return true
	}
	return false
}
