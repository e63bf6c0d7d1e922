package app_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestTokensAndGrants runs `switchboard dev` and the people's commands for
// tokens and grants against it.
func TestTokensAndGrants(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	grpcAddr := testkit.FreeAddr(t)
	testkit.Start(t, bin, "dev", "--grpc", grpcAddr, "--http", testkit.FreeAddr(t), "--data", filepath.Join(t.TempDir(), "data"))
	testkit.WaitHealthy(t, grpcAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, 20*time.Second)
	addr := "--addr=" + grpcAddr

	if _, stderr, code := run(t, bin, "tokens", "create", addr, "--identity", "agent"); code != 1 ||
		!strings.Contains(stderr, "a driver token needs the workspaces it may see: name them (--workspaces dev,ops, or '*' for every workspace)") {
		t.Fatalf("a driver token without workspaces: exit %d, %q", code, stderr)
	}
	out, stderr, code := run(t, bin, "tokens", "create", addr, "--identity", "agent", "--workspaces", "ops,dev", "--ttl", "1h", "--note", "ci")
	if code != 0 || !regexp.MustCompile(`^sbt_\S+\n$`).MatchString(out) || !strings.Contains(stderr, `for "agent" (driver of dev,ops, until `) {
		t.Fatalf("tokens create: exit %d, %q, %q", code, out, stderr)
	}
	if out, _, code := run(t, bin, "tokens", "ls", addr); code != 0 || !regexp.MustCompile(`agent\s+driver\s+dev,ops`).MatchString(out) {
		t.Fatalf("tokens ls: exit %d\n%s", code, out)
	}
	if _, stderr, code := run(t, bin, "tokens", "ls", addr, "--as-grade", "driver"); code != 1 ||
		!strings.Contains(stderr, "is a driver and may not call RegistryService.ListTokens") {
		t.Fatalf("tokens ls as a driver: exit %d, %q", code, stderr)
	}

	if out, _, code := run(t, bin, "grants", "set", addr, "alice smith", "--workspaces", "dev"); code != 0 || out != "alice smith may see dev\n" {
		t.Fatalf("grants set: exit %d, %q", code, out)
	}
	if out, _, code := run(t, bin, "grants", "ls", addr); code != 0 || !regexp.MustCompile(`alice smith\s+dev`).MatchString(out) {
		t.Fatalf("grants ls: exit %d\n%s", code, out)
	}
	if out, _, code := run(t, bin, "grants", "rm", addr, "alice smith"); code != 0 || out != "removed the grant of alice smith\n" {
		t.Fatalf("grants rm: exit %d, %q", code, out)
	}
	if _, stderr, code := run(t, bin, "grants", "rm", addr, "alice smith"); code != 1 || !strings.Contains(stderr, `no grant for "alice smith"`) {
		t.Fatalf("grants rm again: exit %d, %q", code, stderr)
	}
	if _, stderr, code := run(t, bin, "grants", "set", addr); code != 2 || !strings.Contains(stderr, "usage: switchboard grants set <identity>") {
		t.Fatalf("grants set without a name: exit %d, %q", code, stderr)
	}
}
