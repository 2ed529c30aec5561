package resp

// Limits bound what a decoder accepts, so that a hostile or broken peer
// cannot make it reserve unbounded memory. A zero (or negative) field means
// its default. A reply that exceeds a limit is a [*ProtocolError].
//
// Memory is never reserved from a length read off the wire: the decoder
// grows only as bytes arrive, so a header such as "$536870912\r\n" followed
// by nothing costs nothing beyond the bytes received.
type Limits struct {
	// MaxBulk is the largest payload of a bulk string, bulk error or
	// verbatim string. Default 512 MiB, Redis's proto-max-bulk-len.
	MaxBulk int
	// MaxElems is the largest count in an aggregate header, as written on
	// the wire (pairs for maps and attributes). Default 1<<20.
	MaxElems int
	// MaxDepth is the deepest nesting of aggregates: 1 allows a flat array
	// but no array inside it. Default 32.
	MaxDepth int
	// MaxLine is the longest simple string, simple error, double or big
	// number, CRLF excluded. Default 64 KiB.
	MaxLine int
	// MaxValues is the largest number of Values (nodes) in one reply.
	// Default 1<<21 (a Value is 56 bytes on 64-bit platforms).
	MaxValues int
	// MaxReply is the largest encoded size of one reply, in bytes.
	// Default 1 GiB.
	MaxReply int
}

// The defaults of [Limits].
const (
	DefaultMaxBulk   = 512 << 20
	DefaultMaxElems  = 1 << 20
	DefaultMaxDepth  = 32
	DefaultMaxLine   = 64 << 10
	DefaultMaxValues = 1 << 21
	DefaultMaxReply  = 1 << 30
)

func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

// defaultLimits is Limits{}.withDefaults(), computed once.
var defaultLimits = Limits{}.withDefaults()

// withDefaults returns l with its zero fields set to their defaults.
func (l Limits) withDefaults() Limits {
	return Limits{
		MaxBulk:   orDefault(l.MaxBulk, DefaultMaxBulk),
		MaxElems:  orDefault(l.MaxElems, DefaultMaxElems),
		MaxDepth:  orDefault(l.MaxDepth, DefaultMaxDepth),
		MaxLine:   orDefault(l.MaxLine, DefaultMaxLine),
		MaxValues: orDefault(l.MaxValues, DefaultMaxValues),
		MaxReply:  orDefault(l.MaxReply, DefaultMaxReply),
	}
}

// orDefaults returns the Limits to decode with: l with its zero fields set
// to their defaults, stored in *tmp (a variable of the caller, so nothing
// escapes to the heap), or the shared defaults when l is all zero.
func (l *Limits) orDefaults(tmp *Limits) *Limits {
	if *l == (Limits{}) {
		return &defaultLimits
	}
	*tmp = l.withDefaults()
	return tmp
}
