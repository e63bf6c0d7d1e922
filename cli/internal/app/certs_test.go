package app_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// certs init and leaf keep the CA's key at the top of --dir and write each
// leaf into a directory of its own, which can name nothing above it.
func TestCertsWritesADirectoryPerLeafAndTheCAKeyNowhereElse(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	if _, stderr, code := run(t, bin, "certs", "init", "--dir", dir); code != 0 {
		t.Fatalf("certs init: %s", stderr)
	}
	if _, stderr, code := run(t, bin, "certs", "leaf", "--dir", dir, "--name", "alice"); code != 0 {
		t.Fatalf("certs leaf: %s", stderr)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"ca.pem", "cert.pem", "key.pem"}) {
		t.Errorf("alice's directory holds %v; want ca.pem, cert.pem, key.pem", names)
	}
	for _, name := range []string{"..", "."} {
		_, stderr, code := run(t, bin, "certs", "leaf", "--dir", dir, "--name", name)
		if code == 0 || !strings.Contains(stderr, "cannot be a directory of its own") {
			t.Errorf("certs leaf --name %s: exit %d %s", name, code, stderr)
		}
	}
	if _, stderr, code := run(t, bin, "certs", "leaf", "--dir", dir, "--name", "bob", "--owner", "nonroot"); code == 0 || !strings.Contains(stderr, `--owner: owner "nonroot" is not UID:GID`) {
		t.Errorf("certs leaf --owner nonroot: exit %d %s", code, stderr)
	}
}
