package resp

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScalarFastPathAgrees checks parseScalar, the fast path for one-Value
// replies, against the general decoder (parser.one) on random short inputs
// built from the bytes that matter: every result, consumed length and error
// offset must be the same.
func TestScalarFastPathAgrees(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const alphabet = "+-:$_#,(!=\r\n0123456789-OKabxt"
	heads := []byte{'+', '-', ':', '$', '_', '#', ',', '(', '!', '='}
	lims := []Limits{{}, {MaxLine: 3, MaxBulk: 4, MaxReply: 6}}
	b := make([]byte, 0, 40)
	for i := 0; i < 300_000; i++ {
		b = append(b[:0], heads[rng.IntN(len(heads))])
		for n := rng.IntN(24); n > 0; n-- {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		if rng.IntN(3) == 0 { // often end a plausible frame
			b = append(b, '\r', '\n')
		}
		lim := lims[i%len(lims)].withDefaults()

		var fast Value
		fastN, fastErr := parseScalar(&fast, b, &lim)

		p := parser{lineAt: -1}
		slow, slowN, _, _, slowErr := p.one(b, &lim)
		if slowErr == nil && slowN > lim.MaxReply {
			slowErr, slowN = protoErr(0, "reply exceeds MaxReply"), 0
		}
		if slowErr != nil {
			slowN, slow = 0, Value{}
		}
		require.Equal(t, slowErr, fastErr, "input %q", b)
		require.Equal(t, slowN, fastN, "input %q", b)
		require.Equal(t, slow, fast, "input %q", b)
	}
}
