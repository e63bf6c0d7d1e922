// Package testkit is the one set of helpers for the suite's tests and for
// the bench, which runs the same processes outside `go test`: reaching the
// real peers (the pinned tools `make tools` installs into bin/, the
// repository's own binaries), starting and waiting for processes, calling
// the services as an identity, and checking their refusals. Every helper
// takes a TB: a *testing.T or *testing.B, or the bench's Session.
package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
)

// TB is the part of testing.TB the kit uses, so that a program outside
// `go test` can supply it (see Session). As in a test, Fatal and Fatalf
// end the calling goroutine, which must be the test's (or the session's)
// own.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	Failed() bool
}

// RepoRoot is the directory holding go.work, found from the working
// directory up.
func RepoRoot(t TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the working directory: run from the repository")
		}
		dir = parent
	}
}

// Tool returns the path of a pinned tool in bin/, failing with the command
// that installs it when it is missing. Tests never skip for a missing
// peer: a skipped test cannot fail.
func Tool(t TB, name string) string {
	t.Helper()
	p := filepath.Join(RepoRoot(t), "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed: run `make tools` first (%v)", p, err)
	}
	return p
}

// Run runs a command and returns its combined output, failing with that
// output when it exits non-zero.
func Run(t TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
	return string(out)
}
