package redlock

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeSources are the compiled, run files that the README's Go blocks
// are excerpts of.
var readmeSources = []string{
	"example_test.go",
	"example_fencing_test.go",
	"example_semaphore_test.go",
	"example_election_test.go",
	"redlocktest/redlocktest_test.go",
}

// TestReadmeCodeBlocks: every Go block of the README but the quick start
// (a whole program, see TestReadmeQuickStart) is an excerpt of an Example
// or test that compiles and runs here, so that none goes stale when the
// API changes. Indentation and blank lines do not count.
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
	quick := readmeQuickStart(t, string(readme))
	for _, b := range blocks {
		if b[1] == quick {
			continue
		}
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

// quickStartMarker is the line before the README's quick start block.
const quickStartMarker = "<!-- quick start: TestReadmeQuickStart runs this program as printed -->\n```go\n"

// readmeQuickStart returns the README's quick start program.
func readmeQuickStart(t *testing.T, readme string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, quickStartMarker)
	require.True(t, ok, "the README has no quick start block after %q", quickStartMarker)
	program, _, ok := strings.Cut(after, "```")
	require.True(t, ok, "the quick start block does not end")
	return program
}

// TestReadmeQuickStart runs the README's quick start as printed, in a
// module of its own that requires this one as a user would before it is
// published (a replace directive), against three fresh redis-server
// masters: only the addresses are changed, from make redis-up's ports to
// the test's. It must print what the README says, after the restart
// guard's wait its comment announces.
func TestReadmeQuickStart(t *testing.T) {
	t.Parallel() // see helpers_test.go: parallel tests
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "go is needed to run the quick start")
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	program := readmeQuickStart(t, string(readme))
	for i, s := range masters(t, 3) {
		literal := `"127.0.0.1:700` + string(rune('1'+i)) + `"`
		require.Equal(t, 1, strings.Count(program, literal), "the quick start's address %s", literal)
		program = strings.Replace(program, literal, `"`+s.Addr()+`"`, 1)
	}

	root, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module try\n\ngo 1.25.0\n\n"+
		"require github.com/volleylock/volley v0.0.0\n\n"+
		"replace github.com/volleylock/volley => "+root+"\n"), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(args ...string) string {
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = dir
		// Offline: every module the program needs is in the module cache
		// already, and its checksums in the copied go.sum.
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	run("mod", "tidy")
	start := time.Now()
	out := run("run", ".")
	assert.Equal(t, "locked invoice:42\nunlocked\n", out)
	t.Logf("go run took %v (build, and the restart guard's wait on fresh masters)", time.Since(start))
}
