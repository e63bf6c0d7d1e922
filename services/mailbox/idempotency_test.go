package mailbox_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
)

// keyed is ctx carrying the idempotency key k.
func keyed(ctx context.Context, k string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, contract.IdempotencyKey, k)
}

func TestAnInvokeRetriedWithItsKeyPostsOnce(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	invoke := func(ctx context.Context, input string) (string, error) {
		res, err := s.mb.Invoke(ctx, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: input})
		return res.GetInvocation(), err
	}
	first, err := invoke(keyed(driver, "order-1"), `{"n":1}`)
	if err != nil {
		t.Fatal(err)
	}
	again, err := invoke(keyed(driver, "order-1"), `{"n":1}`)
	if err != nil || again != first {
		t.Fatalf("the retry = %q, %v; want the first handle %q", again, err, first)
	}
	_, err = invoke(keyed(driver, "order-1"), `{"n":2}`)
	testkit.Refused(t, err, codes.FailedPrecondition, `idempotency key "order-1" named another call (invocation `+first+
		`, to another client or tool, or with other input) within the last 1h0m0s; use a new key for a new call`)
	// Keys are per poster: another driver's "order-1" is its own.
	other, err := invoke(keyed(testkit.As("driver-2", identity.Driver), "order-1"), `{"n":1}`)
	if err != nil || other == first {
		t.Fatalf("another driver's use of the key = %q, %v; want a handle of its own", other, err)
	}

	// The host is handed the two posts and nothing else.
	ctx, cancel := context.WithTimeout(host("laptop"), 10*time.Second)
	defer cancel()
	read, err := s.mb.Invocations(ctx, &mailboxv1.InvocationsRequest{Wait: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range read.GetRows() {
		got = append(got, r.GetInvocation())
	}
	if len(got) != 2 || !strings.Contains(strings.Join(got, " "), first) || !strings.Contains(strings.Join(got, " "), other) {
		t.Fatalf("the host read %q; want %s and %s once each", got, first, other)
	}
}

func TestACallRetriedWithItsKeyRunsOnce(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	stream, stop := s.follow(t, "laptop")
	defer stop()
	var runs atomic.Int32
	release := make(chan struct{})
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			inv := ev.GetInvocation()
			if inv == nil {
				continue
			}
			runs.Add(1)
			<-release
			_, _ = s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New(inv.GetInput(), "", 0)})
		}
	}()
	call := func(wait time.Duration) (*mailboxv1.CallResponse, error) {
		ctx, cancel := context.WithTimeout(keyed(driver, "job-7"), wait)
		defer cancel()
		return s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: `{"job":7}`})
	}
	// The first call's time runs out while the tool runs: the handle alone.
	first, err := call(time.Second)
	if err != nil || first.GetInvocation() == "" || first.GetCapture() != nil {
		t.Fatalf("the first call = %v, %v; want its handle and no capture", first, err)
	}
	close(release)
	// A retry collects the same invocation's answer; the next is answered
	// from the key, the capture having been taken.
	for i := range 2 {
		res, err := call(10 * time.Second)
		if err != nil || res.GetInvocation() != first.GetInvocation() || res.GetCapture().GetStdout() != `{"job":7}` {
			t.Fatalf("retry %d = %v, %v; want invocation %s answered", i+1, res, err, first.GetInvocation())
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the host ran the call %d times; want once", n)
	}
}

func TestIdempotencyKeysAreBounded(t *testing.T) {
	t.Parallel()
	s := newSuite(t, func(b *mailbox.Bounds) { b.MaxIdempotencyKeys = 2; b.MaxQueued = 3 })
	s.advertise(t, "laptop", "echo")
	invoke := func(key string) (string, error) {
		res, err := s.mb.Invoke(keyed(driver, key), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: `{}`})
		return res.GetInvocation(), err
	}
	for key, msg := range map[string]string{
		"":                       "idempotency key: 0 bytes; a key is 1 to 255 bytes of visible ASCII",
		strings.Repeat("k", 256): "idempotency key: 256 bytes; a key is 1 to 255 bytes of visible ASCII",
		"two words":              `idempotency key "two words": byte 3 (0x20) is not visible ASCII (! to ~)`,
	} {
		_, err := invoke(key)
		testkit.Refused(t, err, codes.InvalidArgument, msg)
	}
	_, err := s.mb.Invoke(keyed(keyed(driver, "a"), "b"), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: `{}`})
	testkit.Refused(t, err, codes.InvalidArgument, "idempotency key: 2 keys sent; send one")

	a, err := invoke("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := invoke("b"); err != nil {
		t.Fatal(err)
	}
	_, err = invoke("c")
	refusedWith(t, err, codes.ResourceExhausted, `idempotency keys: "driver" used 2 new keys on this mailbox replica since`)
	if again, err := invoke("a"); err != nil || again != a {
		t.Fatalf("a retry with a key in use = %q, %v; want %q: retries do not count", again, err, a)
	}
}

// A post a bound refused frees its key: the retry posts, rather than
// answering with the handle of an invocation that was never queued.
func TestARefusedPostFreesItsKey(t *testing.T) {
	t.Parallel()
	s := newSuite(t, func(b *mailbox.Bounds) { b.MaxQueued = 1 })
	s.advertise(t, "laptop", "echo")
	first := s.invoke(t, "laptop", "echo", `{}`)
	post := func() (string, error) {
		res, err := s.mb.Invoke(keyed(driver, "later"), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: `{"n":2}`})
		return res.GetInvocation(), err
	}
	_, err := post()
	refusedWith(t, err, codes.ResourceExhausted, "laptop")
	if _, err := s.mb.Cancel(driver, &mailboxv1.CancelRequest{Invocation: first}); err != nil {
		t.Fatal(err)
	}
	id, err := post()
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.mb.Status(driver, &mailboxv1.StatusRequest{Invocation: id})
	if err != nil || st.GetPhase() != mailboxv1.Phase_PHASE_QUEUED {
		t.Fatalf("status of the retried post %s = %v, %v; want queued", id, st, err)
	}
}

// refusedWith fails t unless err is a refusal with code whose sentence
// holds part.
func refusedWith(t *testing.T, err error, code codes.Code, part string) {
	t.Helper()
	if st, _ := status.FromError(err); err == nil || st.Code() != code || !strings.Contains(st.Message(), part) {
		t.Fatalf("err = %v; want %v holding %q", err, code, part)
	}
}

// A retry made while the key's first call still waits: whichever of the
// two takes the answer, both are answered with it, and the tool runs once.
func TestARetryBesideItsFirstCallIsAnsweredToo(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	stream, stop := s.follow(t, "laptop")
	defer stop()
	call := func() (*mailboxv1.CallResponse, error) {
		ctx, cancel := context.WithTimeout(keyed(driver, "twice"), 20*time.Second)
		defer cancel()
		return s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: `{"both":true}`})
	}
	type answer struct {
		res *mailboxv1.CallResponse
		err error
	}
	answers := make(chan answer, 2)
	go func() { res, err := call(); answers <- answer{res, err} }()
	inv := next(t, stream).GetInvocation() // the first call is posted and handed out
	// The retry comes while the first call waits, or as it is answered:
	// in either order both are answered.
	go func() { res, err := call(); answers <- answer{res, err} }()
	if _, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New("both", "", 0)}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		a := <-answers
		if a.err != nil || a.res.GetInvocation() != inv.GetInvocation() || a.res.GetCapture().GetStdout() != "both" {
			t.Fatalf("a call = %v, %v; want invocation %s answered", a.res, a.err, inv.GetInvocation())
		}
	}
}
