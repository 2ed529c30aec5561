package scripts

import (
	"crypto/sha1"
	"encoding/hex"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAll checks that All holds every embedded file once, by its name,
// but the prelude fence_vouch.lua, which comes before each cluster form
// of a fencing script (also in All, named "fence_vouch+" and the
// script's name); and that each script is without its file's final newline (nor a CR a
// checkout could have added), named by its SHA-1. That Redis computes the same SHA-1 is checked
// against redis-server by internal/fakeredis's TestScriptSHAsAgainstRedis.
func TestAll(t *testing.T) {
	names, err := fs.Glob(files, "*.lua")
	require.NoError(t, err)
	var got []string
	for _, s := range All {
		if base, ok := strings.CutPrefix(s.Name, "fence_vouch+"); ok {
			b, err := files.ReadFile(base + ".lua")
			require.NoError(t, err)
			p, err := files.ReadFile("fence_vouch.lua")
			require.NoError(t, err)
			assert.Equal(t, string(p)+strings.TrimSuffix(string(b), "\n"), s.Source, s.Name)
		} else {
			got = append(got, s.Name+".lua")
		}
		assert.NotEmpty(t, s.Source, s.Name)
		assert.NotContains(t, s.Source, "\r", s.Name)
		assert.Equal(t, strings.TrimSpace(s.Source), s.Source, s.Name)
		sum := sha1.Sum([]byte(s.Source))
		assert.Equal(t, hex.EncodeToString(sum[:]), s.SHA, s.Name)
	}
	assert.ElementsMatch(t, names, append(got, "fence_vouch.lua"))
}
