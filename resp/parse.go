package resp

import (
	"bytes"
	"strconv"
)

// Parse decodes exactly one reply from the start of b. It appends the
// reply's Values, a flat pre-order tree (see [Value]), to dst and returns
// the extended slice and the number of bytes of b the reply took; pass
// dst[:0] to reuse a slice. The Bytes of the returned Values alias b
// (zero-copy): they are valid as long as b is, and change if b does.
//
// If b is a valid strict prefix of a reply, Parse returns dst, 0 and
// [ErrIncomplete]. If b cannot start a valid reply, or the reply exceeds
// lim, it returns dst, 0 and a [*ProtocolError] whose Offset indexes b. On
// error the elements of dst beyond len(dst) may have been overwritten.
//
// An attribute ('|') is returned together with the value it annotates, as
// one reply: the attribute's subtree first, then the value. This is the
// only case where a reply holds more than one top-level Value.
//
// Parse accepts only the canonical form of integers and lengths: no '+'
// sign, no leading zero, no "-0"; -1 is the only negative length, and only
// for bulk strings and arrays (the RESP2 nulls). Lines must end in "\r\n"
// and must not contain a lone '\r' or '\n'. So for any reply Parse accepts,
// [AppendValues] reproduces the consumed bytes exactly.
//
// Parse does not allocate beyond growing dst, except for a double longer
// than 32 bytes (one temporary string) or beyond float64's range (the two
// of strconv's range error), and for nesting deeper than [DefaultMaxDepth]
// when lim allows it (a stack of open aggregates). It is safe for
// concurrent use.
func Parse(dst []Value, b []byte, lim Limits) (vals []Value, n int, err error) {
	var tmp Limits
	l := lim.orDefaults(&tmp)
	if len(b) > 0 && isScalar(Type(b[0])) {
		// A scalar needs none of the machinery for nesting.
		dst = append(dst, Value{})
		next, err := parseOne(&dst[len(dst)-1], b, l)
		if err != nil {
			return dst[:len(dst)-1], 0, err
		}
		return dst, next, nil
	}
	var stk [DefaultMaxDepth + 1]frame // no allocation up to the default depth
	p := parser{vals: dst, base: len(dst)}
	_, _, err = p.run(b, l, p.start(stk[:0]))
	if err != nil {
		return dst, 0, err
	}
	return p.vals, p.pos, nil
}

// frame is an aggregate still waiting for children.
type frame struct {
	idx  int // index in vals of the aggregate; -1 for the top level
	left int // number of children not yet started
}

// parser is the resumable state of the decoding of one reply: run may stop
// with ErrIncomplete and be called again, with the same stack and a longer
// b holding the same bytes first, to go on where it stopped.
type parser struct {
	vals []Value
	base int // len(vals) at the start of the reply
	pos  int // offset in b of the next value to decode

	// lineAt and lineScan remember that b[lineAt:lineScan] holds no '\n',
	// so that a long line arriving in pieces is scanned once.
	lineAt, lineScan int
}

// start resets p for a new reply and returns the initial stack built on stk.
func (p *parser) start(stk []frame) []frame {
	p.pos = 0
	p.lineAt, p.lineScan = -1, 0
	return append(stk[:0], frame{idx: -1, left: 1})
}

// run decodes values from b[p.pos:] until the reply is complete (nil error),
// more bytes are needed (ErrIncomplete, and need is the smallest len(b) that
// can make progress), or the input is invalid.
func (p *parser) run(b []byte, lim *Limits, stack []frame) (_ []frame, need int, err error) {
	for {
		// Close the aggregates whose children are all decoded.
		for {
			f := &stack[len(stack)-1]
			if f.left > 0 {
				break
			}
			if f.idx < 0 {
				return stack, 0, nil
			}
			p.vals[f.idx].Size = len(p.vals) - f.idx - 1
			stack = stack[:len(stack)-1]
		}
		if len(p.vals)-p.base >= lim.MaxValues {
			return stack, 0, protoErr(p.pos, "too many values in reply")
		}
		if len(p.vals) == cap(p.vals) {
			p.vals = append(p.vals, Value{})[:len(p.vals)]
		}
		v := &p.vals[:len(p.vals)+1][len(p.vals)]
		next, kids, need, err := p.one(v, b, lim)
		if err != nil {
			return stack, need, err
		}
		if next > lim.MaxReply {
			return stack, 0, protoErr(p.pos, "reply exceeds MaxReply")
		}
		if kids >= 0 && len(stack) > lim.MaxDepth {
			return stack, 0, protoErr(p.pos, "aggregates nested deeper than MaxDepth")
		}
		if v.Type != TypeAttribute {
			// An attribute annotates the value after it and does not count
			// as an element of its parent.
			stack[len(stack)-1].left--
		}
		p.vals = p.vals[:len(p.vals)+1]
		p.pos = next
		if kids > 0 {
			stack = append(stack, frame{idx: len(p.vals) - 1, left: kids})
		}
	}
}

