package registry_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// twoWorkspaces is box (grep) in dev and car (drive) in ops.
func twoWorkspaces(e *env) {
	e.advertise("box", tool("grep"))
	e.advertise("car", tool("drive"))
	e.register("dev", "box")
	e.register("ops", "car")
}

// TestOutsideItsWorkspacesEverythingIsAbsent: a driver whose token names
// dev gets, for ops, the sentences of things that do not exist.
func TestOutsideItsWorkspacesEverythingIsAbsent(t *testing.T) {
	t.Parallel()
	e := serve(t, nil, noDev)
	twoWorkspaces(e)
	alice := testkit.AsIn("alice", identity.Driver, "dev")

	_, err := e.reg.ListClients(alice, &registryv1.ListClientsRequest{Workspace: "ops"})
	testkit.Refused(t, err, codes.NotFound, `unknown workspace "ops"`)
	_, err = e.reg.ListTools(alice, &registryv1.ListToolsRequest{Workspace: "ops"})
	testkit.Refused(t, err, codes.NotFound, `unknown workspace "ops"`)
	_, err = e.reg.ResolveTool(alice, &registryv1.ResolveToolRequest{PresentedName: "car_drive"})
	testkit.Refused(t, err, codes.NotFound, `no tool is presented as "car_drive" right now; list the workspace's tools for the names in force`)
	_, err = e.reg.GetClient(alice, &registryv1.GetClientRequest{Client: "car"})
	testkit.Refused(t, err, codes.NotFound, `no client "car": it advertises no tools and belongs to no workspace`)
	stream, err := e.reg.WatchTools(alice, &registryv1.WatchToolsRequest{Workspace: proto.String("ops")})
	if err == nil {
		_, err = stream.Recv()
	}
	testkit.Refused(t, err, codes.NotFound, `unknown workspace "ops"`)

	// Inside it, all is there.
	if res, err := e.reg.ListTools(alice, &registryv1.ListToolsRequest{Workspace: "dev"}); err != nil || len(res.Tools) != 1 {
		t.Fatalf("ListTools(dev) = %v, %v", res, err)
	}
	if res, err := e.reg.ResolveTool(alice, &registryv1.ResolveToolRequest{PresentedName: "box_grep"}); err != nil || res.Client != "box" {
		t.Fatalf("ResolveTool(box_grep) = %v, %v", res, err)
	}
	// A client in both shows only the workspaces the caller may see.
	e.register("ops", "box")
	if res, err := e.reg.GetClient(alice, &registryv1.GetClientRequest{Client: "box"}); err != nil || len(res.Workspaces) != 1 || res.Workspaces[0] != "dev" {
		t.Fatalf("GetClient(box) = %v, %v; want its workspaces [dev]", res, err)
	}
	// Every workspace is every workspace.
	if res, err := e.reg.ListClients(testkit.AsIn("bob", identity.Driver, "*"), &registryv1.ListClientsRequest{Workspace: "ops"}); err != nil || len(res.Rows) != 2 {
		t.Fatalf("ListClients(ops) for *: %v, %v", res, err)
	}
}

// TestAWatchShowsOnlyGrantedWorkspaces: a driver's watch of everything
// holds the clients of its workspaces, and follows one that joins them.
func TestAWatchShowsOnlyGrantedWorkspaces(t *testing.T) {
	t.Parallel()
	e := serve(t, nil, noDev)
	twoWorkspaces(e)
	w := e.watchAs(testkit.AsIn("alice", identity.Driver, "dev"), e.reg, nil)
	var got []string
	for _, ev := range w.untilSynced() {
		got = append(got, describe(ev))
	}
	if want := []string{"advertised box [grep]", "registered dev/box"}; !slices.Equal(got, want) {
		t.Fatalf("snapshot %q, want %q", got, want)
	}
	e.advertise("car", tool("drive"), tool("park")) // not shown: car is in ops
	e.register("dev", "car")                        // now it is, with its set
	w.expect("registered dev/car", "advertised car [drive,park]")
}

