package mailbox_test

import (
	"context"
	"testing"
	"time"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// TestACertificateDriverSeesItsGrant: a driver whose credential states no
// workspaces (a certificate) sees what its grant record names, nothing
// without one, and only the clients of those workspaces are reachable (the
// mailbox's check) and visible (the bridge's).
func TestACertificateDriverSeesItsGrant(t *testing.T) {
	t.Parallel()
	s := mailboxtest.New(t, mailboxtest.Options{})
	v := registryview.New(s.Registry, identity.Self{Dev: true, Identity: identity.Identity{Name: "mailbox", Grade: identity.Service}}, logging.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go v.Run(ctx)
	<-v.Synced()

	admin := testkit.As("ops", identity.Admin)
	if _, err := s.Registry.Advertise(testkit.As("car", identity.Host), &registryv1.AdvertiseRequest{Tools: []*registryv1.Tool{
		{Name: "drive", Description: "", InputSchema: `{"type":"object"}`}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Registry.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: "ops", Client: "car"}); err != nil {
		t.Fatal(err)
	}
	alice := identity.Identity{Name: "alice", Grade: identity.Driver}
	sees := func() identity.Workspaces {
		t.Helper()
		w, err := v.Sees(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	reachable := func(w identity.Workspaces) bool {
		t.Helper()
		ok, err := v.Reachable(ctx, "car", "drive", w)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	visible := func(w identity.Workspaces) bool {
		t.Helper()
		ok, err := v.Visible(ctx, "car", w)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if w := sees(); !w.Empty() || reachable(w) || visible(w) {
		t.Fatalf("a driver without a grant sees %q", w.String())
	}
	if _, err := s.Registry.SetGrant(admin, &registryv1.SetGrantRequest{Identity: "alice", Workspaces: []string{"ops"}}); err != nil {
		t.Fatal(err)
	}
	// At once (confirmed with the registry while the view lags) and then
	// from the view.
	for range 2 {
		if w := sees(); w.String() != "ops" || !reachable(w) || !visible(w) {
			t.Fatalf("alice, granted ops, sees %q", w.String())
		}
	}
	dev, _ := identity.ParseWorkspaces([]string{"dev"})
	if reachable(dev) || visible(dev) {
		t.Fatal("car, in ops, is reachable or visible from dev")
	}
	if _, err := s.Registry.DeleteGrant(admin, &registryv1.DeleteGrantRequest{Identity: "alice"}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the removed grant to reach the view", 10*time.Second, func() bool { return sees().Empty() })
	// Admins and services see every workspace; hosts none.
	if w, _ := v.Sees(ctx, identity.Identity{Name: "root", Grade: identity.Admin}); !w.All() {
		t.Fatalf("an admin sees %q", w.String())
	}
	if w, _ := v.Sees(ctx, identity.Identity{Name: "car", Grade: identity.Host}); !w.Empty() {
		t.Fatalf("a host sees %q", w.String())
	}
}
