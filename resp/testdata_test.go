package resp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realReplies maps each file captured from redis-server 7 (see
// testdata/README.md) to what it means.
var realReplies = map[string]string{
	"set_nx_ok.resp":         "+OK",
	"wrongtype_setup.resp":   "+OK",
	"set_nx_null_resp2.resp": "$nil",
	"get_null_resp2.resp":    "$nil",
	"get_bulk.resp":          "$token1",
	"eval_unlock_ok.resp":    ":1",
	"eval_unlock_miss.resp":  ":0",
	"incr.resp":              ":1",
	"pttl.resp":              ":-2",
	"eval_nested.resp":       "*4[:1 $two *3[:3 $four *0[]] +FINE]",
	"noscript.resp":          "-NOSCRIPT No matching script. Please use EVAL.",
	"noscript_resp3.resp":    "-NOSCRIPT No matching script. Please use EVAL.",
	"wrongtype.resp":         "-WRONGTYPE Operation against a key holding the wrong kind of value",
	"hello3.resp":            "%7[$server $redis $version $7.0.15 $proto :3 $id :3 $mode $standalone $role $master $modules *0[]]",
	"get_null_resp3.resp":    "_",
	"set_nx_null_resp3.resp": "_",
	"debug_null.resp":        "_",
	"hgetall_map.resp":       "%2[$f1 $v1 $f2 $v2]",
	"smembers_set.resp":      "~1[$m1]",
	"zscore_double.resp":     ",1.5",
	"zrange_withscores.resp": "*2[*2[$a ,1.5] *2[$b ,2]]",
	"eval_resp3_double.resp": ",3.25",
	"eval_resp3_bool.resp":   "#t",
	"eval_resp3_map.resp":    "%1[$a :1]",
	"debug_attrib.resp":      "|1[$key-popularity *2[$key:123 :90]] $Some real reply following the attribute",
	"debug_verbatim.resp":    "=txt:This is a verbatim\nstring",
	"debug_bignum.resp":      "(1234567999999999999999999999999999999",
	"debug_true.resp":        "#t",
	"debug_false.resp":       "#f",
	"debug_double.resp":      ",3.141",
	"debug_set.resp":         "~3[:0 :1 :2]",
	"debug_map.resp":         "%3[:0 #f :1 #t :2 #f]",
	"debug_push.resp":        ">2[$server-cpu-usage :42]",
	"subscribe_push.resp":    ">3[$subscribe $chan :1]",
	"info.resp":              "", // checked below
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func TestRealRedisReplies(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.resp"))
	require.NoError(t, err)
	require.Len(t, files, len(realReplies), "every captured file has an expectation")
	for name, want := range realReplies {
		t.Run(name, func(t *testing.T) {
			b := readTestdata(t, name)
			vals, n, err := Parse(nil, b, Limits{})
			require.NoError(t, err)
			if name == "info.resp" {
				require.Len(t, vals, 1)
				assert.Equal(t, TypeBulk, vals[0].Type)
				assert.True(t, bytes.HasPrefix(vals[0].Bytes, []byte("# Server\r\nredis_version:7.")))
				assert.Equal(t, len(b), n)
			} else {
				assert.Equal(t, want, render(vals))
			}
			assert.Equal(t, string(b[:n]), string(AppendValues(nil, vals)))
			if name == "debug_push.resp" {
				// A push, then the reply of the command.
				rest, _, err := Parse(nil, b[n:], Limits{})
				require.NoError(t, err)
				assert.Equal(t, "$Some real reply following the push reply", render(rest))
				return
			}
			assert.Equal(t, len(b), n)
			// The Reader agrees, one byte at a time.
			r := NewReader(&chunkReader{data: b, max: 1}, 16, Limits{})
			got, err := r.ReadReply()
			require.NoError(t, err)
			assert.Equal(t, render(vals), render(got))
		})
	}
}

func TestRealRedisErrors(t *testing.T) {
	for file, prefix := range map[string]string{"noscript.resp": "NOSCRIPT", "wrongtype.resp": "WRONGTYPE"} {
		vals, _, err := Parse(nil, readTestdata(t, file), Limits{})
		require.NoError(t, err)
		assert.Equal(t, prefix, string(vals[0].ErrorPrefix()))
		var se *ServerError
		require.ErrorAs(t, vals[0].Err(), &se)
		assert.Equal(t, prefix, se.Prefix)
		assert.True(t, strings.HasPrefix(se.Error(), prefix+" "))
	}
	vals, _, err := Parse(nil, readTestdata(t, "debug_verbatim.resp"), Limits{})
	require.NoError(t, err)
	format, text := vals[0].Verbatim()
	assert.Equal(t, "txt", string(format))
	assert.Equal(t, "This is a verbatim\nstring", string(text))
	vals, _, err = Parse(nil, readTestdata(t, "zscore_double.resp"), Limits{})
	require.NoError(t, err)
	assert.Equal(t, 1.5, vals[0].Float)
}
