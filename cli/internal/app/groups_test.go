package app_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestGroupsRoundTrip runs `switchboard dev --groups FILE` and the groups
// commands against it: the file's group is there at start, set/get/ls/rm
// round-trip, a bad glob is refused naming it, and a token is minted
// limited to a group.
func TestGroupsRoundTrip(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	file := filepath.Join(dir, "groups.json")
	if err := os.WriteFile(file, []byte(`{"groups": [{"workspace": "default", "name": "from-file", "patterns": ["*_list*"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDev(t, bin, "--groups", file)
	addr := "--addr=" + d.grpcAddr

	out, stderr, code := d.run("groups", "set", addr, "default/readonly", "--pattern", "*_get*", "--pattern", "!*_delete*",
		"--alias", "gh_get_issue=issue", "--description", "gh_get_issue=Read one issue.")
	if code != 0 || out != "set group default/readonly: *_get* !*_delete*\n" {
		t.Fatalf("groups set: exit %d, %q, %q", code, out, stderr)
	}
	out, _, code = d.run("groups", "get", addr, "default/readonly")
	for _, want := range []string{`"alias": "issue"`, `"description": "Read one issue."`, `"tool": "gh_get_issue"`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("groups get: exit %d, want %s in\n%s", code, want, out)
		}
	}
	out, _, code = d.run("groups", "ls", addr, "default")
	if code != 0 || !regexp.MustCompile(`from-file\s+\*_list\*\s+0`).MatchString(out) || !regexp.MustCompile(`readonly\s+\*_get\* !\*_delete\*\s+1`).MatchString(out) {
		t.Fatalf("groups ls: exit %d\n%s", code, out)
	}
	if _, stderr, code := d.run("groups", "set", addr, "default/bad", "--pattern", "[x"); code != 1 || !strings.Contains(stderr, `pattern "[x" of group "bad" is not a glob`) {
		t.Fatalf("a bad glob: exit %d, %q", code, stderr)
	}
	if out, _, code := d.run("groups", "rm", addr, "default/readonly"); code != 0 || out != "removed group default/readonly\n" {
		t.Fatalf("groups rm: exit %d, %q", code, out)
	}
	if _, stderr, code := d.run("groups", "get", addr, "default/readonly"); code != 1 || !strings.Contains(stderr, `unknown group "readonly" in workspace "default"`) {
		t.Fatalf("groups get after rm: exit %d, %q", code, stderr)
	}
	_, stderr, code = d.run("tokens", "create", addr, "--identity", "agent", "--workspaces", "default", "--groups", "from-file")
	if code != 0 || !strings.Contains(stderr, "(driver of default, groups from-file, until") {
		t.Fatalf("tokens create --groups: exit %d, %q", code, stderr)
	}
}
