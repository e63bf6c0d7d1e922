package mailboxcall

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// drainingFirst answers as two replicas behind a balancer do when the
// first is shutting down: its first `refuse` Invokes and Calls are refused
// unposted (a Call after naming its handle, as the mailbox names it
// before it posts), the rest are answered.
type drainingFirst struct {
	mailboxv1.UnimplementedMailboxServiceServer
	refuse         int32
	invokes, calls atomic.Int32
	err            error // the refusal; contract.NotPosted by default
}

func (d *drainingFirst) refusal() error {
	if d.err != nil {
		return d.err
	}
	return contract.Refusal(status.New(codes.Unavailable, "the mailbox replica is shutting down"), contract.ReasonShuttingDown)
}

func (d *drainingFirst) Invoke(context.Context, *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error) {
	if n := d.invokes.Add(1); n <= d.refuse {
		return nil, d.refusal()
	}
	return &mailboxv1.InvokeResponse{Invocation: "inv-posted"}, nil
}

func (d *drainingFirst) Call(ctx context.Context, _ *mailboxv1.CallRequest) (*mailboxv1.CallResponse, error) {
	n := d.calls.Add(1)
	id := "inv-posted"
	if n <= d.refuse {
		id = fmt.Sprintf("inv-refused-%d", n)
	}
	_ = grpc.SendHeader(ctx, metadata.Pairs(contract.InvocationHeader, id))
	if n <= d.refuse {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(contract.RefusedTrailer, "1"))
		return nil, d.refusal()
	}
	return &mailboxv1.CallResponse{Invocation: id, Capture: &mailboxv1.Capture{Stdout: proto.String("ran")}}, nil
}

func serveMailbox(t *testing.T, d *drainingFirst) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	mailboxv1.RegisterMailboxServiceServer(srv, d)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient("passthrough:///mailbox", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestAnInvokeRefusedUnpostedIsMadeAgain(t *testing.T) {
	d := &drainingFirst{refuse: 2}
	mb := mailboxv1.NewMailboxServiceClient(RetryingNotPosted(serveMailbox(t, d)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := mb.Invoke(ctx, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo"})
	if err != nil || res.GetInvocation() != "inv-posted" || d.invokes.Load() != 3 {
		t.Fatalf("Invoke = %v, %v after %d tries; want inv-posted on the third", res, err, d.invokes.Load())
	}
	res2, err := mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo"})
	if err != nil || res2.GetCapture().GetStdout() != "ran" || d.calls.Load() != 3 {
		t.Fatalf("Call = %v, %v after %d tries; want the capture on the third", res2, err, d.calls.Load())
	}
}

func TestOnlyARefusalMarkedNotPostedIsMadeAgain(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"the mailbox cannot reach NATS (the post may be stored)", status.Error(codes.Unavailable, "the mailbox cannot reach NATS right now")},
		{"a bound", status.Error(codes.ResourceExhausted, "the queue is full")},
		{"another reason", contract.Refusal(status.New(codes.FailedPrecondition, "read already"), contract.ReasonSecondReader)},
	} {
		d := &drainingFirst{refuse: 1, err: c.err}
		cc := serveMailbox(t, d)
		_, err := mailboxv1.NewMailboxServiceClient(RetryingNotPosted(cc)).Invoke(context.Background(), &mailboxv1.InvokeRequest{})
		if status.Code(err) != status.Code(c.err) || d.invokes.Load() != 1 {
			t.Errorf("%s: Invoke = %v after %d tries; want the refusal, tried once", c.name, err, d.invokes.Load())
		}
		_, err = CallNamed(context.Background(), cc, &mailboxv1.CallRequest{}, nil, nil)
		if status.Code(err) != status.Code(c.err) || d.calls.Load() != 1 {
			t.Errorf("%s: CallNamed = %v after %d tries; want the refusal, tried once", c.name, err, d.calls.Load())
		}
	}
}

// A Call refused unposted after naming its handle is made again, and its
// front is told the new handle; the deadline ends the tries.
func TestACallRefusedUnpostedNamesItsNewHandle(t *testing.T) {
	d := &drainingFirst{refuse: 1}
	cc := serveMailbox(t, d)
	var named []string
	res, err := CallNamed(context.Background(), cc, &mailboxv1.CallRequest{}, func(id string) { named = append(named, id) }, nil)
	if err != nil || res.GetInvocation() != "inv-posted" {
		t.Fatalf("CallNamed = %v, %v; want the posted call's capture", res, err)
	}
	if len(named) != 2 || named[0] != "inv-refused-1" || named[1] != "inv-posted" {
		t.Errorf("named %q; want the refused handle, then the posted one", named)
	}

	always := &drainingFirst{refuse: 1 << 30}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = CallNamed(ctx, serveMailbox(t, always), &mailboxv1.CallRequest{}, nil, nil)
	if !contract.NotPosted(err) && status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a Call refused until its deadline = %v; want the refusal or the deadline", err)
	}
	if n := always.calls.Load(); n < 2 {
		t.Errorf("a Call refused until its deadline was tried %d times; want it tried again meanwhile", n)
	}
}
