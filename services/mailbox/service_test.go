package mailbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestInvokeChecksTheAdvertisementOnly(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	_, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: "{}"})
	testkit.Refused(t, err, codes.NotFound, `client "laptop" advertises no tool "grep" right now`)

	// Advertised a moment ago and never present: accepted all the same
	// (presence is not the routing predicate; a miss is confirmed with the
	// registry, so the view's lag never refuses a fresh advertisement).
	s.advertise(t, "laptop", "grep")
	id := s.invoke(t, "laptop", "grep", `{"pattern":"x"}`)
	if !strings.HasPrefix(id, "inv-") {
		t.Fatalf("handle %q", id)
	}
	for _, tt := range []struct {
		name string
		req  *mailboxv1.InvokeRequest
		msg  string
	}{
		{"an invalid client name", &mailboxv1.InvokeRequest{Client: "Laptop_1", Tool: "grep", Input: "{}"}, `invoke: client name "Laptop_1" is not 1–32 chars of [a-z0-9-] starting with a letter or digit`},
		{"no tool", &mailboxv1.InvokeRequest{Client: "laptop", Input: "{}"}, `missing field "tool"`},
		{"no input", &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep"}, `missing field "input": send the tool's input as JSON text, e.g. "{}"`},
		{"input that is not JSON", &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: "{nope"}, "input is not valid JSON"},
	} {
		_, err := s.mb.Invoke(driver, tt.req)
		testkit.Refused(t, err, codes.InvalidArgument, tt.msg)
	}
	_, err = s.mb.Invoke(host("laptop"), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "grep", Input: "{}"})
	testkit.Refused(t, err, codes.PermissionDenied, `"laptop" is a host and may not call MailboxService.Invoke`)
}

func TestRoundTripOverAFollowStream(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	stream, stop := s.follow(t, "laptop")
	defer stop()

	cwd := "/work"
	res, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: `{"big":12345678901234567890,"n":1.50}`, Cwd: &cwd})
	if err != nil {
		t.Fatal(err)
	}
	inv := next(t, stream).GetInvocation()
	if inv.GetInvocation() != res.GetInvocation() || inv.GetTool() != "echo" || inv.GetCwd() != "/work" || inv.GetDelivery() != 1 {
		t.Fatalf("handed %v", inv)
	}
	if inv.GetInput() != `{"big":12345678901234567890,"n":1.50}` {
		t.Fatalf("input not passed through byte for byte: %s", inv.GetInput())
	}
	c, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation()})
	if err != nil || c.Capture != nil {
		t.Fatalf("capture while running = %v, %v; want it absent", c, err)
	}
	receipt, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New("out", "", 0)})
	if err != nil || receipt.GetCapture().GetStdout() != "out" || receipt.GetCapture().ExitCode == nil {
		t.Fatalf("receipt %v, %v", receipt, err)
	}
	c, err = s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation()})
	if err != nil || c.GetCapture().GetStdout() != "out" {
		t.Fatalf("capture = %v, %v", c, err)
	}
	_, err = s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation()})
	testkit.Refused(t, err, codes.NotFound, absentSentence(inv.GetInvocation())) // read once
}

func TestCallWaitsForTheCapture(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	stream, stop := s.follow(t, "laptop")
	defer stop()
	go func() {
		ev, err := stream.Recv()
		if err != nil {
			return
		}
		inv := ev.GetInvocation()
		s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New(inv.GetInput(), "warn", 7)})
	}()
	ctx, cancel := context.WithTimeout(driver, 10*time.Second)
	defer cancel()
	res, err := s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: `[1,2]`})
	if err != nil || res.GetCapture().GetStdout() != "[1,2]" || res.GetCapture().GetExitCode() != 7 {
		t.Fatalf("call = %v, %v", res, err)
	}
}

// The MCP endpoint cancels a call its client gave up on by its handle, so
// Call names the handle in a header while the call still waits.
func TestCallNamesItsHandleInAHeaderBeforeTheCapture(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	follow, stop := s.follow(t, "laptop")
	defer stop()
	ctx, cancel := context.WithTimeout(driver, 10*time.Second)
	defer cancel()
	call, err := s.conn.NewStream(ctx, &grpc.StreamDesc{StreamName: "Call"}, mailboxv1.MailboxService_Call_FullMethodName)
	if err != nil {
		t.Fatal(err)
	}
	if err := call.SendMsg(&mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: `{}`}); err != nil {
		t.Fatal(err)
	}
	if err := call.CloseSend(); err != nil {
		t.Fatal(err)
	}
	md, err := call.Header() // the host has not answered: only the header can have come
	if err != nil {
		t.Fatal(err)
	}
	inv := next(t, follow).GetInvocation()
	if ids := md.Get(contract.InvocationHeader); len(ids) != 1 || ids[0] != inv.GetInvocation() {
		t.Fatalf("header %s = %q; want the handle handed to the host, %q", contract.InvocationHeader, ids, inv.GetInvocation())
	}
	if _, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New("out", "", 0)}); err != nil {
		t.Fatal(err)
	}
	var res mailboxv1.CallResponse
	if err := call.RecvMsg(&res); err != nil || res.GetInvocation() != inv.GetInvocation() || res.GetCapture().GetStdout() != "out" {
		t.Fatalf("call = %v, %v", &res, err)
	}
}

func TestCallReturnsTheHandleBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "slow")
	// Long enough that a loaded machine still posts well within it: the
	// wait ends 250 ms before the deadline, whatever the post took.
	ctx, cancel := context.WithTimeout(driver, 3*time.Second)
	defer cancel()
	res, err := s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "slow", Input: `{}`})
	if err != nil || res.GetInvocation() == "" || res.Capture != nil {
		t.Fatalf("call past its deadline = %v, %v; want the handle and no capture", res, err)
	}
	// The handle still collects: the invocation was not lost.
	c, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: res.GetInvocation()})
	if err != nil || c.Capture != nil {
		t.Fatalf("capture = %v, %v", c, err)
	}
}

func TestAHostThatDiesGetsTheInvocationAgain(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	stream, stop := s.follow(t, "laptop")
	id := s.invoke(t, "laptop", "echo", "{}")
	if got := next(t, stream).GetInvocation(); got.GetInvocation() != id {
		t.Fatalf("handed %v", got)
	}
	stop() // the host dies without completing

	stream2 := s.refollow(t, "laptop", 1)
	again := next(t, stream2).GetInvocation()
	if again.GetInvocation() != id || again.GetDelivery() != 2 {
		t.Fatalf("redelivered %v; want the same id, delivery 2", again)
	}
}

func TestASecondReaderIsRefused(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	_, stop := s.follow(t, "laptop")
	defer stop()
	want := `invocations: "laptop" is already holding this engine's follow-class read — one machine's queue has one reader`
	st, err := s.mb.Follow(host("laptop"), &mailboxv1.FollowRequest{})
	if err == nil {
		_, err = st.Recv()
	}
	testkit.Refused(t, err, codes.FailedPrecondition, want)
	_, err = s.mb.Invocations(host("laptop"), &mailboxv1.InvocationsRequest{})
	testkit.Refused(t, err, codes.FailedPrecondition, want)
}

func TestForeignIdentitiesGetTheAbsentSentence(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	id := s.invoke(t, "laptop", "echo", "{}")
	_, err := s.mb.Complete(host("desk"), &mailboxv1.CompleteRequest{Invocation: id, Capture: capture.New("", "", 0)})
	testkit.Refused(t, err, codes.NotFound, absentSentence(id))
	_, err = s.mb.Capture(testkit.As("mallory", identity.Driver), &mailboxv1.CaptureRequest{Invocation: id})
	testkit.Refused(t, err, codes.NotFound, absentSentence(id))
	_, err = s.mb.Cancel(testkit.As("mallory", identity.Driver), &mailboxv1.CancelRequest{Invocation: id})
	testkit.Refused(t, err, codes.NotFound, absentSentence(id))
}

func TestCompleteIsStrict(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	id := s.invoke(t, "laptop", "echo", "{}")
	str := func(v string) *string { return &v }
	code := func(v int32) *int32 { return &v }
	for _, tt := range []struct {
		c   *mailboxv1.Capture
		msg string
	}{
		{nil, `missing field "capture"`},
		{&mailboxv1.Capture{Stderr: str(""), ExitCode: code(0)}, `capture: missing field "stdout"`},
		{&mailboxv1.Capture{Stdout: str(""), ExitCode: code(0)}, `capture: missing field "stderr"`},
		{&mailboxv1.Capture{Stdout: str(""), Stderr: str("")}, `capture: missing field "exit_code"`},
		{&mailboxv1.Capture{Stdout: str(""), Stderr: str(""), ExitCode: code(0), Warning: str("trust me")}, `capture: "warning" is the mailbox's to set, not a host's`},
		{&mailboxv1.Capture{Stdout: str(""), Stderr: str(""), ExitCode: code(0), McpResult: str(`{"content":[`)}, `capture: mcp_result is not valid JSON`},
		{&mailboxv1.Capture{Stdout: str(""), Stderr: str(""), ExitCode: code(0), McpResult: str(`["text"]`)}, `capture: mcp_result is not a JSON object`},
		{&mailboxv1.Capture{Stdout: str(""), Stderr: str(""), ExitCode: code(1), McpError: str(`{"code":1}`)}, `capture: mcp_error {"code":1} lacks its code or its message`},
		{&mailboxv1.Capture{Stdout: str(""), Stderr: str(""), ExitCode: code(1), McpError: str(`{"code":1,"message":"m"}`), McpResult: str(`{}`)},
			`capture: "mcp_result" and "mcp_error" exclude each other; a server answers one`},
	} {
		_, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: id, Capture: tt.c})
		testkit.Refused(t, err, codes.InvalidArgument, tt.msg)
	}
}

