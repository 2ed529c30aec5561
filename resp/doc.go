// Package resp encodes and decodes RESP, the Redis serialization protocol,
// in both its versions: RESP2 and RESP3 (after HELLO 3).
//
// # Encoding
//
// The AppendX functions append one encoded value to a byte slice and return
// it, as [strconv.AppendInt] does: numbers are formatted straight into dst,
// and nothing is allocated when dst has room. A client sends commands as
// arrays of bulk strings ([AppendCommand], or [AppendArrayHeader] followed
// by [AppendBulk], [AppendBulkString] and [AppendBulkInt]); the other
// encoders serve fake servers and tests. [AppendValues] re-encodes decoded
// Values.
//
// # Decoding
//
// A reply is a tree, returned flat, in pre-order, as a []Value: an
// aggregate (array, map, set, push, attribute) is followed by its subtree,
// whose length is its Size. There are two entry points sharing one
// decoder:
//
//   - [Parse] decodes one reply from a byte slice, zero-copy, and tells a
//     frame that needs more bytes ([ErrIncomplete]) from an invalid one
//     ([*ProtocolError], matching [ErrProtocol]).
//   - [Reader] decodes replies from an io.Reader through its own buffer;
//     the Values it returns are valid until its next call.
//
// In the Reader, the replies of lock commands (+OK, $-1, :0, :1, short
// errors) take a fast path, checked against the general decoder by the
// tests.
//
// The decoder treats its input as hostile: every length is parsed with
// overflow checks and bounded by [Limits] before use, memory grows only as
// bytes arrive (never from a declared length), nesting is bounded, only
// canonical numbers are accepted, and no input makes it panic. An error
// reply from the server ("-ERR ...", "!...") is a Value, not a decoding
// error: see [Value.Err].
//
// # Memory
//
// Nothing in this package retains the slices passed to it. Slices returned
// by the Append functions and by Parse belong to the caller; the Bytes of
// Values returned by Parse alias their input. Values returned by
// [Reader.ReadReply] belong to the Reader and are overwritten by its next
// call. Parse, the Append functions and ReadReply do not
// allocate in steady state; alloc_test.go pins this.
//
// # Concurrency
//
// A [Reader] is not safe for concurrent use: one goroutine reads replies.
// Parse, the Append functions and the methods of [Value] and
// [Type] are pure functions of their arguments and are safe to call from
// any number of goroutines, provided the slices (and the Value) they are
// given are not being used concurrently. The package starts no goroutines and does no network I/O.
package resp
