package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// The embedded suite (`switchboard dev`, a process keeping its state under
// --data) is killed with invocations queued for a host that is not running
// and with captures nobody has collected. Started again on the same --data:
// the host, started only then, is handed the queued invocations, and the
// driver collects those captures and the ones answered before the restart,
// each once, with the handles from before.
func TestTheEmbeddedSuiteRestartsWithQueuedInvocationsAndUncollectedCaptures(t *testing.T) {
	t.Parallel()
	d := procs.StartDev(t)
	echo := &registryv1.Tool{Name: "echo", Description: "", InputSchema: `{"type":"object"}`}
	for _, client := range []string{"laptop", "desk"} {
		if _, err := d.Reg.Advertise(testkit.As(client, identity.Host), &registryv1.AdvertiseRequest{Tools: []*registryv1.Tool{echo}}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 3
	want := map[string]string{} // handle → the input its capture must echo
	invoke := func(client string, i int) string {
		t.Helper()
		input := fmt.Sprintf(`{"client":%q,"i":%d}`, client, i)
		res, err := d.MB.Invoke(procs.Driver(), &mailboxv1.InvokeRequest{Client: client, Tool: "echo", Input: input})
		if err != nil {
			t.Fatal(err)
		}
		want[res.GetInvocation()] = input
		return res.GetInvocation()
	}
	// laptop answers n invocations before the restart: the test is its
	// host, so it knows each capture is stored once Complete returns.
	for i := range n {
		invoke("laptop", i)
	}
	answerAs(t, d.MB, "laptop", n)
	// desk has no host: its invocations stay queued.
	for i := range n {
		invoke("desk", i)
	}

	d.Proc.Kill()
	d.Start()
	d.Host(t, "desk", `[{"name":"echo","description":"","input_schema":{"type":"object"},"command":["cat"]}]`)
	for id, input := range want {
		var got *mailboxv1.CaptureResponse
		testkit.Eventually(t, "the capture of "+input, 30*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(procs.Driver(), 15*time.Second)
			defer cancel()
			var err error
			got, err = d.MB.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb.New(10 * time.Second)})
			if err != nil {
				t.Fatalf("collecting %s (%s) after the restart: %v", id, input, err)
			}
			return got.GetCapture() != nil
		})
		if got.GetCapture().GetStdout() != input || got.GetCapture().GetExitCode() != 0 {
			t.Fatalf("the capture of %s after the restart: %v", input, got.GetCapture())
		}
		_, err := d.MB.Capture(procs.Driver(), &mailboxv1.CaptureRequest{Invocation: id})
		testkit.Refused(t, err, codes.NotFound, absent(id))
	}
}

// answerAs follows client's queue as its host and completes n invocations
// with their input as stdout, then lets the read go.
func answerAs(t *testing.T, mb mailboxv1.MailboxServiceClient, client string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testkit.As(client, identity.Host), 30*time.Second)
	defer cancel()
	stream, err := mb.Follow(ctx, &mailboxv1.FollowRequest{Session: proto.String("test-" + client)})
	if err != nil {
		t.Fatal(err)
	}
	for answered := 0; answered < n; {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("following %s: %v", client, err)
		}
		if inv := ev.GetInvocation(); inv != nil {
			if _, err := mb.Complete(ctx, &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New(inv.GetInput(), "", 0)}); err != nil {
				t.Fatal(err)
			}
			answered++
		}
	}
}
