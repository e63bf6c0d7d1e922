// Package testkit helps the suite's tests reach the real peers they run
// against: the pinned tools `make tools` installs into bin/ (grpcurl, the
// MCP servers) and the repository's own binaries.
package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RepoRoot is the directory holding go.work, found from the working
// directory up.
func RepoRoot(t testing.TB) string {
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
			t.Fatal("no go.work above the test's directory: run the tests from the repository")
		}
		dir = parent
	}
}

// Tool returns the path of a pinned tool in bin/, failing the test with the
// command that installs it when it is missing. Tests never skip for a
// missing peer: a skipped test cannot fail.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(RepoRoot(t), "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed: run `make tools` first (%v)", p, err)
	}
	return p
}

// Run runs a command and returns its combined output, failing the test with
// that output when it exits non-zero.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
	return string(out)
}
