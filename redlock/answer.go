package redlock

import (
	"bytes"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// An answerShape names the shape of a master's answer to a command (see
// command.answer) or to a native form of one (see verbs): the index of its
// entry in answers.
type answerShape uint8

const (
	answerSet         answerShape = iota // +OK; nil when taken
	answerLock                           // 1; {holder id, pttl} when taken
	answerVote                           // 1 yes, 0 no
	answerFenceLock                      // {1, counter} or {1}; {holder id, pttl} when taken
	answerFenceWrite                     // 1, 0 not ours, 2 no counter
	answerPermit                         // the attempt's token; the free permits' indexes when taken
	answerFencePermit                    // {token, counter} or {token, ""}; the free permits' indexes when taken
	answerRelease                        // 1 yes; 2 yes, a waiter woken; 3 yes, waiters left asleep; 0 no
)

// answers holds, for each shape, the check its replies must pass on the
// socket's reader (fits, see replycheck.go) and how a burst reads one
// (read): master i's outcome, with what waiting, fencing and semaphores
// learn from it noted in the burst's lessons (noteHolder, noteCounter,
// notePermits).
// read gets a reply that is not a server error, and tok, the token the
// burst sent.
var answers = [...]struct {
	fits func([]resp.Value) bool
	read func(l *lessons, tok *token, i int, vals []resp.Value) (Outcome, error)
}{
	answerSet:         {fitsSet, readSet},
	answerLock:        {fitsLock, readLock},
	answerVote:        {fitsInteger, readVote},
	answerFenceLock:   {fitsFenceLock, readFenceLock},
	answerFenceWrite:  {fitsInteger, readFenceWrite},
	answerPermit:      {fitsPermit, readPermit},
	answerFencePermit: {fitsFencePermit, readFencePermit},
	answerRelease:     {fitsInteger, readRelease},
}

// classify reads a completed request's answer, as the shape of what the
// master was sent says (see op.shape).
func (o *op) classify(r *pipe.Request) (out Outcome, err error) {
	if err := r.Err(); err != nil {
		return OutcomeConnError, err
	}
	vals := r.Reply()
	if len(vals) == 0 {
		return OutcomeServerError, errEmptyReply
	}
	if v := &vals[0]; v.IsError() {
		return OutcomeServerError, v.Err()
	}
	return answers[o.shape(r.Tag)].read(o.learn, &o.tok, r.Tag, vals)
}

// shape is the shape of the answer in slot: that of the native form the
// master was sent (see native.go), else the op's command's.
func (o *op) shape(slot int) answerShape {
	if v := o.fan.form[slot]; v != 0 {
		return verbs[v-1].answer
	}
	return o.command.answer
}

// readSet: SET NX's +OK, or nil when the key is taken.
func readSet(_ *lessons, _ *token, _ int, vals []resp.Value) (Outcome, error) {
	v := &vals[0]
	if v.Null {
		return OutcomeTaken, nil
	}
	if v.Type == resp.TypeSimpleString && string(v.Bytes) == "OK" {
		return OutcomeOK, nil
	}
	return OutcomeServerError, errUnexpectedReply
}

// readLock: a lock script's 1, or {holder id, pttl} when taken (noted for
// waiting, see contention).
func readLock(l *lessons, tok *token, i int, vals []resp.Value) (Outcome, error) {
	v := &vals[0]
	if v.Type == resp.TypeInteger && v.Int == 1 {
		return OutcomeOK, nil
	}
	if v.Type == resp.TypeArray && v.Int == 2 && len(vals) == 3 {
		l.noteHolder(i, vals)
		return OutcomeTaken, nil
	}
	return OutcomeServerError, errUnexpectedReply
}

// readVote: 1 yes, 0 no.
func readVote(_ *lessons, _ *token, _ int, vals []resp.Value) (Outcome, error) {
	if v := &vals[0]; v.Type == resp.TypeInteger {
		switch v.Int {
		case 1:
			return OutcomeOK, nil
		case 0:
			return OutcomeTaken, nil
		}
	}
	return OutcomeServerError, errUnexpectedReply
}

// readRelease: a release's vote, and with a turn's cutoff what it did to
// the waiters (noted in the lessons, see Lock.Unlock and turns.go).
func readRelease(l *lessons, _ *token, _ int, vals []resp.Value) (Outcome, error) {
	if v := &vals[0]; v.Type == resp.TypeInteger {
		switch v.Int {
		case 1:
			return OutcomeOK, nil
		case 2:
			l.woke++
			return OutcomeOK, nil
		case 3:
			l.asleep++
			return OutcomeOK, nil
		case 0:
			return OutcomeTaken, nil
		}
	}
	return OutcomeServerError, errUnexpectedReply
}

// readPermit: the attempt's token when granted (a grant names its
// request's token), else the free permits' indexes (noted, see
// notePermits).
func readPermit(l *lessons, tok *token, _ int, vals []resp.Value) (Outcome, error) {
	v := &vals[0]
	if v.Type == resp.TypeBulk && bytes.Equal(v.Bytes, tok[:]) {
		return OutcomeOK, nil
	}
	if v.Type == resp.TypeArray && int(v.Int) == len(vals)-1 {
		l.notePermits(vals)
		return OutcomeTaken, nil
	}
	return OutcomeServerError, errUnexpectedReply
}

// readFenceLock: a fenced lock round's {1, counter} (set; the counter
// noted, see noteCounter), {1} (set, but the master has no counter it
// vouches for) or {holder id, pttl} (taken).
func readFenceLock(l *lessons, _ *token, i int, vals []resp.Value) (Outcome, error) {
	if v := &vals[0]; v.Type == resp.TypeArray {
		switch {
		case v.Int == 2 && len(vals) == 3 && vals[1].Type == resp.TypeBulk:
			l.noteHolder(i, vals)
			return OutcomeTaken, nil
		case v.Int == 2 && len(vals) == 3 && vals[1].Type == resp.TypeInteger && vals[1].Int == 1 && vals[2].Type == resp.TypeBulk:
			return l.noteCounter(i, vals[2].Bytes)
		case v.Int == 1 && len(vals) == 2 && vals[1].Type == resp.TypeInteger && vals[1].Int == 1:
			return OutcomeUnfenced, nil
		}
	}
	return OutcomeServerError, errUnexpectedReply
}

// readFencePermit: a fenced permit's {token, counter} or {token, ""} (no
// counter it vouches for), or the free permits' indexes.
func readFencePermit(l *lessons, tok *token, i int, vals []resp.Value) (Outcome, error) {
	v := &vals[0]
	if v.Type != resp.TypeArray {
		return OutcomeServerError, errUnexpectedReply
	}
	if v.Int == 2 && len(vals) == 3 && vals[1].Type == resp.TypeBulk && bytes.Equal(vals[1].Bytes, tok[:]) && vals[2].Type == resp.TypeBulk {
		if len(vals[2].Bytes) == 0 {
			return OutcomeUnfenced, nil
		}
		return l.noteCounter(i, vals[2].Bytes)
	}
	if int(v.Int) == len(vals)-1 {
		l.notePermits(vals)
		return OutcomeTaken, nil
	}
	return OutcomeServerError, errUnexpectedReply
}

// readFenceWrite: the write round's 1, 0 (a key does not hold our token)
// or 2 (no counter).
func readFenceWrite(l *lessons, tok *token, i int, vals []resp.Value) (Outcome, error) {
	if v := &vals[0]; v.Type == resp.TypeInteger && v.Int == 2 {
		return OutcomeUnfenced, nil
	}
	return readVote(l, tok, i, vals)
}
