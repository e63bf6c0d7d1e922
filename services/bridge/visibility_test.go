package bridge

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// join registers client in workspace, as an admin.
func (s *suite) join(t testing.TB, workspace, client string) {
	t.Helper()
	if _, err := s.reg.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: workspace, Client: client}); err != nil {
		t.Fatalf("registering %s in %s: %v", client, workspace, err)
	}
}

// catalogCalls are the six catalog RPCs about client, each returning its
// refusal (nil when it answered).
func catalogCalls(s *suite, client string) map[string]func(ctx context.Context) error {
	return map[string]func(ctx context.Context) error{
		"ListResources": func(ctx context.Context) error {
			_, err := s.bridge.ListResources(ctx, &bridgev1.ListResourcesRequest{Client: client})
			return err
		},
		"ListResourceTemplates": func(ctx context.Context) error {
			_, err := s.bridge.ListResourceTemplates(ctx, &bridgev1.ListResourceTemplatesRequest{Client: client})
			return err
		},
		"ListPrompts": func(ctx context.Context) error {
			_, err := s.bridge.ListPrompts(ctx, &bridgev1.ListPromptsRequest{Client: client})
			return err
		},
		"ReadResource": func(ctx context.Context) error {
			_, err := s.bridge.ReadResource(ctx, &bridgev1.ReadResourceRequest{Client: client, Uri: "test://static-text"})
			return err
		},
		"GetPrompt": func(ctx context.Context) error {
			_, err := s.bridge.GetPrompt(ctx, &bridgev1.GetPromptRequest{Client: client, Name: "test_simple_prompt"})
			return err
		},
		"Complete": func(ctx context.Context) error {
			_, err := s.bridge.Complete(ctx, &bridgev1.CompleteRequest{Client: client, Prompt: "test_prompt_with_arguments", Argument: "arg1", Value: "p"})
			return err
		},
	}
}

