package resp

import (
	"errors"
	"io"
)

// DefaultReaderSize is the initial buffer size of a [Reader] when
// [NewReader] is given a size of 0.
const DefaultReaderSize = 4096

// keepVals is the largest cap of the Value slice a Reader keeps between
// replies; a larger one, made for a huge reply, is dropped.
const keepVals = 4096

// maxEmptyReads is how many successive (0, nil) reads the Reader accepts
// before it gives up with io.ErrNoProgress, as bufio does.
const maxEmptyReads = 100

// Reader decodes replies from an io.Reader through its own growable buffer.
// It decodes with the same code as [Parse], with the same rules and
// [Limits], and resumes where it stopped when a reply arrives in pieces, so
// a large reply costs linear time.
//
// Buffer policy: the buffer starts at the size given to [NewReader]. It
// doubles when it is full and the reply is not complete, so it never holds
// more than about twice the bytes received, however large a length the
// reply declares; [Limits].MaxReply bounds it. When a reply has made it grow
// beyond max(4*size, 64 KiB), the next call to ReadReply (or Reset) replaces
// it by a buffer of the initial size, so one huge reply does not pin memory
// for the life of the connection. The Value slice is likewise dropped when
// its capacity exceeds 4096 Values.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	rd    io.Reader
	buf   []byte // buf[r:w] is buffered and not yet returned
	r, w  int
	size  int // initial buffer size
	lim   Limits
	p     parser
	stack []frame
	off   int   // stream offset of buf[r]
	rerr  error // read error to report once the buffered bytes are used
	perr  error // sticky protocol error
}

// NewReader returns a Reader that reads from rd with an initial buffer of
// size bytes (0 or less means [DefaultReaderSize]) and the given limits.
// The Reader owns its buffers; rd is only called through Read.
func NewReader(rd io.Reader, size int, lim Limits) *Reader {
	if size <= 0 {
		size = DefaultReaderSize
	}
	return &Reader{
		rd:    rd,
		buf:   make([]byte, size),
		size:  size,
		lim:   lim.withDefaults(),
		stack: make([]frame, 0, 16),
	}
}

// ReadReply reads one whole reply and returns its Values, a flat pre-order
// tree as returned by [Parse]. The returned slice and every Bytes in it
// point into the Reader's buffers, and the data are valid only until the
// next call to ReadReply or Reset: copy what must outlive it. Once its
// buffers have grown to fit the replies, ReadReply does not allocate.
//
// At a clean boundary between replies, when rd reports io.EOF, ReadReply
// returns io.EOF; when the stream ends inside a reply, io.ErrUnexpectedEOF.
// Other read errors are returned as they are, after the bytes read before
// them are used; the call may be retried. A [*ProtocolError] (invalid
// bytes, or a reply beyond the Limits) is sticky: every later call returns
// it, until Reset, since the stream position is lost. An error reply from
// the server is not an error here: it is a Value (see [Value.Err]).
func (r *Reader) ReadReply() ([]Value, error) {
	if r.perr != nil {
		return nil, r.perr
	}
	r.recycle()
	if cap(r.p.vals) == 0 {
		r.p.vals = make([]Value, 0, 16)
	}
	if r.w > r.r {
		// A reply whole in the buffer that is one scalar needs no stack;
		// the short replies of lock commands not even the general decoder.
		v, b := &r.p.vals[:1][0], r.buf[r.r:r.w]
		n := decodeShort(v, b, r.lim.MaxLine, r.lim.MaxReply)
		if n == 0 && isScalar(Type(b[0])) {
			n, _ = parseOne(v, b, &r.lim) // on error, the general path below says which
		}
		if n > 0 {
			r.p.vals = r.p.vals[:1]
			r.r += n
			r.off += n
			return r.p.vals, nil
		}
	}
	r.p.vals = r.p.vals[:0]
	r.stack = r.p.start(r.stack)
	need := 1
	for {
		if r.w > r.r {
			var err error
			r.stack, need, err = r.p.run(r.buf[r.r:r.w], &r.lim, r.stack)
			if err == nil {
				n := r.p.pos
				r.r += n
				r.off += n
				return r.p.vals, nil
			}
			if err != ErrIncomplete {
				return nil, r.protocolError(err)
			}
		}
		moved, err := r.fill(need)
		if moved {
			// The bytes moved: the views decoded so far are stale.
			r.p.vals = r.p.vals[:0]
			r.stack = r.p.start(r.stack)
		}
		if err == io.ErrUnexpectedEOF {
			// The stream ended inside a reply. If the bytes that did arrive
			// are invalid, say so, as Parse would on the same bytes.
			if _, _, perr := r.p.run(r.buf[r.r:r.w], &r.lim, r.stack); perr != nil && perr != ErrIncomplete {
				return nil, r.protocolError(perr)
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

// protocolError makes err, a *ProtocolError of the parser, sticky, with its
// offset counted from the start of the stream.
func (r *Reader) protocolError(err error) error {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		err = &ProtocolError{Offset: r.off + pe.Offset, Reason: pe.Reason}
	}
	r.perr = err
	return err
}

// fill reads until the Reader buffers at least need bytes of the current
// reply. It reports whether it moved the buffered bytes.
func (r *Reader) fill(need int) (moved bool, err error) {
	empty := 0
	for r.w-r.r < need {
		if r.rerr != nil {
			err := r.rerr
			r.rerr = nil
			if err == io.EOF {
				if r.w > r.r {
					return moved, io.ErrUnexpectedEOF
				}
				return moved, io.EOF
			}
			return moved, err
		}
		if r.w == len(r.buf) {
			if r.r > 0 {
				copy(r.buf, r.buf[r.r:r.w])
				r.w -= r.r
				r.r = 0
			} else {
				nb := make([]byte, 2*len(r.buf))
				copy(nb, r.buf[:r.w])
				r.buf = nb
			}
			moved = true
		}
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			return moved, errors.New("resp: reader returned invalid count")
		}
		r.w += n
		if err != nil {
			r.rerr = err
		} else if n == 0 {
			empty++
			if empty >= maxEmptyReads {
				return moved, io.ErrNoProgress
			}
		}
	}
	return moved, nil
}

// recycle applies the buffer policy at a reply boundary.
func (r *Reader) recycle() {
	if r.r == r.w {
		r.r, r.w = 0, 0
	}
	if len(r.buf) > max(4*r.size, 64<<10) && r.w-r.r <= r.size {
		nb := make([]byte, r.size)
		r.w = copy(nb, r.buf[r.r:r.w])
		r.r = 0
		r.buf = nb
	}
	if cap(r.p.vals) > keepVals {
		r.p.vals = nil
	}
}

// Buffered returns the number of bytes read from the underlying reader and
// not yet consumed by a returned reply.
func (r *Reader) Buffered() int { return r.w - r.r }

// Reset discards any buffered data and errors and makes r read from rd,
// keeping the limits and (within the buffer policy) the buffers. Views
// returned by an earlier ReadReply become invalid.
func (r *Reader) Reset(rd io.Reader) {
	r.rd = rd
	r.r, r.w, r.off = 0, 0, 0
	r.rerr, r.perr = nil, nil
	r.recycle()
}
