package resp

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShortAgrees checks the fast path for short replies (decodeShort)
// against the general decoder (parseOne) on random short inputs built from
// the bytes that matter, under default, tight and negative limits: whenever
// it takes an input, its Value and length must be the general decoder's;
// when it declines, it must leave the Value alone.
func TestShortAgrees(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const alphabet = "+-:$_#,(!=\r\n\r\n0123456789-OKabxt"
	heads := []byte{'+', '-', ':', '$', '_', '#', ',', '(', '!', '=', '*'}
	lims := []Limits{{}, {MaxLine: 3, MaxBulk: 4, MaxReply: 6}, {MaxLine: 1, MaxReply: 4}, {MaxLine: 1}, {MaxReply: 5}, {MaxLine: -1, MaxReply: -5}}
	fast := map[string]func(v *Value, b []byte, lim Limits) int{
		"decodeShort": func(v *Value, b []byte, lim Limits) int { return decodeShort(v, b, lim.MaxLine, lim.MaxReply) },
	}
	taken := map[string]int{}
	b := make([]byte, 0, 40)
	for i := 0; i < 300_000; i++ {
		b = append(b[:0], heads[rng.IntN(len(heads))])
		switch rng.IntN(8) {
		case 0: // the replies the fast path exists for, and near misses
			b = append(b[:0], []string{"+OK\r\n", ":1\r\n", ":0\r\n", "$-1\r\n", ":-1\r\n", ":01\r\n", "+OK\r", "+OK\n\n", ":1\n\n"}[rng.IntN(9)]...)
		default:
			for n := rng.IntN(24); n > 0; n-- {
				b = append(b, alphabet[rng.IntN(len(alphabet))])
			}
		}
		if rng.IntN(3) == 0 { // often end a plausible frame
			b = append(b, '\r', '\n')
		}
		raw := lims[i%len(lims)]

		var want Value
		var tmp Limits
		wantN, wantErr := parseOne(&want, b, raw.orDefaults(&tmp))
		for name, f := range fast {
			sentinel := Value{Type: 'X', Int: 42}
			got := sentinel
			n := f(&got, b, raw)
			if n == 0 {
				require.Equal(t, sentinel, got, "%s wrote a Value it declined, input %q", name, b)
				continue
			}
			taken[name]++
			require.NoError(t, wantErr, "%s took %q which the general decoder rejects", name, b)
			require.Equal(t, wantN, n, "%s: input %q", name, b)
			require.Equal(t, want, got, "%s: input %q", name, b)
		}
	}
	for name := range fast {
		require.Greater(t, taken[name], 1000, "%s took too few inputs to test it", name)
	}
}

// TestLineEnd checks lineEnd against the obvious loop.
func TestLineEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20_000; i++ {
		b := make([]byte, rng.IntN(80))
		for k := range b {
			b[k] = "ab\r\n"[rng.IntN(4)]
			if rng.IntN(3) > 0 {
				b[k] = 'a'
			}
		}
		from := rng.IntN(len(b) + 1)
		want := len(b)
		for k := from; k < len(b); k++ {
			if b[k] == '\r' || b[k] == '\n' {
				want = k
				break
			}
		}
		require.Equal(t, want, lineEnd(b, from), "input %q from %d", b, from)
	}
}
