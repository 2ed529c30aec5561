package resp

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseValueScalars: on every valid and invalid one-Value reply of the
// Parse tables, ParseValue returns what Parse returns.
func TestParseValueScalars(t *testing.T) {
	check := func(t *testing.T, in string, lim Limits) {
		b := []byte(in)
		if Type(b[0]).IsAggregate() {
			return
		}
		vals, wantN, wantErr := Parse(nil, b, lim)
		var v Value
		n, err := ParseValue(&v, b, lim)
		require.Equal(t, wantErr, err)
		require.Equal(t, wantN, n)
		if err == nil {
			require.Len(t, vals, 1)
			if math.IsNaN(v.Float) && math.IsNaN(vals[0].Float) {
				v.Float, vals[0].Float = 0, 0 // NaN != NaN
			}
			assert.Equal(t, vals[0], v)
		}
	}
	for _, tc := range parseOK {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.in, Limits{}) })
	}
	for _, tc := range parseBad {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.in, Limits{}) })
	}
	for _, lim := range []Limits{{MaxReply: 4}, {MaxReply: 5}, {MaxLine: 1}, {MaxLine: 2}, {MaxBulk: 4}} {
		for _, in := range []string{"+OK\r\n", ":1\r\n", ":-12\r\n", "$-1\r\n", "-ERR x\r\n", "$5\r\nhello\r\n", "+OK\r"} {
			check(t, in, lim)
		}
	}
}

// TestParseValueHeaders: for an aggregate ParseValue returns only its
// header, and walking Value by Value gives Parse's tree.
func TestParseValueHeaders(t *testing.T) {
	cases := []struct {
		in   string
		want Value
		n    int
	}{
		{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", Value{Type: TypeArray, Int: 2}, 4},
		{"*0\r\n", Value{Type: TypeArray}, 4},
		{"*-1\r\n", Value{Type: TypeArray, Null: true}, 5},
		{"%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", Value{Type: TypeMap, Int: 2}, 4},
		{"~1\r\n", Value{Type: TypeSet, Int: 1}, 4},
		{">3\r\n", Value{Type: TypePush, Int: 3}, 4},
		{"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n", Value{Type: TypeAttribute, Int: 1}, 4},
	}
	for _, tc := range cases {
		var v Value
		n, err := ParseValue(&v, []byte(tc.in), Limits{})
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.n, n, tc.in)
		assert.Equal(t, tc.want, v, tc.in)
	}

	in := []byte("*3\r\n*1\r\n:1\r\n*0\r\n*2\r\n*1\r\n+x\r\n$-1\r\n")
	tree, treeN, err := Parse(nil, in, Limits{})
	require.NoError(t, err)
	off := 0
	for i := range tree {
		var v Value
		n, err := ParseValue(&v, in[off:], Limits{})
		require.NoError(t, err)
		want := tree[i]
		want.Size = 0
		assert.Equal(t, want, v, "value %d", i)
		off += n
	}
	assert.Equal(t, treeN, off)
}

func TestParseValueErrors(t *testing.T) {
	var v Value
	for _, in := range []string{"", "+", "+OK", "+OK\r", ":1", ":1\r", "$-1\r", "$5\r\nhel", "*2", "*2\r"} {
		n, err := ParseValue(&v, []byte(in), Limits{})
		assert.Equal(t, ErrIncomplete, err, "%q", in)
		assert.Zero(t, n)
	}
	// Limits that bound one Value apply; those that bound a tree do not.
	_, err := ParseValue(&v, []byte("*3\r\n"), Limits{MaxElems: 2})
	assert.ErrorContains(t, err, "aggregate count exceeds MaxElems")
	_, err = ParseValue(&v, []byte("$5\r\nhello\r\n"), Limits{MaxBulk: 4})
	assert.ErrorContains(t, err, "bulk length exceeds MaxBulk")
	_, err = ParseValue(&v, []byte("+hello\r\n"), Limits{MaxLine: 4})
	assert.ErrorContains(t, err, "line exceeds MaxLine")
	_, err = ParseValue(&v, []byte("+OK\r\n"), Limits{MaxReply: 4})
	assert.ErrorContains(t, err, "reply exceeds MaxReply")
	n, err := ParseValue(&v, []byte("*1\r\n*1\r\n"), Limits{MaxDepth: 1, MaxValues: 1})
	assert.NoError(t, err)
	assert.Equal(t, 4, n)
}
