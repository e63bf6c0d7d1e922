package app_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestTokensAndGrants runs `switchboard dev` and the people's commands for
// tokens and grants against it.
func TestTokensAndGrants(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	d := startDev(t, bin)
	addr := "--addr=" + d.grpcAddr

	if _, stderr, code := d.run("tokens", "create", addr, "--identity", "agent"); code != 1 ||
		!strings.Contains(stderr, "a driver token needs the workspaces it may see: name them (--workspaces dev,ops, or '*' for every workspace)") {
		t.Fatalf("a driver token without workspaces: exit %d, %q", code, stderr)
	}
	out, stderr, code := d.run("tokens", "create", addr, "--identity", "agent", "--workspaces", "ops,dev", "--ttl", "1h", "--note", "ci")
	if code != 0 || !regexp.MustCompile(`^sbt_\S+\n$`).MatchString(out) || !strings.Contains(stderr, `for "agent" (driver of dev,ops, until `) {
		t.Fatalf("tokens create: exit %d, %q, %q", code, out, stderr)
	}
	if out, _, code := d.run("tokens", "ls", addr); code != 0 || !regexp.MustCompile(`agent\s+driver\s+dev,ops`).MatchString(out) {
		t.Fatalf("tokens ls: exit %d\n%s", code, out)
	}
	if _, stderr, code := d.run("tokens", "ls", addr, "--as-grade", "driver"); code != 1 ||
		!strings.Contains(stderr, "is a driver and may not call RegistryService.ListTokens") {
		t.Fatalf("tokens ls as a driver: exit %d, %q", code, stderr)
	}

	if out, _, code := d.run("grants", "set", addr, "alice smith", "--workspaces", "dev"); code != 0 || out != "alice smith may see dev\n" {
		t.Fatalf("grants set: exit %d, %q", code, out)
	}
	if out, _, code := d.run("grants", "ls", addr); code != 0 || !regexp.MustCompile(`alice smith\s+dev`).MatchString(out) {
		t.Fatalf("grants ls: exit %d\n%s", code, out)
	}
	if out, _, code := d.run("grants", "rm", addr, "alice smith"); code != 0 || out != "removed the grant of alice smith\n" {
		t.Fatalf("grants rm: exit %d, %q", code, out)
	}
	if _, stderr, code := d.run("grants", "rm", addr, "alice smith"); code != 1 || !strings.Contains(stderr, `no grant for "alice smith"`) {
		t.Fatalf("grants rm again: exit %d, %q", code, stderr)
	}
	if _, stderr, code := d.run("grants", "set", addr); code != 2 || !strings.Contains(stderr, "usage: switchboard grants set <identity>") {
		t.Fatalf("grants set without a name: exit %d, %q", code, stderr)
	}
}