// TestGrantsScopeCertificateDrivers runs in production mode: a driver
// certificate sees what its grant record names, nothing without one, and
// its watch starts over when the grant changes.
func TestGrantsScopeCertificateDrivers(t *testing.T) {
	t.Parallel()
	e := serveTLS(t)
	ctx := context.Background()
	for client, ws := range map[string]string{"box": "dev", "car": "ops"} {
		if _, err := e.dialAs(client, "host").Advertise(ctx, &registryv1.AdvertiseRequest{Tools: tools("t")}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.reg.RegisterClient(ctx, &registryv1.RegisterClientRequest{Workspace: ws, Client: client}); err != nil {
			t.Fatal(err)
		}
	}
	alice := e.dialAs("alice", "driver")
	_, err := alice.ListClients(ctx, &registryv1.ListClientsRequest{Workspace: "dev"})
	testkit.Refused(t, err, codes.NotFound, `unknown workspace "dev"`)
	_, err = alice.GetClient(ctx, &registryv1.GetClientRequest{Client: "box"})
	testkit.Refused(t, err, codes.NotFound, `no client "box": it advertises no tools and belongs to no workspace`)
	w := e.watchAs(ctx, alice, nil)
	if snap := w.untilSynced(); len(snap) != 0 {
		t.Fatalf("a driver without a grant watched %d events", len(snap))
	}

	set, err := e.reg.SetGrant(ctx, &registryv1.SetGrantRequest{Identity: "alice", Workspaces: []string{"dev"}})
	if err != nil || len(set.Grant.Workspaces) != 1 || set.Grant.Updated == nil {
		t.Fatalf("SetGrant = %v, %v", set, err)
	}
	if res, err := alice.ListClients(ctx, &registryv1.ListClientsRequest{Workspace: "dev"}); err != nil || len(res.Rows) != 1 {
		t.Fatalf("ListClients(dev) with a grant: %v, %v", res, err)
	}
	_, err = alice.ListTools(ctx, &registryv1.ListToolsRequest{Workspace: "ops"})
	testkit.Refused(t, err, codes.NotFound, `unknown workspace "ops"`)
	if ev := w.next(); ev.GetResync().GetReason() != `the grant of "alice" changed, and with it what this watch may see` {
		t.Fatalf("after the grant the watch sent %v, want a resync", ev)
	}
	var got []string
	for _, ev := range w.untilSynced() {
		got = append(got, describe(ev))
	}
	if want := []string{"advertised box [t]", "registered dev/box"}; !slices.Equal(got, want) {
		t.Fatalf("snapshot after the grant %q, want %q", got, want)
	}

	// A service may read a grant (it acts for drivers); only admins list.
	gw := e.dialAs("gateway", "service")
	if g, err := gw.GetGrant(ctx, &registryv1.GetGrantRequest{Identity: "alice"}); err != nil || g.Grant.Workspaces[0] != "dev" {
		t.Fatalf("GetGrant as the gateway: %v, %v", g, err)
	}
	_, err = gw.ListGrants(ctx, &registryv1.ListGrantsRequest{})
	testkit.Refused(t, err, codes.PermissionDenied, `"gateway" is a service and may not call RegistryService.ListGrants`)
	// What the gateway states for a token wins over the grant record.
	ws, _ := identity.ParseWorkspaces([]string{"ops"})
	asToken := identity.As(ctx, identity.Identity{Name: "alice", Grade: identity.Driver, Workspaces: &ws})
	if res, err := gw.ListClients(asToken, &registryv1.ListClientsRequest{Workspace: "ops"}); err != nil || len(res.Rows) != 1 {
		t.Fatalf("ListClients(ops) for alice's token: %v, %v", res, err)
	}

	if _, err := e.reg.DeleteGrant(ctx, &registryv1.DeleteGrantRequest{Identity: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, err = alice.ListClients(ctx, &registryv1.ListClientsRequest{Workspace: "dev"})
	testkit.Refused(t, err, codes.NotFound, `unknown workspace "dev"`)
	_, err = e.reg.GetGrant(ctx, &registryv1.GetGrantRequest{Identity: "alice"})
	testkit.Refused(t, err, codes.NotFound, `no grant for "alice": a driver certificate without one sees no workspace`)
}

func TestCertificatesWithoutAGradeAndAssertionsOutOfScopeAreRefused(t *testing.T) {
	t.Parallel()
	e := serveTLS(t)
	ctx := context.Background()
	_, err := e.dialAs("nobody", "").ListGrants(ctx, &registryv1.ListGrantsRequest{})
	testkit.Refused(t, err, codes.Unauthenticated,
		`the client certificate of "nobody" names no grade: its OU must be one of host, driver, admin, service or scrape, and it has none`)
	_, err = e.dialAs("gateway", "service").ListTools(testkit.As("mailbox", identity.Service), &registryv1.ListToolsRequest{Workspace: "dev"})
	testkit.Refused(t, err, codes.PermissionDenied,
		`"gateway" asserted "mailbox" as a service: nobody may act on behalf of a service; a service calls with its own certificate`)
	_, err = e.dialAs("bridge", "service").ListTools(testkit.As("alice", identity.Driver), &registryv1.ListToolsRequest{Workspace: "dev"})
	testkit.Refused(t, err, codes.PermissionDenied, `"bridge" asserted "alice" as a driver, but "bridge" may act only for hosts`)
	_, err = e.dialAs("mailbox", "service").Advertise(testkit.As("box", identity.Host), &registryv1.AdvertiseRequest{})
	testkit.Refused(t, err, codes.PermissionDenied, `"mailbox" asserted "box" as a host, but "mailbox" acts on behalf of nobody: its calls are its own`)
}

// A scraper's certificate (Prometheus's) reads metrics and nothing else:
// no RPC admits it, neither the catalog, nor grants, nor testing a token's
// secret.
func TestAScraperCallsNoRPC(t *testing.T) {
	t.Parallel()
	e := serveTLS(t)
	prom := e.dialAs("prometheus", "scrape")
	ctx := context.Background()
	_, err := prom.ListClients(ctx, &registryv1.ListClientsRequest{Workspace: "default"})
	testkit.Refused(t, err, codes.PermissionDenied, `"prometheus" is a scraper and may not call RegistryService.ListClients`)
	_, err = prom.ListGrants(ctx, &registryv1.ListGrantsRequest{})
	testkit.Refused(t, err, codes.PermissionDenied, `"prometheus" is a scraper and may not call RegistryService.ListGrants`)
	_, err = prom.AuthenticateToken(ctx, &registryv1.AuthenticateTokenRequest{Secret: "sbt_guess"})
	testkit.Refused(t, err, codes.PermissionDenied, `"prometheus" is a scraper and may not call RegistryService.AuthenticateToken`)
}

func TestGrantRefusals(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	_, err := e.reg.SetGrant(admin, &registryv1.SetGrantRequest{Identity: "alice"})
	testkit.Refused(t, err, codes.InvalidArgument,
		`set grant for "alice": name at least one workspace (or '*' for every workspace); to take a grant away, delete it`)
	_, err = e.reg.SetGrant(admin, &registryv1.SetGrantRequest{Identity: "alice", Workspaces: []string{"dev", "*"}})
	testkit.Refused(t, err, codes.InvalidArgument, `set grant for "alice": "*" stands for every workspace and comes alone, not with 1 others`)
	_, err = e.reg.SetGrant(admin, &registryv1.SetGrantRequest{Identity: " alice", Workspaces: []string{"dev"}})
	testkit.Refused(t, err, codes.InvalidArgument, `set grant: identity " alice" has leading or trailing spaces`)
	_, err = e.reg.DeleteGrant(admin, &registryv1.DeleteGrantRequest{Identity: "nobody"})
	testkit.Refused(t, err, codes.NotFound, `no grant for "nobody": a driver certificate without one sees no workspace`)
	// Names of any characters are kept under a key of their own.
	for _, name := range []string{"CN with spaces", "a.b", "ünï"} {
		if _, err := e.reg.SetGrant(admin, &registryv1.SetGrantRequest{Identity: name, Workspaces: []string{"*"}}); err != nil {
			t.Fatalf("SetGrant(%q): %v", name, err)
		}
	}
	list, err := e.reg.ListGrants(admin, &registryv1.ListGrantsRequest{})
	if err != nil || len(list.Grants) != 3 || list.Grants[0].Identity != "CN with spaces" || list.Grants[2].Identity != "ünï" {
		t.Fatalf("ListGrants = %v, %v", list, err)
	}
	// An admin watching everything is shown the grants.
	w := e.watch(nil)
	n := 0
	for _, ev := range w.untilSynced() {
		if ev.GetGranted() != nil {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("an admin's snapshot held %d grants, want 3", n)
	}
	if _, err := e.reg.DeleteGrant(admin, &registryv1.DeleteGrantRequest{Identity: "a.b"}); err != nil {
		t.Fatal(err)
	}
	if g := w.next().GetGranted(); g.GetIdentity() != "a.b" || len(g.GetWorkspaces()) != 0 {
		t.Fatalf("the removal reached the watch as %v", g)
	}
}
