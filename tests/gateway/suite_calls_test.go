package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The suite's parties call the real services over gRPC, as they would:
// hosts advertise, read and complete; an admin joins clients to
// workspaces; drivers invoke and collect.

// The admin and the driver the tests call the services as.
var (
	opsCtx   = testkit.As("ops", identity.Admin)
	aliceCtx = testkit.As("alice", identity.Driver)
)

// advertise stores tools as client's set, calling as the host itself.
func (s *suite) advertise(t testing.TB, client string, tools ...*registryv1.Tool) {
	t.Helper()
	if _, err := s.Registry.Advertise(testkit.As(client, identity.Host), &registryv1.AdvertiseRequest{Tools: tools}); err != nil {
		t.Fatalf("%s advertising: %v", client, err)
	}
}

// join registers clients in workspace, as an admin.
func (s *suite) join(t testing.TB, workspace string, clients ...string) {
	t.Helper()
	for _, c := range clients {
		if _, err := s.Registry.RegisterClient(opsCtx, &registryv1.RegisterClientRequest{Workspace: workspace, Client: c}); err != nil {
			t.Fatalf("registering %s in %s: %v", c, workspace, err)
		}
	}
}

// invoke posts as poster (a driver) and returns the handle; the first
// handle a test posts is kept in inv.
func (s *suite) invoke(t testing.TB, poster, client, tool, input string, cwd *string) string {
	t.Helper()
	res, err := s.Mailbox.Invoke(testkit.As(poster, identity.Driver), &mailboxv1.InvokeRequest{Client: client, Tool: tool, Input: input, Cwd: cwd})
	if err != nil {
		t.Fatalf("%s invoking %s on %s: %v", poster, tool, client, err)
	}
	if s.inv == "" {
		s.inv = res.GetInvocation()
	}
	return res.GetInvocation()
}

// read is one unary read as the host client: it answers at once with what
// is queued (each row handed out once more), or fails after 10 s.
func (s *suite) read(t testing.TB, client string) []*mailboxv1.Invocation {
	t.Helper()
	res, err := s.Mailbox.Invocations(testkit.As(client, identity.Host), &mailboxv1.InvocationsRequest{Wait: durationpb.New(10 * time.Second)})
	if err != nil {
		t.Fatalf("%s reading its queue: %v", client, err)
	}
	if len(res.GetRows()) == 0 {
		t.Fatalf("%s found its queue empty", client)
	}
	return res.GetRows()
}

// complete answers id as the host client. It returns the error rather than
// failing, so that a goroutine may call it.
func (s *suite) complete(client, id string, c *mailboxv1.Capture) error {
	_, err := s.Mailbox.Complete(testkit.As(client, identity.Host), &mailboxv1.CompleteRequest{Invocation: id, Capture: c})
	return err
}

// collect reads id's capture as its poster, without waiting.
func (s *suite) collect(t testing.TB, poster, id string) *mailboxv1.CaptureResponse {
	t.Helper()
	res, err := s.Mailbox.Capture(testkit.As(poster, identity.Driver), &mailboxv1.CaptureRequest{Invocation: id})
	if err != nil {
		t.Fatalf("%s collecting %s: %v", poster, id, err)
	}
	return res
}

// report is a progress note on id from the host client.
func (s *suite) report(t testing.TB, client, id string, progress float64, total *float64, message string) {
	t.Helper()
	_, err := s.Mailbox.Report(testkit.As(client, identity.Host), &mailboxv1.ReportRequest{Invocation: id, Progress: progress, Total: total, Message: message})
	if err != nil {
		t.Fatalf("%s reporting on %s: %v", client, id, err)
	}
}

// status reads id as its poster, without waiting.
func (s *suite) status(t testing.TB, poster, id string) *mailboxv1.StatusResponse {
	t.Helper()
	res, err := s.Mailbox.Status(testkit.As(poster, identity.Driver), &mailboxv1.StatusRequest{Invocation: id})
	if err != nil {
		t.Fatalf("%s asking the status of %s: %v", poster, id, err)
	}
	return res
}

// collectWaiting is a capture request that waits up to 10 s.
func collectWaiting(id string) *mailboxv1.CaptureRequest {
	return &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb.New(10 * time.Second)}
}

// answer is a complete request with stdout and a clean exit.
func answer(id, stdout string) *mailboxv1.CompleteRequest {
	return &mailboxv1.CompleteRequest{Invocation: id, Capture: capture.New(stdout, "", 0)}
}

// hold opens the host client's Follow read and keeps it until the test
// ends: the client is present, and its queue has its one reader.
func (s *suite) hold(t testing.TB, client string) {
	t.Helper()
	s.follow(t, client)
}

// present waits until the registry reports client present: the mailbox
// tells it of every read on a stream of its own, so a read the mailbox has
// opened reaches the registry a moment later. It watches the registry's
// change stream (its snapshot carries the clients present already) rather
// than polling, and returns an error so that a goroutine may call it.
func (s *suite) present(client string) error {
	ctx, cancel := context.WithTimeout(opsCtx, 10*time.Second)
	defer cancel()
	stream, err := s.Registry.WatchTools(ctx, &registryv1.WatchToolsRequest{})
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return errors.Join(errors.New("the registry never reported "+client+" present"), err)
		}
		if p := ev.GetPresence(); p.GetClient() == client && p.GetPresent() {
			return nil
		}
	}
}

// follower is a tool host of the test's own on the mailbox's Follow
// stream: it reports each invocation it is handed and each cancellation
// it is told of, and never answers on its own.
type follower struct {
	invocations chan *mailboxv1.Invocation
	cancelled   chan string
}

// follow opens client's Follow stream and reads it until the test ends.
func (s *suite) follow(t testing.TB, client string) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(testkit.As(client, identity.Host))
	t.Cleanup(cancel)
	stream, err := s.Mailbox.Follow(ctx, &mailboxv1.FollowRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := stream.Recv(); err != nil || ev.GetOpened() == nil {
		t.Fatalf("%s's follow read opened with %v, %v", client, ev, err)
	}
	f := &follower{invocations: make(chan *mailboxv1.Invocation, 8), cancelled: make(chan string, 8)}
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			if inv := ev.GetInvocation(); inv != nil {
				f.invocations <- inv
			}
			if c := ev.GetCancelled(); c != nil {
				f.cancelled <- c.GetInvocation()
			}
		}
	}()
	return f
}

// waiter advertises one tool "wait" as client, follows its queue, and
// joins it to the default workspace: a host whose calls run until the test
// answers them.
func (s *suite) waiter(t testing.TB, client string) *follower {
	t.Helper()
	s.advertise(t, client, &registryv1.Tool{Name: "wait", Description: "Never answers on its own.", InputSchema: `{"type":"object"}`})
	f := s.follow(t, client)
	s.join(t, "default", client)
	return f
}

// mountConformance mounts the Go SDK's conformance server (stdio) on the
// bridge as "conf" and registers it in the default workspace.
func (s *suite) mountConformance(t testing.TB) {
	t.Helper()
	cfg := &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: testkit.Tool(t, "everything-server")}}}
	st, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "conf", Config: cfg})
	if err != nil || st.GetServer().GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("Mount(conf) = %v, %v", st, err)
	}
	s.join(t, "default", "conf")
}
