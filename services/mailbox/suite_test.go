package mailbox_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/registry"
)

// suite is the real registry and the real mailbox served together on one
// loopback listener in dev mode, as `switchboard dev` serves them.
type suite struct {
	reg registryv1.RegistryServiceClient
	mb  mailboxv1.MailboxServiceClient
	svc *mailbox.Service
}

func newSuite(t testing.TB, tune ...func(*mailbox.Config)) *suite {
	t.Helper()
	log := logging.Discard()
	sec := config.Security{Dev: true}
	regSvc, err := registry.New(registry.Config{DataDir: t.TempDir(), WatchBuffer: 1024, MaxTools: 1024, Process: config.Process{Security: sec}}, log)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpcclient.Dial(lis.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mailbox.Config{TTL: time.Hour, MaxQueued: 10_000, MaxSlots: 1_000_000, MaxCaptureBytes: 4 << 20}
	for _, f := range tune {
		f(&cfg)
	}
	svc := mailbox.New(cfg, registryv1.NewRegistryServiceClient(conn), sec.Caller("mailbox"), log)
	srv := grpcserver.New(grpcserver.Options{Logger: log, ShutdownGrace: time.Second,
		Guard: identity.Guard{Auth: sec.Authenticator(), Policy: identity.Merge(registry.Policy, mailbox.Policy)}})
	regSvc.Register(srv)
	svc.Register(srv)
	ctx, cancel := context.WithCancel(context.Background())
	svc.Start(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		<-done
		conn.Close()
		regSvc.Close()
	})
	select {
	case <-svc.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("the mailbox's view never synced with the registry")
	}
	return &suite{reg: registryv1.NewRegistryServiceClient(conn), mb: mailboxv1.NewMailboxServiceClient(conn), svc: svc}
}

func as(name string, grade identity.Grade) context.Context {
	return identity.As(context.Background(), identity.Identity{Name: name, Grade: grade})
}

var driver = as("driver", identity.Operator)

func host(name string) context.Context { return as(name, identity.Host) }

// advertise gives client one tool per name.
func (s *suite) advertise(t testing.TB, client string, tools ...string) {
	t.Helper()
	var set []*registryv1.Tool
	for _, n := range tools {
		set = append(set, &registryv1.Tool{Name: n, Description: n, InputSchema: `{"type":"object"}`})
	}
	if _, err := s.reg.Advertise(host(client), &registryv1.AdvertiseRequest{Tools: set}); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) invoke(t testing.TB, client, tool, input string) string {
	t.Helper()
	res, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: client, Tool: tool, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	return res.GetInvocation()
}

// follow opens a Follow stream as client and reads its `opened` event.
func (s *suite) follow(t testing.TB, client string) (mailboxv1.MailboxService_FollowClient, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(host(client))
	stream, err := s.mb.Follow(ctx, &mailboxv1.FollowRequest{Session: proto.String("s-" + client)})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := stream.Recv()
	if err != nil || ev.GetOpened() == nil {
		t.Fatalf("first event %v, %v; want opened", ev, err)
	}
	return stream, cancel
}

func next(t testing.TB, stream mailboxv1.MailboxService_FollowClient) *mailboxv1.FollowResponse {
	t.Helper()
	ev, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func refused(t testing.TB, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || status.Convert(err).Message() != msg {
		t.Fatalf("got %v\nwant %v %q", err, code, msg)
	}
}

func absentSentence(id string) string {
	return `no invocation "` + id + `" is in flight; it was answered already, it expired, or this engine restarted since it was posted — the box may have run it; read the world before acting again`
}

var _ grpc.ClientConnInterface = (*grpc.ClientConn)(nil)
