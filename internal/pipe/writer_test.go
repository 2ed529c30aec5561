package pipe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestWriterLeavesOthersWriting: the writer goroutine clears
// socket.writing only after a write it was handed (a rest or a flush).
// A rest leaves its buffer behind, empty; a later wake-up of the writer
// while a driver's write holds writing must leave it set, or the writer
// would write its queue beside the driver's write, and the commands could
// reach the master out of the order in which their replies are matched.
// (The writer cleared it at every wake-up after a socket's first rest.)
func TestWriterLeavesOthersWriting(t *testing.T) {
	conns, _ := pollerConns(t, 1)
	c := conns[0]
	doT(t, c, "PING")
	c.mu.Lock()
	s := c.sock
	s.rest = make([]byte, 0, 64) // what a rest the writer wrote leaves behind
	s.writing = true             // a driver's write in progress
	c.mu.Unlock()
	s.wakeWriter()
	assert.Never(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !s.writing
	}, 200*time.Millisecond, time.Millisecond, "the writer cleared a write it was not handed")
	c.mu.Lock()
	s.writing = false
	c.mu.Unlock()
	assert.Equal(t, "PONG", doT(t, c, "PING"))
}
