package pipe

import "github.com/volleylock/volley/resp"

// entry is one command written to a socket and owed its reply: a
// Request's, or a driven round's slot written without one (a ticket, r
// nil; see ticket.go).
type entry struct {
	r *Request // nil for a ticket

	// A ticket's: its round (b, at b's generation gen) and slot, its
	// reply check, when it was written (a monoNow reading), and whether
	// nobody reads its answer (forget: a command that goes with the
	// slot's, see Batch.QueueWith). A ticket that asked for replay has
	// its command in the Conn's replay log (see replayLog), at logAt for
	// logLen bytes, until replayBy (a monoNow reading; 0 for none).
	b        *Batch
	check    func(reply []resp.Value) bool
	sent     int64
	replayBy int64
	logAt    int64
	logLen   int32
	slot     int32
	gen      uint32
	forget   bool
}

// sentAt is when e's command was written (a monoNow reading).
func (e *entry) sentAt() int64 {
	if e.r != nil {
		return e.r.sent
	}
	return e.sent
}

// waited reports whether someone waits for e's answer.
func (e *entry) waited() bool {
	if e.r != nil {
		return e.r.waited()
	}
	return !e.forget && e.b.gen.Load() == e.gen
}

// fifo is a growable ring of what a socket owes replies to, in the order
// the commands were written: the order their replies will arrive in. It
// is not safe for concurrent use: the Conn's mutex guards it. It
// allocates only when it grows past its largest size so far.
type fifo struct {
	buf        []entry // len(buf) is a power of two
	head, size int
}

func (q *fifo) len() int { return q.size }

// push adds a Request's entry.
func (q *fifo) push(r *Request) { q.pushEntry(entry{r: r}) }

func (q *fifo) pushEntry(e entry) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.size)&(len(q.buf)-1)] = e
	q.size++
}

// oldestSent returns when the oldest entry was written; false when q is
// empty.
func (q *fifo) oldestSent() (int64, bool) {
	if q.size == 0 {
		return 0, false
	}
	return q.buf[q.head].sentAt(), true
}

// pop removes and returns the oldest entry; false when q is empty.
func (q *fifo) pop() (entry, bool) {
	if q.size == 0 {
		return entry{}, false
	}
	e := q.buf[q.head]
	q.buf[q.head] = entry{}
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.size--
	return e, true
}

// unwaited reports whether nobody waits for any entry in q: each was
// abandoned by its caller, sent by SendForget, or is a ticket of a round
// that has ended.
func (q *fifo) unwaited() bool {
	for i := range q.size {
		if q.buf[(q.head+i)&(len(q.buf)-1)].waited() {
			return false
		}
	}
	return true
}

func (q *fifo) grow() {
	n := len(q.buf) * 2
	if n == 0 {
		n = 64
	}
	buf := make([]entry, n)
	for i := 0; i < q.size; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}
