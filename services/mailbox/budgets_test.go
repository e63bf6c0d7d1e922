package mailbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// The byte budgets and read batches (docs/security.md): the accounting is
// the service's, the hand-offs the store's.

// jsonOf is an input of n bytes of JSON text.
func jsonOf(n int) string { return `"` + strings.Repeat("x", n-2) + `"` }

func TestAFloodPastAPostersBudgetIsRefusedWhileOthersPost(t *testing.T) {
	t.Parallel()
	func() {
		s := newSuite(t, func(b *mailbox.Bounds) { b.MaxInputBytes, b.MaxPosterBytes = 16<<10, 100<<10 })
		s.advertise(t, "laptop", "echo")
		alice, bob := testkit.As("alice", identity.Driver), testkit.As("bob", identity.Driver)
		var ids []string
		for range 6 { // 6 × (16 KiB + "echo") fit 100 KiB
			res, err := s.mb.Invoke(alice, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonOf(16 << 10)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.GetInvocation())
		}
		_, err := s.mb.Invoke(alice, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonOf(16 << 10)})
		testkit.Refused(t, err, codes.ResourceExhausted,
			`driver "alice" holds 98328 bytes of invocations and uncollected captures in this mailbox, and this invocation's 16388 more would pass the budget of 102400 per poster (--max-poster-bytes); collect or cancel what it posted first`)
		if _, err := s.mb.Invoke(bob, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonOf(16 << 10)}); err != nil {
			t.Fatalf("another poster's call: %v", err)
		}
		// A cancel gives its bytes back.
		if _, err := s.mb.Cancel(alice, &mailboxv1.CancelRequest{Invocation: ids[0], Reason: proto.String("enough")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.mb.Invoke(alice, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonOf(16 << 10)}); err != nil {
			t.Fatalf("after a cancel: %v", err)
		}
	}()
}

// Its bytes count whether they are text or an MCP server's result.
func TestAClientsBudgetCountsItsCaptureUntilCollected(t *testing.T) {
	t.Parallel()
	const n = 60 << 10
	result := `{"content":[],"x":"` + strings.Repeat("o", n-21) + `"}`
	for _, c := range []*mailboxv1.Capture{capture.New(strings.Repeat("o", n), "", 0), {McpResult: &result, Stdout: proto.String(""), Stderr: proto.String(""), ExitCode: proto.Int32(0)}} {
		s := newSuite(t, func(b *mailbox.Bounds) { b.MaxInputBytes, b.MaxClientBytes = 16<<10, 64<<10 })
		s.advertise(t, "laptop", "echo")
		s.advertise(t, "desk", "echo")
		id := s.invoke(t, "laptop", "echo", "{}")
		res, err := s.mb.Invocations(host("laptop"), &mailboxv1.InvocationsRequest{})
		if err != nil || len(res.GetRows()) != 1 {
			t.Fatalf("read %v, %v", res, err)
		}
		if _, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: id, Capture: c}); err != nil {
			t.Fatal(err)
		}
		_, err = s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonOf(8 << 10)})
		testkit.Refused(t, err, codes.ResourceExhausted,
			`client "laptop" has 61446 bytes of invocations and uncollected captures waiting in this mailbox, and this invocation's 8196 more would pass the budget of 65536 per client (--max-client-bytes); it is not answering (or its posters not collecting) fast enough`)
		s.invoke(t, "desk", "echo", jsonOf(8<<10)) // another client's budget is its own
		if _, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id}); err != nil {
			t.Fatal(err)
		}
		s.invoke(t, "laptop", "echo", jsonOf(8<<10)) // collected: released
	}
}

func TestBytesAreReleasedWhenTheInvocationExpires(t *testing.T) {
	t.Parallel()
	s := newSuite(t, func(b *mailbox.Bounds) {
		b.TTL, b.MaxInputBytes, b.MaxHeldBytes = time.Second, 16<<10, 20<<10
	})
	s.advertise(t, "laptop", "echo")
	s.invoke(t, "laptop", "echo", jsonOf(16<<10))
	_, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonOf(16 << 10)})
	testkit.Refused(t, err, codes.ResourceExhausted,
		`the mailbox holds 16388 bytes of invocations and uncollected captures, and this invocation's 16388 more would pass its budget of 20480 (--max-held-bytes); collect captures, cancel what is not needed, or wait for hosts to answer`)
	invokesSoon(t, s.mb, "expiry (a 1 s TTL)")
}

// invokesSoon waits until a post of 16 KiB to "laptop" is taken: the
// bytes that filled a budget were released by what, which happens apart
// from the call that caused it.
func invokesSoon(t *testing.T, mb mailboxv1.MailboxServiceClient, what string) {
	t.Helper()
	testkit.Await(t, what+" to release the bytes", 30*time.Second, func() error {
		_, err := mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonOf(16 << 10)})
		return err
	})
}