// one decodes the value starting at b[p.pos] into *v: a whole scalar, or
// the header of an aggregate, whose kids children (-1 for a scalar) follow.
// next is the offset after it. On error *v may have been written.
func (p *parser) one(v *Value, b []byte, lim *Limits) (next, kids, need int, err error) {
	i := p.pos
	if i >= len(b) {
		return 0, 0, i + 1, ErrIncomplete
	}
	t := Type(b[i])
	*v = Value{Type: t}
	kids = -1
	switch t {
	case TypeSimpleString, TypeError:
		end, need, err := p.line(b, i+1, lim)
		if err != nil {
			return 0, 0, need, err
		}
		v.Bytes = b[i+1 : end : end]
		return end + 2, kids, 0, nil

	case TypeInteger:
		n, end, need, err := parseInt(b, i+1)
		if err != nil {
			return 0, 0, need, err
		}
		v.Int = n
		return end, kids, 0, nil

	case TypeBulk, TypeBulkError, TypeVerbatim:
		n, end, need, err := parseInt(b, i+1)
		if err != nil {
			return 0, 0, need, err
		}
		if n < 0 {
			if n == -1 && t == TypeBulk {
				v.Null = true
				return end, kids, 0, nil
			}
			return 0, 0, 0, protoErr(i+1, "invalid negative length")
		}
		if n > int64(lim.MaxBulk) {
			return 0, 0, 0, protoErr(i+1, "bulk length exceeds MaxBulk")
		}
		if n > int64(lim.MaxReply-end-2) {
			return 0, 0, 0, protoErr(i+1, "reply exceeds MaxReply")
		}
		stop := end + int(n)
		if t == TypeVerbatim {
			if n < 4 {
				return 0, 0, 0, protoErr(i+1, "verbatim string shorter than its format")
			}
			if end+3 < len(b) && b[end+3] != ':' {
				return 0, 0, 0, protoErr(end+3, "verbatim string without ':' after its format")
			}
		}
		if stop+2 > len(b) {
			// Check what has arrived of the terminator.
			if stop < len(b) && b[stop] != '\r' {
				return 0, 0, 0, protoErr(stop, "bulk payload not followed by CRLF")
			}
			return 0, 0, stop + 2, ErrIncomplete
		}
		if b[stop] != '\r' {
			return 0, 0, 0, protoErr(stop, "bulk payload not followed by CRLF")
		}
		if b[stop+1] != '\n' {
			return 0, 0, 0, protoErr(stop+1, "bulk payload not followed by CRLF")
		}
		v.Bytes = b[end:stop:stop]
		return stop + 2, kids, 0, nil

	case TypeArray, TypeMap, TypeSet, TypePush, TypeAttribute:
		n, end, need, err := parseInt(b, i+1)
		if err != nil {
			return 0, 0, need, err
		}
		if n < 0 {
			if n == -1 && t == TypeArray {
				v.Null = true
				return end, kids, 0, nil
			}
			return 0, 0, 0, protoErr(i+1, "invalid negative count")
		}
		if n > int64(lim.MaxElems) {
			return 0, 0, 0, protoErr(i+1, "aggregate count exceeds MaxElems")
		}
		v.Int = n
		kids = int(n)
		if t == TypeMap || t == TypeAttribute {
			kids *= 2
		}
		return end, kids, 0, nil

	case TypeNull:
		if err := expect(b, i+1, "\r\n"); err != nil {
			return 0, 0, i + 3, err
		}
		v.Null = true
		return i + 3, kids, 0, nil

	case TypeBoolean:
		if i+1 < len(b) {
			switch b[i+1] {
			case 't':
				v.Int = 1
			case 'f':
			default:
				return 0, 0, 0, protoErr(i+1, "boolean neither 't' nor 'f'")
			}
		}
		if err := expect(b, i+2, "\r\n"); err != nil {
			return 0, 0, i + 4, err
		}
		return i + 4, kids, 0, nil

	case TypeDouble:
		end, need, err := p.line(b, i+1, lim)
		if err != nil {
			return 0, 0, need, err
		}
		s := b[i+1 : end : end]
		f, ok := parseDouble(s)
		if !ok {
			return 0, 0, 0, protoErr(i+1, "invalid double")
		}
		v.Bytes, v.Float = s, f
		return end + 2, kids, 0, nil

	case TypeBigNumber:
		end, need, err := p.line(b, i+1, lim)
		if err != nil {
			return 0, 0, need, err
		}
		s := b[i+1 : end : end]
		if !validBigNumber(s) {
			return 0, 0, 0, protoErr(i+1, "invalid big number")
		}
		v.Bytes = s
		return end + 2, kids, 0, nil
	}
	return 0, 0, 0, protoErr(i, "unknown type byte 0x"+strconv.FormatUint(uint64(t), 16))
}

