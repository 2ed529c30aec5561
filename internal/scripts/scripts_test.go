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
// script's name); that each script is its file's code on one line (no
// comment, no line break, nor a CR a checkout could have added, no
// placeholder left unreplaced), named by its SHA-1. That Redis computes the same SHA-1 is checked against
// redis-server by internal/fakeredis's TestScriptSHAsAgainstRedis.
func TestAll(t *testing.T) {
	names, err := fs.Glob(files, "*.lua")
	require.NoError(t, err)
	var got []string
	for _, s := range All {
		if base, ok := strings.CutPrefix(s.Name, "fence_vouch+"); ok {
			assert.Equal(t, load("fence_vouch").Source+" "+load(base).Source, s.Source, s.Name)
		} else {
			got = append(got, s.Name+".lua")
			assert.Equal(t, load(s.Name).Source, s.Source, s.Name)
		}
		assert.NotEmpty(t, s.Source, s.Name)
		assert.NotContains(t, s.Source, "\r", s.Name)
		assert.NotContains(t, s.Source, "\n", s.Name)
		assert.NotContains(t, s.Source, "--", s.Name)
		for _, placeholder := range []string{"$RELEASED", "$WAITERS", "$NAMED", "$LISTEN"} {
			assert.NotContains(t, s.Source, placeholder, s.Name)
		}
		assert.Equal(t, strings.TrimSpace(s.Source), s.Source, s.Name)
		sum := sha1.Sum([]byte(s.Source))
		assert.Equal(t, hex.EncodeToString(sum[:]), s.SHA, s.Name)
	}
	assert.ElementsMatch(t, names, append(got, "fence_vouch.lua"))
}

// TestOneLine: comment and blank lines go, code lines are trimmed and
// joined by a space; a comment after code panics (it would swallow the
// code joined after it).
func TestOneLine(t *testing.T) {
	assert.Equal(t, `if a then return 1 end return 0`, oneLine("t", "-- what it does\n\nif a then\n  -- why\n  return 1\nend\r\nreturn 0\n"))
	assert.Panics(t, func() { oneLine("t", "return 1 -- one\nreturn 2\n") })
}
