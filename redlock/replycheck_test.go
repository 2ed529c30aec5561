package redlock

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/resp"
)

// outOfStep plays a master whose answer to one permit attempt has a
// corrupted array length: "*2" with one element, so the reply swallows the
// next reply on the connection, and every later request would read the
// answer of the request after it. It then asks, through Inspect, whether
// that master holds a second permit the Client took after the corrupted
// answer, until it says so or for 2 s.
func outOfStep(t *testing.T) (ours bool) {
	servers, addrs := fakeMasters(t, 3)
	c := fakeClient(t, addrs, Config{MasterTimeout: 200 * time.Millisecond})
	first, err := c.Semaphore("first", 1)
	require.NoError(t, err)
	second, err := c.Semaphore("second", 1)
	require.NoError(t, err)

	servers[2].SetFault("EVALSHA", fakeredis.Fault{Raw: []byte("*2\r\n:0\r\n"), Times: 1})
	_, err = first.TryAcquire(bg, 5*time.Second)
	require.NoError(t, err, "masters 0 and 1 grant it")
	// Master 2's answer to this attempt (a grant: its token) completes the
	// corrupted one.
	p, err := second.TryAcquire(bg, 5*time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		vals, err := redistest.Do(addrs[2], "GET", "second:permit:0")
		return err == nil && !vals[0].Null
	}, 5*time.Second, time.Millisecond, "master 2 ran the second attempt")

	deadline := time.Now().Add(2 * time.Second)
	for {
		states, err := p.Inspect(bg)
		require.NoError(t, err)
		if st := states[2]; st.Err == nil && st.Ours || time.Now().After(deadline) {
			return st.Err == nil && st.Ours
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRepliesOutOfStepResetTheConnection: a reply whose shape cannot
// answer its command makes the connection start afresh, so the master's
// later answers go to the requests they answer. Without the reply checks
// (the broken variant) the master's replies stay out of step, and no
// answer of its is ever its request's again.
func TestRepliesOutOfStepResetTheConnection(t *testing.T) {
	t.Run("checked", func(t *testing.T) {
		assert.True(t, outOfStep(t), "master 2 answers its own requests again")
	})
	t.Run("unchecked", func(t *testing.T) {
		saved := answers
		t.Cleanup(func() { answers = saved })
		for i := range answers {
			answers[i].fits = nil
		}
		// Each request of master 2 reads the next one's reply (the conn
		// test shows one taken as another's answer); here Inspect's GET
		// reads its PTTL's, and its PTTL waits past MasterTimeout.
		assert.False(t, outOfStep(t), "without the checks, master 2's replies stay out of step")
	})
}

// TestReplyChecksAcceptEveryAnswer runs each shape's check on the answers
// its command gives, and on replies out of step.
func TestReplyChecksAcceptEveryAnswer(t *testing.T) {
	parse := func(raw string) []resp.Value {
		vals, err := resp.NewReader(strings.NewReader(raw), 0, resp.Limits{}).ReadReply()
		require.NoError(t, err, raw)
		return vals
	}
	holder := "*2\r\n$16\r\n0123456789abcdef\r\n:900\r\n"
	for _, tc := range []struct {
		shape answerShape
		fits  []string
		torn  []string
	}{
		{answerSet, []string{"+OK\r\n", "$-1\r\n", "_\r\n", "-ERR x\r\n"}, []string{":1\r\n", "*1\r\n:1\r\n"}},
		{answerLock, []string{":1\r\n", holder, "-NOSCRIPT x\r\n"}, []string{"*3\r\n$16\r\n0123456789abcdef\r\n:900\r\n:1\r\n", "*1\r\n$16\r\n0123456789abcdef\r\n", "+OK\r\n"}},
		{answerVote, []string{":1\r\n", ":0\r\n"}, []string{"*1\r\n:1\r\n", "$1\r\n1\r\n"}},
		{answerFenceLock, []string{"*2\r\n:1\r\n$2\r\n17\r\n", "*1\r\n:1\r\n", holder}, []string{"*3\r\n:1\r\n$2\r\n17\r\n:1\r\n", ":1\r\n"}},
		{answerFenceWrite, []string{":1\r\n", ":0\r\n", ":2\r\n"}, []string{"*1\r\n:1\r\n"}},
		{answerPermit, []string{"$5\r\ntoken\r\n", "*0\r\n", "*2\r\n:0\r\n:3\r\n"}, []string{"*2\r\n:0\r\n$5\r\ntoken\r\n", "*2\r\n:1\r\n:0\r\n", "*2\r\n:0\r\n*0\r\n", "$-1\r\n"}},
		{answerFencePermit, []string{"*2\r\n$5\r\ntoken\r\n$2\r\n17\r\n", "*2\r\n$5\r\ntoken\r\n$0\r\n\r\n", "*1\r\n:2\r\n"}, []string{"*3\r\n$5\r\ntoken\r\n$2\r\n17\r\n:1\r\n", "$5\r\ntoken\r\n"}},
	} {
		for _, raw := range tc.fits {
			assert.True(t, answers[tc.shape].fits(parse(raw)), "shape %d: %q", tc.shape, raw)
		}
		for _, raw := range tc.torn {
			assert.False(t, answers[tc.shape].fits(parse(raw)), "shape %d: %q", tc.shape, raw)
		}
	}
	assert.True(t, fitsVotes(parse("*3\r\n:1\r\n:0\r\n:1\r\n")))
	assert.True(t, fitsVotes(parse("-ERR x\r\n")))
	assert.False(t, fitsVotes(parse("*2\r\n:1\r\n$5\r\ntoken\r\n")))
	assert.False(t, fitsVotes(parse("*2\r\n:1\r\n:7\r\n")))
}
