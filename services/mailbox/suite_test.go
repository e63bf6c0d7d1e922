package mailbox_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// suite is the real registry and the real mailbox served together on one
// loopback listener in dev mode, as `switchboard dev` serves them.
type suite struct {
	reg  registryv1.RegistryServiceClient
	mb   mailboxv1.MailboxServiceClient
	conn *grpc.ClientConn // the mailbox's connection, for calls the generated client cannot make
	svc  *mailbox.Service
	stop func() // shuts the server down as SIGTERM does
}

func newSuite(t testing.TB, tune ...func(*mailbox.Bounds)) *suite {
	t.Helper()
	cfg := mailboxtest.Defaults
	for _, f := range tune {
		f(&cfg)
	}
	s := mailboxtest.New(t, mailboxtest.Options{Mailbox: cfg})
	return &suite{reg: s.Registry, mb: s.Mailbox, conn: s.Conn, svc: s.Service, stop: s.Stop}
}

// newTwoReplicas is a suite and a second mailbox replica beside it,
// sharing its NATS and registry.
func newTwoReplicas(t testing.TB) (*suite, mailboxv1.MailboxServiceClient) {
	t.Helper()
	ms := mailboxtest.New(t, mailboxtest.Options{})
	return &suite{reg: ms.Registry, mb: ms.Mailbox, conn: ms.Conn, svc: ms.Service, stop: ms.Stop}, ms.Replica(t)
}

var driver = testkit.As("driver", identity.Driver)

func host(name string) context.Context { return testkit.As(name, identity.Host) }

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

// refollow follows as client again once its last read has ended (the
// server releases the read when it sees the stream end), expecting the
// requeued invocations it held back.
func (s *suite) refollow(t testing.TB, client string, requeued int32) mailboxv1.MailboxService_FollowClient {
	t.Helper()
	var stream mailboxv1.MailboxService_FollowClient
	testkit.Eventually(t, client+"'s read to be released", 10*time.Second, func() bool {
		ctx, cancel := context.WithCancel(host(client))
		st, err := s.mb.Follow(ctx, &mailboxv1.FollowRequest{})
		if err == nil {
			if ev, err := st.Recv(); err == nil && ev.GetOpened() != nil {
				if got := ev.GetOpened().GetRequeued(); got != requeued {
					t.Fatalf("requeued = %d, want %d", got, requeued)
				}
				stream = st
				t.Cleanup(cancel)
				return true
			}
		}
		cancel()
		return false
	})
	return stream
}

// running posts a call of "slow" to laptop, which follows, and returns
// laptop's stream once it has been handed the call, and the call's id.
func (s *suite) running(t testing.TB) (mailboxv1.MailboxService_FollowClient, string) {
	t.Helper()
	stream, id, stop := s.handed(t)
	t.Cleanup(stop)
	return stream, id
}

// handed is running, and returns the function that ends laptop's read.
func (s *suite) handed(t testing.TB) (mailboxv1.MailboxService_FollowClient, string, context.CancelFunc) {
	t.Helper()
	s.advertise(t, "laptop", "slow")
	stream, stop := s.follow(t, "laptop")
	id := s.invoke(t, "laptop", "slow", "{}")
	if got := next(t, stream).GetInvocation().GetInvocation(); got != id {
		stop()
		t.Fatalf("handed %s, want %s", got, id)
	}
	return stream, id, stop
}

// ask reports q on invocation id as laptop, its host.
func (s *suite) ask(id string, q *mailboxv1.Question) error {
	_, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Question: q})
	return err
}

func next(t testing.TB, stream mailboxv1.MailboxService_FollowClient) *mailboxv1.FollowResponse {
	t.Helper()
	ev, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func absentSentence(id string) string {
	return `no invocation "` + id + `" is in flight; it was answered already, it expired, or this engine restarted since it was posted — the box may have run it; read the world before acting again`
}
