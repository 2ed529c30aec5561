package pipe

import (
	"context"
	"strconv"

	"github.com/volleylock/volley/resp"
)

// Do sends one command and waits for its reply: the convenient, allocating
// API for everything off the hot path. Arguments may be string, []byte, int
// or int64; anything else is an error.
//
// The returned values are the caller's (they do not alias any buffer of the
// Conn). A server error reply is returned both as the value and as a
// *resp.ServerError; a connection failure or ctx's end as an *Error.
func (c *Conn) Do(ctx context.Context, args ...any) ([]resp.Value, error) {
	r := NewRequest()
	var err error
	if r.Cmd, err = appendArgs(r.Cmd[:0], args); err != nil {
		r.Release()
		return nil, err
	}
	c.Send(r, nil)
	if err, owned := c.wait(ctx, r); err != nil {
		if owned { // else the Conn recycles it; it may already be someone else's
			r.Release()
		}
		return nil, err
	}
	vals := make([]resp.Value, len(r.vals))
	copy(vals, r.vals)
	// r's bytes lie in r.buf back to back, in value order (copyReply).
	buf := append([]byte(nil), r.buf...)
	off := 0
	for i := range vals {
		if b := vals[i].Bytes; b != nil {
			vals[i].Bytes = buf[off : off+len(b) : off+len(b)]
			off += len(b)
		}
	}
	r.Release()
	if len(vals) > 0 {
		if err := vals[0].Err(); err != nil {
			return vals, err
		}
	}
	return vals, nil
}

func appendArgs(dst []byte, args []any) ([]byte, error) {
	dst = resp.AppendArrayHeader(dst, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			dst = resp.AppendBulkString(dst, v)
		case []byte:
			dst = resp.AppendBulk(dst, v)
		case int:
			dst = resp.AppendBulkInt(dst, int64(v))
		case int64:
			dst = resp.AppendBulkInt(dst, v)
		default:
			return dst, &argError{pos: i}
		}
	}
	return dst, nil
}

type argError struct{ pos int }

func (e *argError) Error() string {
	return "conn: Do: argument " + strconv.Itoa(e.pos) + " is not a string, []byte, int or int64"
}
