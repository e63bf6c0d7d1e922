package tour

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/ports"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestReadmeTour runs the README's tour as written, against a fresh
// `switchboard dev` on the default ports, so the README cannot rot.
func TestReadmeTour(t *testing.T) {
	root := testkit.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := Steps(string(readme))
	if len(steps) < 10 {
		t.Fatalf("found %d tour steps in README.md; the tour's ```console blocks are missing", len(steps))
	}
	for _, addr := range []string{ports.SuiteAddr, ports.GatewayAddr} {
		if lis, err := net.Listen("tcp", addr); err != nil {
			t.Fatalf("the tour uses %s, which is taken (%v): stop what listens there", addr, err)
		} else {
			lis.Close()
		}
	}
	// A scratch view of the repository as the README assumes it: every
	// top-level entry linked (so `go build ./examples/…` works in the
	// workspace), and a bin/ of its own with a fresh switchboard and the
	// pinned tools.
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != "bin" && n != ".data" && n != ".git" {
			link(t, filepath.Join(root, n), filepath.Join(dir, n))
		}
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	link(t, testkit.Build(t, "github.com/switchboard-run/switchboard/cli/cmd/switchboard"), filepath.Join(bin, "switchboard"))
	for _, tool := range []string{"grpcurl", "everything-server"} {
		link(t, testkit.Tool(t, tool), filepath.Join(bin, tool))
	}

	// --data is make run's .data, under the scratch repository: the tour's
	// commands read its secret there, as a person's do.
	suite := testkit.Start(t, filepath.Join(bin, "switchboard"), "dev", "--data", filepath.Join(dir, ".data"))
	testkit.WaitHealthy(t, ports.SuiteAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, 30*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", script(steps, dir))
	sh.Dir = dir
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the tour's script failed: %v\n%s", err, out)
	}
	for i, st := range steps {
		if st.Background() {
			continue
		}
		rc, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rc.%d", i)))
		got, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out.%d", i)))
		if strings.TrimSpace(string(rc)) != "0" {
			t.Errorf("$ %s\nexited %s:\n%s", st.Command, strings.TrimSpace(string(rc)), got)
			continue
		}
		for _, w := range st.Want {
			if !Matches(w, string(got)) {
				t.Errorf("$ %s\nprinted:\n%s\nwhich lacks the README's line %q", st.Command, got, w)
			}
		}
	}
	if t.Failed() {
		t.Logf("background output:\n%s", readFile(filepath.Join(dir, "bg.log")))
		t.Logf("suite output:\n%s", suite.Output())
	}
}

// script runs every step in one bash session (so variables carry from one
// step to the next), recording each step's output and exit code. After a
// step that starts a background process, it waits as a person would: for
// the address it listens on to take connections, or else for a client to
// be present (the host connected).
func script(steps []Step, dir string) string {
	var b strings.Builder
	b.WriteString("set +e\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n")
	for i, st := range steps {
		if st.Background() {
			fmt.Fprintf(&b, "%s >>bg.log 2>&1 &\n", strings.TrimSuffix(strings.TrimSpace(st.Command), "&"))
			if addr := st.Listens(); addr != "" {
				host, port, _ := strings.Cut(addr, ":")
				fmt.Fprintf(&b, "for i in $(seq 600); do (echo >/dev/tcp/%s/%s) 2>/dev/null && break; sleep 0.1; done\n", host, port)
				continue
			}
			b.WriteString("for i in $(seq 100); do bin/switchboard clients 2>/dev/null | grep -q ' true ' && break; sleep 0.1; done\n")
			continue
		}
		fmt.Fprintf(&b, "%s >out.%d 2>&1\necho $? >rc.%d\n", st.Command, i, i)
	}
	return b.String()
}

func link(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Symlink(from, to); err != nil {
		t.Fatal(err)
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
