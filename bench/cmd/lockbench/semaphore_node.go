package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The semaphore mode's Node.js contender: the npm package redis-semaphore's
// RedlockSemaphore, over ioredis clients on the same masters, in child
// processes of its own, node running semaphore_child.js, which speaks the
// Go children's protocol (handoff_child.go). It runs only where node is on
// PATH, and npm too the first time: npm installs redis-semaphore and
// ioredis once into a cache directory, reused by every later run. Where
// it cannot run, the mode reports it not measured, with why, and goes on.

const nameRedisSemaphore = "redis-semaphore"

//go:embed semaphore_child.js
var redisSemaphoreChildJS []byte

// npmPackages are what the child needs: npm installs them, unpinned, as
// `npm install --no-audit --no-fund redis-semaphore ioredis`; the child's
// note names the versions it loaded.
var npmPackages = []string{"redis-semaphore", "ioredis"}

// npmInstallTimeout bounds the npm install: it takes seconds, but npm
// retries an unreachable registry for minutes, and a run without the
// network would wait that long (each run: a failed install is tried again
// the next time).
const npmInstallTimeout = time.Minute

// nodeInstalledStamp, in the cache directory, says that an npm install
// there succeeded.
const nodeInstalledStamp = "lockbench-installed"

// nodeCacheDir is where npm installs the packages and the child's script
// is written: <user cache dir>/volley-lockbench/node.
func nodeCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "volley-lockbench", "node"), nil
}

// redisSemaphoreChild returns the command line of a redis-semaphore child,
// installing its packages the first time, or why it cannot run: node not
// found, npm not found, or npm's error.
func redisSemaphoreChild(ctx context.Context, p *progress) ([]string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node not found")
	}
	dir, err := nodeCacheDir()
	if err != nil {
		return nil, err
	}
	if !nodeInstalled(dir) {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return nil, errors.New("npm not found")
		}
		p.note("installing %s with npm into %s (once)", strings.Join(npmPackages, " and "), dir)
		if err := npmInstall(ctx, npm, dir); err != nil {
			return nil, err
		}
	}
	script := filepath.Join(dir, "semaphore_child.js")
	if old, err := os.ReadFile(script); err != nil || !bytes.Equal(old, redisSemaphoreChildJS) {
		if err := os.WriteFile(script, redisSemaphoreChildJS, 0o644); err != nil {
			return nil, err
		}
	}
	return []string{node, script}, nil
}

// nodeInstalled reports whether an npm install into dir succeeded and its
// packages are still there.
func nodeInstalled(dir string) bool {
	paths := []string{filepath.Join(dir, nodeInstalledStamp)}
	for _, pkg := range npmPackages {
		paths = append(paths, filepath.Join(dir, "node_modules", pkg, "package.json"))
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// npmInstall installs npmPackages into dir (a package.json of its own
// first, so that npm does not look for a project above it) and stamps it.
func npmInstall(ctx context.Context, npm, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pkg := filepath.Join(dir, "package.json")
	if _, err := os.Stat(pkg); err != nil {
		if err := os.WriteFile(pkg, []byte(`{"name": "volley-lockbench-node", "private": true}`+"\n"), 0o644); err != nil {
			return err
		}
	}
	ictx, cancel := context.WithTimeout(ctx, npmInstallTimeout)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund"}, npmPackages...)
	cmd := exec.CommandContext(ictx, npm, args...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second // Wait does not hang on a pipe a grandchild holds
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() == nil && ictx.Err() != nil {
			err = fmt.Errorf("not done within %v", npmInstallTimeout)
		}
		if gist := npmError(out.String()); gist != "" {
			err = fmt.Errorf("%w: %s", err, gist)
		}
		return fmt.Errorf("npm install: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, nodeInstalledStamp), []byte("npm "+strings.Join(args, " ")+"\n"), 0o644)
}

// npmError is the gist of npm's output: its first three error lines, or
// its first three lines when none says error.
func npmError(out string) string {
	var errs, all []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		all = append(all, l)
		if strings.HasPrefix(l, "npm error") || strings.HasPrefix(l, "npm ERR!") {
			errs = append(errs, l)
		}
	}
	if len(errs) == 0 {
		errs = all
	}
	return strings.Join(errs[:min(3, len(errs))], " ")
}
