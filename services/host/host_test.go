package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

const module = "github.com/switchboard-run/switchboard/"

var driver = identity.As(context.Background(), identity.Identity{Name: "driver", Grade: identity.Driver})

// hosted is `switchboard dev` and a `switchboard host` process serving one
// tool as client "box", with the host connected.
type hosted struct {
	host *testkit.Proc
	mb   mailboxv1.MailboxServiceClient
}

func startHosted(t *testing.T, tool string, hostArgs ...string) hosted {
	t.Helper()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(tools, []byte(tool), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t)
	testkit.Start(t, bin, "dev", "--grpc", addr, "--http", testkit.FreeAddr(t), "--data", filepath.Join(dir, "data"))
	testkit.WaitHealthy(t, addr, mailboxv1.MailboxService_ServiceDesc.ServiceName, 20*time.Second)
	secret := filepath.Join(dir, "data", process.DevSecretFile)
	host := testkit.Start(t, bin, append([]string{"host", "--dev", "--dev-secret-file", secret, "--client", "box", "--tools", tools, "--registry", addr, "--mailbox", addr}, hostArgs...)...)
	cc := testkit.DialDev(t, addr, testkit.DevSecret(t, filepath.Join(dir, "data")))
	reg := registryv1.NewRegistryServiceClient(cc)
	testkit.Eventually(t, "the host connected", 30*time.Second, func() bool {
		res, err := reg.GetClient(driver, &registryv1.GetClientRequest{Client: "box"})
		return err == nil && res.GetRow().GetPresent()
	})
	return hosted{host: host, mb: mailboxv1.NewMailboxServiceClient(cc)}
}

// TestSIGTERMFinishesTheRunsInFlight stops a host process with SIGTERM
// while it runs a tool: it stops reading, lets the run finish, completes it,
// and exits cleanly; the driver gets the capture.
func TestSIGTERMFinishesTheRunsInFlight(t *testing.T) {
	t.Parallel()
	started := filepath.Join(t.TempDir(), "started")
	h := startHosted(t, `[{"name":"slow","description":"","input_schema":{"type":"object"},"command":["sh","-c","touch `+started+`; sleep 1; echo finished"]}]`)
	inv, err := h.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "box", Tool: "slow", Input: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the run started", 30*time.Second, func() bool { _, err := os.Stat(started); return err == nil })
	if err := h.host.Stop(10 * time.Second); err != nil {
		t.Fatalf("the host did not exit cleanly on SIGTERM: %v", err)
	}
	c, err := h.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation()})
	if err != nil || c.GetCapture().GetStdout() != "finished\n" {
		t.Fatalf("the run in flight at SIGTERM: %v %v; want it finished and completed", c, err)
	}
}

// A tool that runs past the host's --deadline is killed, exit code 124
// with a sentence, as timeout(1) does; an invocation's own shorter timeout
// stops it sooner, and its sentence says so.
func TestAToolPastItsDeadlineIsKilledWith124(t *testing.T) {
	t.Parallel()
	h := startHosted(t, `[{"name":"sleepy","description":"","input_schema":{"type":"object"},"command":["sleep","600"]}]`,
		"--deadline", "2s")
	for _, tt := range []struct {
		timeout *durationpb.Duration
		says    string
	}{
		{nil, `switchboard: tool "sleepy" was stopped: it ran past the per-call deadline of 2s`},
		{durationpb.New(300 * time.Millisecond), `switchboard: tool "sleepy" was stopped: its timeout of 300ms ran out`},
	} {
		inv, err := h.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "box", Tool: "sleepy", Input: "{}", Timeout: tt.timeout})
		if err != nil {
			t.Fatal(err)
		}
		c, err := h.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation(), Wait: durationpb.New(60 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.GetCapture(); got.GetExitCode() != capture.ExitTimeout || !strings.HasSuffix(got.GetStderr(), tt.says) {
			t.Errorf("capture = %v; want exit 124 saying %q", got, tt.says)
		}
	}
}
