package mailbox_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

type serveStream = interface {
	Send(*mailboxv1.ServeRequest) error
	Recv() (*mailboxv1.ServeResponse, error)
}

// serve opens a Serve stream as client and reads its `opened` event.
func (s *suite) serve(t testing.TB, client string) serveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(host(client))
	t.Cleanup(cancel)
	stream, err := s.mb.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	open := &mailboxv1.ServeRequest{Message: &mailboxv1.ServeRequest_Open{Open: &mailboxv1.FollowRequest{Session: proto.String("s-" + client)}}}
	if err := stream.Send(open); err != nil {
		t.Fatal(err)
	}
	if ev := recvServe(t, stream); ev.GetOpened() == nil {
		t.Fatalf("first event %v; want opened", ev)
	}
	return stream
}

func recvServe(t testing.TB, stream serveStream) *mailboxv1.ServeResponse {
	t.Helper()
	ev, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func completeOn(t testing.TB, stream serveStream, id, stdout string, exit int32) {
	t.Helper()
	c := &mailboxv1.Capture{Stdout: proto.String(stdout), Stderr: proto.String(""), ExitCode: proto.Int32(exit)}
	req := &mailboxv1.ServeRequest{Message: &mailboxv1.ServeRequest_Complete{Complete: &mailboxv1.CompleteRequest{Invocation: id, Capture: c}}}
	if err := stream.Send(req); err != nil {
		t.Fatal(err)
	}
}

// A host reads and answers on one Serve stream: the receipt names the
// invocation, the driver collects the capture, and a complete the mailbox
// refuses is answered with the refusal's code and sentence while the
// stream goes on serving. Each complete is counted by its code.
func TestRoundTripOverAServeStream(t *testing.T) {
	t.Parallel()
	tel := telemetry.NewMetrics()
	ms := mailboxtest.New(t, mailboxtest.Options{Telemetry: tel})
	s := &suite{reg: ms.Registry, mb: ms.Mailbox, svc: ms.Service}
	s.advertise(t, "box", "echo")
	stream := s.serve(t, "box")

	id := s.invoke(t, "box", "echo", `{"n":1}`)
	ev := recvServe(t, stream)
	if got := ev.GetInvocation(); got.GetInvocation() != id || got.GetInput() != `{"n":1}` {
		t.Fatalf("pushed %v, want invocation %s", ev, id)
	}
	completeOn(t, stream, id, "one", 0)
	if ev := recvServe(t, stream); ev.GetCompleted().GetInvocation() != id || ev.GetCompleted().GetCapture() != nil {
		t.Fatalf("after the complete the stream said %v, want the receipt of %s alone", ev, id)
	}
	got, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id})
	if err != nil || got.GetCapture().GetStdout() != "one" {
		t.Fatalf("the driver collected %v, %v; want stdout one", got, err)
	}

	// Answered already: refused as Complete would be, and the stream lives.
	completeOn(t, stream, id, "again", 0)
	ref := recvServe(t, stream).GetRefused()
	if ref.GetInvocation() != id || codes.Code(ref.GetCode()) != codes.NotFound || ref.GetMessage() != absentSentence(id) {
		t.Fatalf("a second complete was answered %v, want NOT_FOUND with the absent sentence", ref)
	}
	// A capture with a field missing: refused with Complete's sentence.
	bad := &mailboxv1.ServeRequest{Message: &mailboxv1.ServeRequest_Complete{Complete: &mailboxv1.CompleteRequest{Invocation: id,
		Capture: &mailboxv1.Capture{Stdout: proto.String("")}}}}
	if err := stream.Send(bad); err != nil {
		t.Fatal(err)
	}
	if ref := recvServe(t, stream).GetRefused(); codes.Code(ref.GetCode()) != codes.InvalidArgument || ref.GetMessage() != `capture: missing field "stderr"` {
		t.Fatalf("a capture without stderr was answered %v", ref)
	}

	second := s.invoke(t, "box", "echo", `{"n":2}`)
	if ev := recvServe(t, stream); ev.GetInvocation().GetInvocation() != second {
		t.Fatalf("after the refusals the stream pushed %v, want %s", ev, second)
	}
	completeOn(t, stream, second, "two", 3)
	if ev := recvServe(t, stream); ev.GetCompleted().GetInvocation() != second {
		t.Fatalf("want the receipt of %s, got %v", second, ev)
	}
	got, err = s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: second})
	if err != nil || got.GetCapture().GetExitCode() != 3 {
		t.Fatalf("the driver collected %v, %v; want exit code 3", got, err)
	}
	m := testkit.ScrapeHandler(t, tel.MetricsHandler())
	for code, want := range map[string]float64{"OK": 2, "NotFound": 1, "InvalidArgument": 1} {
		if got := m.Value("switchboard_mailbox_stream_completes_total", "grpc_code", code); got != want {
			t.Errorf("stream completes counted with %s: %v, want %v", code, got, want)
		}
	}
}

// Only the addressee completes, on a stream as with Complete: another
// host's complete is refused with the absent sentence and stores nothing.
func TestAServeStreamCompletesOnlyItsOwn(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "box", "echo")
	s.advertise(t, "other", "echo")
	mine := s.serve(t, "box")
	theirs := s.serve(t, "other")
	id := s.invoke(t, "box", "echo", `{}`)
	recvServe(t, mine)

	completeOn(t, theirs, id, "forged", 0)
	if ref := recvServe(t, theirs).GetRefused(); codes.Code(ref.GetCode()) != codes.NotFound || ref.GetMessage() != absentSentence(id) {
		t.Fatalf("another host's complete was answered %v, want NOT_FOUND with the absent sentence", ref)
	}
	got, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id})
	if err != nil || got.GetCapture() != nil {
		t.Fatalf("after the forged complete the driver collected %v, %v; want nothing yet", got, err)
	}
}

// The stream's first message opens the read, and only the first does.
func TestAServeStreamOpensFirstAndOnce(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "box", "echo")
	cases := map[string][]*mailboxv1.ServeRequest{
		"a complete first": {{Message: &mailboxv1.ServeRequest_Complete{Complete: &mailboxv1.CompleteRequest{Invocation: "x"}}}},
		"open twice": {
			{Message: &mailboxv1.ServeRequest_Open{Open: &mailboxv1.FollowRequest{}}},
			{Message: &mailboxv1.ServeRequest_Open{Open: &mailboxv1.FollowRequest{}}},
		},
	}
	for name, msgs := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(host("box"))
			defer cancel()
			stream, err := s.mb.Serve(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if err := stream.Send(m); err != nil {
					t.Fatal(err)
				}
			}
			for {
				ev, err := stream.Recv()
				if err == nil {
					if ev.GetOpened() == nil {
						t.Fatalf("the stream sent %v", ev)
					}
					continue
				}
				if status.Code(err) != codes.InvalidArgument {
					t.Fatalf("the stream ended with %v, want INVALID_ARGUMENT", err)
				}
				break
			}
		})
	}
}

// A driver may not open a host's stream.
func TestADriverMayNotServe(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	stream, err := s.mb.Serve(driver)
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.Send(&mailboxv1.ServeRequest{Message: &mailboxv1.ServeRequest_Open{Open: &mailboxv1.FollowRequest{}}})
	if _, err := stream.Recv(); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a driver's Serve ended with %v, want PERMISSION_DENIED", err)
	}
}
