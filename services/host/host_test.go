package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

const module = "github.com/switchboard-run/switchboard/"

// TestSIGTERMFinishesTheRunsInFlight stops a host process with SIGTERM
// while it runs a tool: it stops reading, lets the run finish, completes it,
// and exits cleanly; the driver gets the capture.
func TestSIGTERMFinishesTheRunsInFlight(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	started := filepath.Join(dir, "started")
	if err := os.WriteFile(tools, []byte(`[{"name":"slow","description":"","input_schema":{"type":"object"},"command":["sh","-c","touch `+started+`; sleep 1; echo finished"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t)
	testkit.Start(t, bin, "dev", "--grpc", addr, "--http", testkit.FreeAddr(t), "--data", filepath.Join(dir, "data"))
	testkit.WaitHealthy(t, addr, mailboxv1.MailboxService_ServiceDesc.ServiceName, 20*time.Second)
	host := testkit.Start(t, bin, "host", "--dev", "--client", "box", "--tools", tools, "--registry", addr, "--mailbox", addr)

	cc, err := grpcclient.Dial(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	driver := identity.As(context.Background(), identity.Identity{Name: "driver", Grade: identity.Driver})
	reg := registryv1.NewRegistryServiceClient(cc)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := reg.GetClient(driver, &registryv1.GetClientRequest{Client: "box"})
		if err == nil && res.GetRow().GetPresent() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the host never connected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mb := mailboxv1.NewMailboxServiceClient(cc)
	inv, err := mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "box", Tool: "slow", Input: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := os.Stat(started); err != nil; _, err = os.Stat(started) {
		if time.Now().After(deadline) {
			t.Fatal("the run never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := host.Stop(10 * time.Second); err != nil {
		t.Fatalf("the host did not exit cleanly on SIGTERM: %v", err)
	}
	c, err := mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation()})
	if err != nil || c.GetCapture().GetStdout() != "finished\n" {
		t.Fatalf("the run in flight at SIGTERM: %v %v; want it finished and completed", c, err)
	}
}
