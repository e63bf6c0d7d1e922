package mailbox_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestAClientOutsideTheCallersWorkspacesAdvertisesNothing: invoking a
// client in no workspace the caller may see gets the sentence of a tool
// nobody advertises, on Invoke and Call alike; inside them it is routed.
func TestAClientOutsideTheCallersWorkspacesAdvertisesNothing(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "grep") // dev mode: laptop joins "default"
	admin := testkit.As("ops", identity.Admin)
	if _, err := s.reg.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: "ops", Client: "laptop"}); err != nil {
		t.Fatal(err)
	}
	absent := `client "laptop" advertises no tool "grep" right now`
	outsider := testkit.AsIn("alice", identity.Driver, "dev")
	_, err := s.mb.Invoke(outsider, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: "{}"})
	testkit.Refused(t, err, codes.NotFound, absent)
	ctx, cancel := context.WithTimeout(outsider, 10*time.Second)
	defer cancel()
	_, err = s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "grep", Input: "{}"})
	testkit.Refused(t, err, codes.NotFound, absent)
	_, err = s.mb.Invoke(testkit.AsIn("bob", identity.Driver), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: "{}"})
	testkit.Refused(t, err, codes.NotFound, absent)

	for _, ctx := range []context.Context{testkit.AsIn("alice", identity.Driver, "ops"), testkit.AsIn("alice", identity.Driver, "dev", "default"), testkit.AsIn("alice", identity.Driver, "*")} {
		if _, err := s.mb.Invoke(ctx, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: "{}"}); err != nil {
			t.Fatalf("invoking inside a workspace of laptop's: %v", err)
		}
	}
	// Leaving the workspace is absence again, once the view hears of it or
	// the registry confirms it.
	if _, err := s.reg.UnregisterClient(admin, &registryv1.UnregisterClientRequest{Workspace: "ops", Client: "laptop"}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "laptop's leaving ops to reach the mailbox", 10*time.Second, func() bool {
		_, err := s.mb.Invoke(testkit.AsIn("alice", identity.Driver, "ops"), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: "{}"})
		return err != nil
	})
	_, err = s.mb.Invoke(testkit.AsIn("alice", identity.Driver, "ops"), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: "{}"})
	testkit.Refused(t, err, codes.NotFound, absent)
}

func TestHostsReadAndCompleteDriversPostAndCollect(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	stream, err := s.mb.Follow(driver, &mailboxv1.FollowRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	testkit.Refused(t, err, codes.PermissionDenied, `"driver" is a driver and may not call MailboxService.Follow`)
	_, err = s.mb.Invocations(testkit.As("ops", identity.Admin), &mailboxv1.InvocationsRequest{})
	testkit.Refused(t, err, codes.PermissionDenied, `"ops" is an admin and may not call MailboxService.Invocations`)
	_, err = s.mb.Capture(host("laptop"), &mailboxv1.CaptureRequest{Invocation: "inv-0"})
	testkit.Refused(t, err, codes.PermissionDenied, `"laptop" is a host and may not call MailboxService.Capture`)
	_, err = s.mb.Invoke(testkit.As("mailbox", identity.Service), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: "{}"})
	testkit.Refused(t, err, codes.PermissionDenied, `"mailbox" is a service and may not call MailboxService.Invoke`)
}
