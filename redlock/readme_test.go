package redlock

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeSources are the compiled, run files that the README's Go blocks
// are excerpts of.
var readmeSources = []string{
	"example_test.go",
	"example_fencing_test.go",
	"example_semaphore_test.go",
	"redlocktest/redlocktest_test.go",
}

// TestReadmeCodeBlocks: every Go block of the README is an excerpt of an
// Example or test that compiles and runs here, so that none goes stale
// when the API changes. Indentation and blank lines do not count.
func TestReadmeCodeBlocks(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	var sources strings.Builder
	for _, f := range readmeSources {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		sources.WriteString(normalizeCode(string(b)))
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, blocks, "the README has no Go block")
	for _, b := range blocks {
		assert.Contains(t, sources.String(), normalizeCode(b[1]), "a README Go block is not an excerpt of %v", readmeSources)
	}
}

// normalizeCode drops indentation and blank lines.
func normalizeCode(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
