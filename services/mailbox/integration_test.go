package mailbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

const module = "github.com/switchboard-run/switchboard/"

// TestRealProcessesEveryInvokeGetsExactlyOneCapture runs the registry, the
// mailbox and two tool hosts as real processes on loopback, with many
// concurrent drivers: every call comes back with its own input echoed, once.
func TestRealProcessesEveryInvokeGetsExactlyOneCapture(t *testing.T) {
	t.Parallel()
	regBin := testkit.Build(t, module+"services/registry/cmd/registry")
	mbBin := testkit.Build(t, module+"services/mailbox/cmd/mailbox")
	hostBin := testkit.Build(t, module+"services/host/cmd/host")

	regAddr, mbAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	ns := testkit.NATS(t)
	testkit.Start(t, regBin, "--dev", "--listen", regAddr, "--nats", ns.ClientURL())
	testkit.WaitHealthy(t, regAddr, "", 20*time.Second)
	testkit.Start(t, mbBin, "--dev", "--listen", mbAddr, "--registry", regAddr, "--nats", ns.ClientURL())
	testkit.WaitHealthy(t, mbAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, 20*time.Second)

	tools := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(tools, []byte(`[{"name":"echo","description":"prints its input","input_schema":{"type":"object"},"command":["cat"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := []string{"host-a", "host-b"}
	for _, h := range hosts {
		testkit.Start(t, hostBin, "--dev", "--client", h, "--tools", tools, "--registry", regAddr, "--mailbox", mbAddr, "--concurrency", "8")
	}

	conn, err := grpcclient.Dial(mbAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	regConn, err := grpcclient.Dial(regAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer regConn.Close()
	reg := registryv1.NewRegistryServiceClient(regConn)
	for _, h := range hosts { // both hosts advertised and hold their reads
		testkit.Eventually(t, h+" to hold its read", 20*time.Second, func() bool {
			res, err := reg.GetClient(driver, &registryv1.GetClientRequest{Client: h})
			return err == nil && res.GetRow().GetPresent()
		})
	}

	mb := mailboxv1.NewMailboxServiceClient(conn)
	const drivers, calls = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, drivers*calls)
	for d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				input := fmt.Sprintf(`{"driver":%d,"call":%d}`, d, c)
				ctx, cancel := context.WithTimeout(driver, 30*time.Second)
				res, err := mb.Call(ctx, &mailboxv1.CallRequest{Client: hosts[(d+c)%2], Tool: "echo", Input: input})
				cancel()
				switch {
				case err != nil:
					errs <- fmt.Errorf("call %s: %v", input, err)
				case res.GetCapture().GetStdout() != input || res.GetCapture().GetExitCode() != 0:
					errs <- fmt.Errorf("call %s: capture %v", input, res.GetCapture())
				default:
					// The capture was read once: collecting again is absent.
					if _, err := mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: res.GetInvocation()}); err == nil {
						errs <- fmt.Errorf("call %s: a second capture was collected", input)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