// expect checks that b[i:] starts with want, or is a prefix of it
// (ErrIncomplete).
func expect(b []byte, i int, want string) error {
	for k := 0; k < len(want); k++ {
		if i+k >= len(b) {
			return ErrIncomplete
		}
		if b[i+k] != want[k] {
			return protoErr(i+k, "expected CRLF")
		}
	}
	return nil
}

// parseOne decodes the Value at the start of b into *v, a whole scalar or
// the header of an aggregate, and returns the bytes consumed; on error *v
// may have been written. It is the general decoder without a stack: the short
// replies of lock commands have their own faster path, decodeShort. lim
// must have its defaults applied.
func parseOne(v *Value, b []byte, lim *Limits) (int, error) {
	var p parser
	p.lineAt = -1
	next, _, _, err := p.one(v, b, lim)
	if err != nil {
		return 0, err
	}
	if next > lim.MaxReply {
		return 0, protoErr(0, "reply exceeds MaxReply")
	}
	return next, nil
}

// isScalar reports whether a reply starting with type byte t is a single
// Value (not an aggregate or an attribute).
func isScalar(t Type) bool {
	switch t {
	case TypeSimpleString, TypeError, TypeInteger, TypeBulk, TypeNull, TypeBoolean,
		TypeDouble, TypeBigNumber, TypeBulkError, TypeVerbatim:
		return true
	}
	return false
}

// line finds the CRLF that ends the line starting at b[start] and returns
// the index of its '\r'. The line must be at most lim.MaxLine bytes and hold
// no other '\r' or '\n'.
func (p *parser) line(b []byte, start int, lim *Limits) (end, need int, err error) {
	from := start
	if p.lineAt == start && p.lineScan > from {
		from = p.lineScan
	}
	limit := start + lim.MaxLine + 2 // the '\n' must be before this index
	hi := min(len(b), limit)
	if from > hi {
		from = hi
	}
	k := bytes.IndexByte(b[from:hi], '\n')
	if k < 0 {
		if len(b) >= limit {
			return 0, 0, protoErr(start, "line exceeds MaxLine")
		}
		p.lineAt, p.lineScan = start, len(b)
		return 0, len(b) + 1, ErrIncomplete
	}
	nl := from + k
	if nl == start || b[nl-1] != '\r' {
		return 0, 0, protoErr(nl, "line feed without carriage return")
	}
	if j := bytes.IndexByte(b[start:nl-1], '\r'); j >= 0 {
		return 0, 0, protoErr(start+j, "carriage return inside line")
	}
	return nl - 1, 0, nil
}
