package dev

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A server mounted in the embedded suite is stored in the NATS under
// --data: the next start on the same --data runs it again, unasked.
func TestAMountSurvivesARestartOfTheEmbeddedSuite(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	admin := testkit.As("ops", identity.Admin)
	cfg := &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: testkit.Tool(t, "everything-server")}}}
	serve(t, data, func(cc *grpc.ClientConn) {
		if _, err := bridgev1.NewBridgeServiceClient(cc).Mount(admin, &bridgev1.MountRequest{Client: "everything", Config: cfg}); err != nil {
			t.Fatal(err)
		}
	})
	serve(t, data, func(cc *grpc.ClientConn) {
		br := bridgev1.NewBridgeServiceClient(cc)
		testkit.Eventually(t, "everything running after the restart", 20*time.Second, func() bool {
			res, err := br.ListServers(admin, &bridgev1.ListServersRequest{})
			return err == nil && len(res.GetServers()) == 1 && res.GetServers()[0].GetState() == bridgev1.State_STATE_RUNNING
		})
		ctx, cancel := context.WithTimeout(testkit.As("agent", identity.Driver), 20*time.Second)
		defer cancel()
		res, err := mailboxv1.NewMailboxServiceClient(cc).Call(ctx, &mailboxv1.CallRequest{Client: "everything", Tool: "test_simple_text", Input: `{}`})
		if err != nil || res.GetCapture().GetStdout() != "This is a simple text response for testing." {
			t.Fatalf("Call after the restart = %v, %v", res, err)
		}
	})
}
