package registry_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The registry's own acts reach its trail; a page of one event at a time
// walks through events sent in one batch, and a follow hears a new act.
func TestTheTrailPagesAndFollows(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	trail := registryv1.NewAuditServiceClient(e.cc)
	for _, name := range []string{"ann", "bob", "cy"} {
		if _, err := e.reg.SetGrant(admin, &registryv1.SetGrantRequest{Identity: name, Workspaces: []string{"ops"}}); err != nil {
			t.Fatal(err)
		}
	}
	var all []*registryv1.AuditEvent
	testkit.Eventually(t, "three grants in the trail", 10*time.Second, func() bool {
		res, err := trail.ListAudit(admin, &registryv1.ListAuditRequest{})
		all = res.GetEvents()
		return err == nil && len(all) == 3
	})
	var paged []string
	req := &registryv1.ListAuditRequest{PageSize: 1}
	for range 4 {
		res, err := trail.ListAudit(admin, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range res.GetEvents() {
			paged = append(paged, ev.GetTarget())
		}
		if req.PageToken = res.GetNextPageToken(); req.PageToken == "" {
			break
		}
	}
	if len(paged) != 3 || paged[0] != "ann" || paged[1] != "bob" || paged[2] != "cy" {
		t.Fatalf("paging one at a time read %v", paged)
	}
	if all[0].GetAction() != "grant.set" || all[0].GetActor() != "ops" || all[0].GetService() != "registry" || all[0].GetDetail() != "workspaces ops" {
		t.Fatalf("the first event reads %v", all[0])
	}
	// A driver sees none of an admin's acts; filters narrow.
	if res, err := trail.ListAudit(testkit.AsIn("ann", identity.Driver, "ops"), &registryv1.ListAuditRequest{}); err != nil || len(res.GetEvents()) != 0 {
		t.Fatalf("a driver reads %v, %v", res.GetEvents(), err)
	}
	if res, err := trail.ListAudit(admin, &registryv1.ListAuditRequest{Client: "bob"}); err != nil || len(res.GetEvents()) != 1 {
		t.Fatalf("--client bob reads %v, %v", res.GetEvents(), err)
	}
	if _, err := trail.ListAudit(admin, &registryv1.ListAuditRequest{PageToken: "page-2"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a token the trail never gave: %v", err)
	}

	ctx, cancel := context.WithTimeout(admin, 20*time.Second)
	defer cancel()
	follow, err := trail.FollowAudit(ctx, &registryv1.FollowAuditRequest{Action: "token.create"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: "dee", Grade: "driver", Workspaces: []string{"ops"}}); err != nil {
		t.Fatal(err)
	}
	res, err := follow.Recv()
	if got := res.GetEvent(); err != nil || got.GetAction() != "token.create" || got.GetDetail() != "driver dee of ops" {
		t.Fatalf("the follow heard %v, %v", res, err)
	}
}
