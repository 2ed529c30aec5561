package pipe

// fifo is a growable ring of requests in the order they were written: the
// order their replies will arrive in. It is not safe for concurrent use: the
// Conn's mutex guards it. It allocates only when it grows past its largest
// size so far.
type fifo struct {
	buf        []*Request // len(buf) is a power of two
	head, size int
}

func (q *fifo) len() int { return q.size }

func (q *fifo) push(r *Request) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.size)&(len(q.buf)-1)] = r
	q.size++
}

// peek returns the oldest request without removing it, or nil when empty.
func (q *fifo) peek() *Request {
	if q.size == 0 {
		return nil
	}
	return q.buf[q.head]
}

// pop removes and returns the oldest request, or nil when empty.
func (q *fifo) pop() *Request {
	if q.size == 0 {
		return nil
	}
	r := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.size--
	return r
}

// unwaited reports whether nobody waits for any request in q: each was
// abandoned by its caller, or sent by SendForget.
func (q *fifo) unwaited() bool {
	for i := range q.size {
		r := q.buf[(q.head+i)&(len(q.buf)-1)]
		if !r.forget && r.state.Load() != stateAbandoned {
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
	buf := make([]*Request, n)
	for i := 0; i < q.size; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}
