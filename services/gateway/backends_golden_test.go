package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/process"
	"github.com/switchboard-run/switchboard/services/bridge"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// backends is one golden case's world: the real registry, mailbox and
// bridge, served in process on one loopback listener in dev mode (as
// `switchboard dev` serves them), and the real gateway in front of them.
// The case drives their state with real calls, as the parties would.
type backends struct {
	*mailboxtest.Suite
	gw *testGateway
	// drain shuts the suite's server down as its process would on SIGTERM:
	// the mailbox ends every held read with what it holds.
	drain func()
	// inv is the first handle the case posted; it replaces handle in the
	// request, so the request names a real invocation.
	inv string
}

func newBackends(t *testing.T) *backends {
	t.Helper()
	sec := process.Security{Dev: true}
	var srv *grpcserver.Server
	var br *bridge.Service
	s := mailboxtest.New(t, mailboxtest.Options{Policy: bridge.Policy, Register: func(g *grpcserver.Server, conn *grpc.ClientConn) {
		var err error
		br, err = bridge.New(bridge.Config{Flags: process.Flags{Security: sec}},
			registryv1.NewRegistryServiceClient(conn), mailboxv1.NewMailboxServiceClient(conn), logging.Discard())
		if err != nil {
			t.Fatal(err)
		}
		br.Register(g)
		srv = g
	}})
	t.Cleanup(br.Close)
	gw := startGateway(t, Config{Flags: process.Flags{Security: sec}}, s.Addr, nil, identity.Self{Dev: true, Identity: devSelf})
	return &backends{Suite: s, gw: gw, drain: srv.Shutdown}
}

// callAs is a context that calls the suite as name with grade (dev mode).
func callAs(name string, grade identity.Grade) context.Context {
	return identity.As(context.Background(), identity.Identity{Name: name, Grade: grade})
}

// advertise stores tools as client's set, calling as the host itself.
func (b *backends) advertise(t *testing.T, client string, tools ...*registryv1.Tool) {
	t.Helper()
	if _, err := b.Registry.Advertise(callAs(client, identity.Host), &registryv1.AdvertiseRequest{Tools: tools}); err != nil {
		t.Fatalf("%s advertising: %v", client, err)
	}
}

// join registers clients in workspace, as an operator.
func (b *backends) join(t *testing.T, workspace string, clients ...string) {
	t.Helper()
	for _, c := range clients {
		if _, err := b.Registry.RegisterClient(callAs("ops", identity.Operator), &registryv1.RegisterClientRequest{Workspace: workspace, Client: c}); err != nil {
			t.Fatalf("registering %s in %s: %v", c, workspace, err)
		}
	}
}

// invoke posts as poster (an operator) and returns the handle; the first
// handle a case posts is the one its request names.
func (b *backends) invoke(t *testing.T, poster, client, tool, input string, cwd *string) string {
	t.Helper()
	res, err := b.Mailbox.Invoke(callAs(poster, identity.Operator), &mailboxv1.InvokeRequest{Client: client, Tool: tool, Input: input, Cwd: cwd})
	if err != nil {
		t.Fatalf("%s invoking %s on %s: %v", poster, tool, client, err)
	}
	if b.inv == "" {
		b.inv = res.GetInvocation()
	}
	return res.GetInvocation()
}

// read is one unary read as the host client: it answers at once with what
// is queued (each row handed out once more), or fails after 10 s.
func (b *backends) read(t *testing.T, client string) []*mailboxv1.Invocation {
	t.Helper()
	res, err := b.Mailbox.Invocations(callAs(client, identity.Host), &mailboxv1.InvocationsRequest{Wait: durationpb.New(10 * time.Second)})
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
func (b *backends) complete(client, id string, c *mailboxv1.Capture) error {
	_, err := b.Mailbox.Complete(callAs(client, identity.Host), &mailboxv1.CompleteRequest{Invocation: id, Capture: c})
	return err
}

// collect reads id's capture as its poster, without waiting.
func (b *backends) collect(t *testing.T, poster, id string) *mailboxv1.CaptureResponse {
	t.Helper()
	res, err := b.Mailbox.Capture(callAs(poster, identity.Operator), &mailboxv1.CaptureRequest{Invocation: id})
	if err != nil {
		t.Fatalf("%s collecting %s: %v", poster, id, err)
	}
	return res
}

// hold opens the host client's Follow read and keeps it until the test
// ends: the client is present, and its queue has its one reader.
func (b *backends) hold(t *testing.T, client string) {
	t.Helper()
	ctx, cancel := context.WithCancel(callAs(client, identity.Host))
	t.Cleanup(cancel)
	stream, err := b.Mailbox.Follow(ctx, &mailboxv1.FollowRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := stream.Recv(); err != nil || ev.GetOpened() == nil {
		t.Fatalf("%s's follow read opened with %v, %v", client, ev, err)
	}
}

// present waits until the registry reports client present: the mailbox
// tells it of every read on a stream of its own, so a read the mailbox has
// opened reaches the registry a moment later. It watches the registry's
// change stream (its snapshot carries the clients present already) rather
// than polling, and returns an error so that a goroutine may call it.
func (b *backends) present(client string) error {
	ctx, cancel := context.WithTimeout(callAs("ops", identity.Operator), 10*time.Second)
	defer cancel()
	stream, err := b.Registry.WatchTools(ctx, &registryv1.WatchToolsRequest{})
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