// TestA20MiBBacklogIsReadInBoundedBatches: twenty invocations of a MiB
// each reach their host over unary reads, each response well under the
// message limit, each invocation once and as its first hand-off.
func TestA20MiBBacklogIsReadInBoundedBatches(t *testing.T) {
	t.Parallel()
	func() {
		s := newSuite(t)
		s.advertise(t, "laptop", "echo")
		posted := map[string]bool{}
		for range 20 {
			posted[s.invoke(t, "laptop", "echo", jsonOf(mailbox.DefaultMaxInputBytes))] = true
		}
		seen := map[string]bool{}
		for reads := 0; len(seen) < len(posted); reads++ {
			if reads > 20 {
				t.Fatalf("20 reads delivered %d of %d invocations", len(seen), len(posted))
			}
			res, err := s.mb.Invocations(host("laptop"), &mailboxv1.InvocationsRequest{})
			if err != nil {
				t.Fatalf("read %d: %v", reads, err)
			}
			if n := proto.Size(res); n > mailbox.DefaultMaxReadBytes {
				t.Fatalf("read %d answered %d bytes, over the batch bound of %d", reads, n, mailbox.DefaultMaxReadBytes)
			}
			for _, row := range res.GetRows() {
				if !posted[row.GetInvocation()] || seen[row.GetInvocation()] || row.GetDelivery() != 1 {
					t.Fatalf("read %d handed %s (delivery %d): not a first hand-off of a posted invocation", reads, row.GetInvocation(), row.GetDelivery())
				}
				seen[row.GetInvocation()] = true
				if _, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: row.GetInvocation(), Capture: capture.New("ok", "", 0)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for id := range posted {
			c, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id})
			if err != nil || c.GetCapture().GetStderr() != "" || c.GetCapture().GetStdout() != "ok" {
				t.Fatalf("capture of %s: %v, %v; want the host's, with no hand-off sentence", id, c, err)
			}
		}
	}()
}

// failingSend is a Follow stream whose connection broke: every invocation
// sent on it fails.
type failingSend struct {
	grpc.ServerStream
	ctx context.Context
}

func (f failingSend) Context() context.Context { return f.ctx }

func (f failingSend) Send(ev *mailboxv1.FollowResponse) error {
	if ev.GetInvocation() != nil {
		return errors.New("the connection broke")
	}
	return nil
}

func TestAFollowSendThatFailsCountsNoHandOff(t *testing.T) {
	t.Parallel()
	func() {
		s := newSuite(t)
		s.advertise(t, "laptop", "echo")
		id := s.invoke(t, "laptop", "echo", "{}")
		ctx := identity.NewContext(context.Background(), identity.Identity{Name: "laptop", Grade: identity.Host})
		for range 4 { // past the hand-off cap
			err := s.svc.Follow(&mailboxv1.FollowRequest{Session: proto.String("broken")}, failingSend{ctx: ctx})
			if err == nil || !strings.Contains(err.Error(), "the connection broke") {
				t.Fatalf("follow on a broken stream: %v", err)
			}
		}
		stream, stop := s.follow(t, "laptop")
		defer stop()
		if inv := next(t, stream).GetInvocation(); inv.GetInvocation() != id || inv.GetDelivery() != 1 {
			t.Fatalf("handed %v; want %s as its first hand-off", inv, id)
		}
		receipt, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: id, Capture: capture.New("ok", "", 0)})
		if err != nil || receipt.GetCapture().GetStderr() != "" {
			t.Fatalf("receipt %v, %v; want the host's capture, with no hand-off sentence", receipt, err)
		}
	}()
}

// TestACancelThroughAnotherReplicaReleasesTheBytes: the budgets are
// each replica's, and the replica an invocation was posted through hears
// of its cancel through another.
func TestACancelThroughAnotherReplicaReleasesTheBytes(t *testing.T) {
	t.Parallel()
	b := mailboxtest.Defaults
	b.MaxInputBytes, b.MaxPosterBytes = 16<<10, 20<<10
	m := mailboxtest.New(t, mailboxtest.Options{Mailbox: b})
	other := m.Replica(t)
	s := &suite{reg: m.Registry, mb: m.Mailbox, svc: m.Service}
	s.advertise(t, "laptop", "echo")
	id := s.invoke(t, "laptop", "echo", jsonOf(16<<10))
	if _, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: jsonOf(16 << 10)}); err == nil {
		t.Fatal("a post past the poster's budget was taken")
	}
	if _, err := other.Cancel(driver, &mailboxv1.CancelRequest{Invocation: id}); err != nil {
		t.Fatal(err)
	}
	invokesSoon(t, s.mb, "a cancel through another replica")
}