// listed reports whether client is a row of ListServers for ctx's caller.
func (s *suite) listed(t testing.TB, ctx context.Context, client string) bool {
	t.Helper()
	res, err := s.bridge.ListServers(ctx, &bridgev1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.GetServers() {
		if r.GetClient() == client {
			return true
		}
	}
	return false
}

// TestAServerOutsideTheCallersWorkspacesIsAbsent: conf's client sits in
// workspace b only. A driver of a is told of every catalog RPC what it
// would be told once nothing is mounted as conf, and ListServers leaves it
// out; a driver of b and an admin are served.
func TestAServerOutsideTheCallersWorkspacesIsAbsent(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.join(t, "b", "conf")
	s.mount(t, "conf", stdioServer(testkit.Tool(t, "everything-server")))
	s.awaitState(t, "conf", bridgev1.State_STATE_RUNNING)

	inA := testkit.AsIn("alice", identity.Driver, "a")
	inB := testkit.AsIn("bob", identity.Driver, "b")
	calls := catalogCalls(s, "conf")
	refusals := map[string]*status.Status{}
	for name, call := range calls {
		err := call(inA)
		if status.Code(err) != codes.NotFound {
			t.Fatalf("%s of conf by a driver of a: %v; want NotFound", name, err)
		}
		refusals[name] = status.Convert(err)
		if err := call(inB); err != nil {
			t.Fatalf("%s of conf by a driver of b: %v", name, err)
		}
		if err := call(admin); err != nil {
			t.Fatalf("%s of conf by an admin: %v", name, err)
		}
	}
	if s.listed(t, inA, "conf") {
		t.Fatal("ListServers shows conf to a driver of a")
	}
	if !s.listed(t, inB, "conf") || !s.listed(t, admin, "conf") {
		t.Fatal("ListServers hides conf from a driver of b or from an admin")
	}
	// Seeing no workspace at all is seeing nothing.
	if err := calls["ListPrompts"](testkit.AsIn("nobody", identity.Driver)); status.Code(err) != codes.NotFound {
		t.Fatalf("ListPrompts of conf by a driver of no workspace: %v; want NotFound", err)
	}

	// Once conf is unmounted, an admin hears the sentence the driver of a
	// heard: the same bytes, so the refusal tells nothing of conf.
	if _, err := s.bridge.Unmount(admin, &bridgev1.UnmountRequest{Client: "conf"}); err != nil {
		t.Fatal(err)
	}
	for name, call := range calls {
		got := status.Convert(call(admin))
		if got.Code() != refusals[name].Code() || got.Message() != refusals[name].Message() {
			t.Fatalf("%s: an unmounted conf is refused %s %q, a conf outside the workspaces %s %q",
				name, got.Code(), got.Message(), refusals[name].Code(), refusals[name].Message())
		}
	}
}

// TestAJoinIsSeenAtOnce: a server whose client has just joined the
// caller's workspace is served on the next call, whether or not the
// bridge's view of the registry has heard of the join yet (a miss is asked
// of the registry), and is absent again once it leaves.
func TestAJoinIsSeenAtOnce(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.mount(t, "conf", stdioServer(testkit.Tool(t, "everything-server")))
	s.awaitState(t, "conf", bridgev1.State_STATE_RUNNING)
	inA := testkit.AsIn("alice", identity.Driver, "a")
	read := calls(s, "conf", "ReadResource")
	if err := read(inA); status.Code(err) != codes.NotFound {
		t.Fatalf("a read of conf, in no workspace, by a driver of a: %v; want NotFound", err)
	}
	s.join(t, "a", "conf")
	if err := read(inA); err != nil {
		t.Fatalf("a read of conf, just joined to a, by a driver of a: %v", err)
	}
	if _, err := s.reg.UnregisterClient(admin, &registryv1.UnregisterClientRequest{Workspace: "a", Client: "conf"}); err != nil {
		t.Fatal(err)
	}
	// A withdrawn membership may be honoured for as long as the view lags.
	testkit.Eventually(t, "conf absent to a driver of a again", 10*time.Second, func() bool {
		return status.Code(read(inA)) == codes.NotFound
	})
}

func calls(s *suite, client, name string) func(context.Context) error {
	return catalogCalls(s, client)[name]
}

// TestWatchCatalogTellsACallerOfTheServersItSees: a driver of a hears of
// other, in a, and nothing of conf, in b; a driver of b the reverse.
func TestWatchCatalogTellsACallerOfTheServersItSees(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.join(t, "a", "other")
	s.join(t, "b", "conf")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	watch := func(name, workspace string) bridgev1.BridgeService_WatchCatalogClient {
		t.Helper()
		ws, err := identity.ParseWorkspaces([]string{workspace})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := s.bridge.WatchCatalog(identity.As(ctx, identity.Identity{Name: name, Grade: identity.Driver, Workspaces: &ws}), &bridgev1.WatchCatalogRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := stream.Recv(); err != nil || ev.GetChange() != bridgev1.CatalogChange_CATALOG_CHANGE_SYNCED {
			t.Fatalf("first event = %v, %v; want SYNCED", ev, err)
		}
		return stream
	}
	inA := watch("alice", "a")
	inB := watch("bob", "b")
	// until reads stream until the n-th MOUNTS event of client, failing on
	// any event of hidden.
	until := func(stream bridgev1.BridgeService_WatchCatalogClient, client string, n int, hidden string) {
		t.Helper()
		for n > 0 {
			ev, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetClient() == hidden {
				t.Fatalf("a watcher that may not see %s heard %v", hidden, ev)
			}
			if ev.GetChange() == bridgev1.CatalogChange_CATALOG_CHANGE_MOUNTS && ev.GetClient() == client {
				n--
			}
		}
	}
	everything := testkit.Tool(t, "everything-server")
	s.mount(t, "other", stdioServer(everything))
	s.mount(t, "conf", stdioServer(everything))
	if _, err := s.bridge.Unmount(admin, &bridgev1.UnmountRequest{Client: "other"}); err != nil {
		t.Fatal(err)
	}
	// Each stream delivers in order: a's reaches other's unmount after
	// every event of conf's mount; b's reaches conf's mount after every
	// event of other's.
	until(inA, "other", 2, "conf")
	until(inB, "conf", 1, "other")
}
