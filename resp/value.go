package resp

import "bytes"

// Type is the first byte of a RESP value, which tells its type.
type Type byte

// The RESP2 types (the first five) and the RESP3 types.
const (
	TypeSimpleString Type = '+'
	TypeError        Type = '-'
	TypeInteger      Type = ':'
	TypeBulk         Type = '$'
	TypeArray        Type = '*'
	TypeNull         Type = '_'
	TypeBoolean      Type = '#'
	TypeDouble       Type = ','
	TypeBigNumber    Type = '('
	TypeBulkError    Type = '!'
	TypeVerbatim     Type = '='
	TypeMap          Type = '%'
	TypeSet          Type = '~'
	TypePush         Type = '>'
	TypeAttribute    Type = '|'
)

// String returns the name of the type, such as "bulk string", or "unknown".
// The returned string is static.
func (t Type) String() string {
	switch t {
	case TypeSimpleString:
		return "simple string"
	case TypeError:
		return "simple error"
	case TypeInteger:
		return "integer"
	case TypeBulk:
		return "bulk string"
	case TypeArray:
		return "array"
	case TypeNull:
		return "null"
	case TypeBoolean:
		return "boolean"
	case TypeDouble:
		return "double"
	case TypeBigNumber:
		return "big number"
	case TypeBulkError:
		return "bulk error"
	case TypeVerbatim:
		return "verbatim string"
	case TypeMap:
		return "map"
	case TypeSet:
		return "set"
	case TypePush:
		return "push"
	case TypeAttribute:
		return "attribute"
	}
	return "unknown"
}

// IsAggregate reports whether values of type t have children: array, map,
// set, push and attribute.
func (t Type) IsAggregate() bool {
	switch t {
	case TypeArray, TypeMap, TypeSet, TypePush, TypeAttribute:
		return true
	}
	return false
}

// Value is one node of a decoded reply. A reply is a tree stored flat, in
// pre-order, in a []Value: an aggregate is followed by the Values of its
// subtree, so its first child is at i+1 and its next sibling at i+1+Size.
//
// Bytes of a Value returned by [Parse] alias Parse's input; Bytes of a Value
// returned by [Reader.ReadReply] alias the Reader's buffer and are valid only
// until the next call to ReadReply. Bytes never has spare capacity
// (cap(Bytes) == len(Bytes)), so appending to it never writes into the
// buffer it aliases.
type Value struct {
	// Type is the type byte of the value.
	Type Type
	// Null is set for "$-1" and "*-1" (the RESP2 nulls, Type TypeBulk or
	// TypeArray) and for the RESP3 null "_" (Type TypeNull).
	Null bool
	// Bytes is the payload of simple strings, errors, bulk strings, bulk
	// errors, big numbers and verbatim strings (for verbatim, the whole
	// payload, "txt:" prefix included: see [Value.Verbatim]), and the raw
	// text of a double. It is nil for nulls and for the other types.
	Bytes []byte
	// Int is the value of an integer, 1 or 0 for a boolean, and the number of
	// elements for an aggregate (for maps and attributes, the number of
	// key/value pairs).
	Int int64
	// Float is the value of a double (±Inf and NaN included).
	Float float64
	// Size is, for an aggregate, the number of Values that follow it and
	// belong to its subtree; 0 for scalars and null or empty aggregates.
	Size int
}

// IsError reports whether v is a simple error ('-') or a bulk error ('!').
func (v *Value) IsError() bool {
	return v.Type == TypeError || v.Type == TypeBulkError
}

// ErrorPrefix returns the first word of an error reply ("ERR", "WRONGTYPE",
// "NOSCRIPT"...), or nil if v is not an error. The result aliases v.Bytes;
// it does not allocate.
func (v *Value) ErrorPrefix() []byte {
	if !v.IsError() || v.Null {
		return nil
	}
	b := v.Bytes
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		return b[:i:i]
	}
	return b
}

// Err returns nil if v is not an error reply, else a new [*ServerError]
// holding copies of the error text (it allocates; it does not alias v).
func (v *Value) Err() error {
	if !v.IsError() {
		return nil
	}
	return &ServerError{Prefix: string(v.ErrorPrefix()), Message: string(v.Bytes)}
}

// Verbatim splits a verbatim string into its three-byte format ("txt",
// "mkd") and its text. For any other type it returns nil and v.Bytes. Both
// results alias v.Bytes.
func (v *Value) Verbatim() (format, text []byte) {
	b := v.Bytes
	if v.Type != TypeVerbatim || len(b) < 4 || b[3] != ':' {
		return nil, b
	}
	return b[:3:3], b[4:]
}