func TestCancelReachesTheHostsStream(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	stream, id := s.running(t)
	res, err := s.mb.Cancel(driver, &mailboxv1.CancelRequest{Invocation: id})
	if err != nil || res.GetCapture().GetExitCode() != 130 {
		t.Fatalf("cancel = %v, %v", res, err)
	}
	if got := next(t, stream).GetCancelled().GetInvocation(); got != id {
		t.Fatalf("the host heard %q, want a cancellation of %s", got, id)
	}
}

func TestUnaryReadAnswersEverythingQueuedOrNothing(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	res, err := s.mb.Invocations(host("laptop"), &mailboxv1.InvocationsRequest{Wait: durationpb.New(100 * time.Millisecond)})
	if err != nil || len(res.GetRows()) != 0 {
		t.Fatalf("empty hold = %v, %v; want rows: []", res, err)
	}
	a, b := s.invoke(t, "laptop", "echo", "1"), s.invoke(t, "laptop", "echo", "2")
	res, err = s.mb.Invocations(host("laptop"), &mailboxv1.InvocationsRequest{})
	if err != nil || len(res.GetRows()) != 2 || res.GetRows()[0].GetInvocation() != a || res.GetRows()[1].GetInvocation() != b {
		t.Fatalf("rows = %v, %v", res, err)
	}
	// A read parked on an empty queue gets new work directly. The set is
	// advertised before the read opens: while a read is held, the serving
	// guard takes a different set only from the read's own session.
	s.advertise(t, "desk", "echo")
	got := make(chan *mailboxv1.InvocationsResponse, 1)
	go func() {
		r, _ := s.mb.Invocations(host("desk"), &mailboxv1.InvocationsRequest{})
		got <- r
	}()
	waitPresent(t, s, "desk", true) // the read is parked
	id := s.invoke(t, "desk", "echo", "{}")
	if r := <-got; len(r.GetRows()) != 1 || r.GetRows()[0].GetInvocation() != id {
		t.Fatalf("parked read got %v", r)
	}
	_, err = s.mb.Invocations(host("laptop"), &mailboxv1.InvocationsRequest{Wait: durationpb.New(31 * time.Second)})
	testkit.Refused(t, err, codes.InvalidArgument, "invocations: wait 31s is longer than the 30s allowed")
}

func TestPresenceFollowsTheRead(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	waitPresent(t, s, "laptop", false)
	_, stop := s.follow(t, "laptop")
	waitPresent(t, s, "laptop", true)
	stop()
	waitPresent(t, s, "laptop", false)
}

// waitPresent waits for the registry to show client's presence; presence
// travels mailbox → registry asynchronously.
func waitPresent(t testing.TB, s *suite, client string, want bool) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%s to be present=%v", client, want), 10*time.Second, func() bool {
		res, err := s.reg.GetClient(driver, &registryv1.GetClientRequest{Client: client})
		return err == nil && res.GetRow().GetPresent() == want
	})
}

// TestTwoReplicasShareTheQueues: a host reads on one replica while drivers
// call, capture and cancel through another, many at once.
func TestTwoReplicasShareTheQueues(t *testing.T) {
	t.Parallel()
	s, other := newTwoReplicas(t)
	s.advertise(t, "laptop", "echo")
	stream, stop := s.follow(t, "laptop")
	defer stop()
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			if inv := ev.GetInvocation(); inv != nil {
				go s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New(inv.GetInput(), "", 0)})
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for d := range 32 {
		wg.Go(func() {
			for n := range 20 {
				input := fmt.Sprintf(`{"d":%d,"n":%d}`, d, n)
				ctx, cancel := context.WithTimeout(driver, 30*time.Second)
				res, err := other.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: input})
				cancel()
				if err != nil || res.GetCapture().GetStdout() != input {
					errs <- fmt.Errorf("call %s through the other replica: %v, %v", input, res, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
