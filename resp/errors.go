package resp

import (
	"errors"
	"strconv"
)

// ErrIncomplete is returned by [Parse] when its input is a valid strict prefix
// of a reply: more bytes are needed, nothing is wrong with the stream. It is
// never returned by [Reader.ReadReply], which reads more bytes instead.
var ErrIncomplete = errors.New("resp: incomplete frame")

// ErrProtocol is the sentinel every [*ProtocolError] matches with [errors.Is].
var ErrProtocol = errors.New("resp: protocol error")

// ProtocolError reports bytes that are not valid RESP, or that exceed the
// [Limits]. After a ProtocolError the position of the next reply in the
// stream is unknown: the connection should be closed.
type ProtocolError struct {
	// Offset is the index of the offending byte. For [Parse] it is an index
	// into its input; for a [Reader] it counts bytes from the first byte read
	// after [NewReader] or [Reader.Reset].
	Offset int
	// Reason is a short static description, such as "invalid digit".
	Reason string
}

// Error returns "resp: protocol error at offset N: reason".
func (e *ProtocolError) Error() string {
	return "resp: protocol error at offset " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Unwrap returns [ErrProtocol], so errors.Is(err, ErrProtocol) holds.
func (e *ProtocolError) Unwrap() error { return ErrProtocol }

// protoErr builds the error value of the slow path.
func protoErr(off int, reason string) error {
	return &ProtocolError{Offset: off, Reason: reason}
}

// ServerError is an error reply ('-' simple error or '!' bulk error) sent by
// the server, such as "NOSCRIPT No matching script. Please use EVAL.".
// It is a reply, not a failure of the connection.
type ServerError struct {
	// Prefix is the first word of the error: "ERR", "WRONGTYPE", "NOSCRIPT"...
	Prefix string
	// Message is the whole error text as the server sent it, Prefix included.
	Message string
}

// Error returns the whole error text as the server sent it.
func (e *ServerError) Error() string { return e.Message }
