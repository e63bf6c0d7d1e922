package registry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A workspace's audit policy: metadata by default, set by an admin only,
// read by its drivers, told to watchers live and in snapshots, and the
// change itself in the trail.
func TestAnAuditPolicyIsSetReadAndWatched(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	trail := registryv1.NewAuditServiceClient(e.cc)
	ann := testkit.AsIn("ann", identity.Driver, "ops")
	if res, err := trail.GetAuditPolicy(ann, &registryv1.GetAuditPolicyRequest{Workspace: "ops"}); err != nil || res.GetPolicy().GetRecordIo() {
		t.Fatalf("the default policy reads %v, %v; want record_io off", res, err)
	}
	if _, err := trail.SetAuditPolicy(ann, &registryv1.SetAuditPolicyRequest{Workspace: "ops", Policy: &registryv1.AuditPolicy{RecordIo: true}}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a driver setting the policy: %v, want PermissionDenied", err)
	}
	for _, bad := range []struct {
		req  *registryv1.SetAuditPolicyRequest
		says string
	}{
		{&registryv1.SetAuditPolicyRequest{Workspace: "no spaces", Policy: &registryv1.AuditPolicy{}}, `"no spaces"`},
		{&registryv1.SetAuditPolicyRequest{Workspace: "ops"}, `missing field "policy"`},
	} {
		_, err := trail.SetAuditPolicy(admin, bad.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), bad.says) {
			t.Fatalf("SetAuditPolicy(%v): %v, want InvalidArgument saying %s", bad.req, err, bad.says)
		}
	}
	if _, err := trail.GetAuditPolicy(testkit.AsIn("ann", identity.Driver, "ops"), &registryv1.GetAuditPolicyRequest{Workspace: "elsewhere"}); status.Code(err) != codes.NotFound {
		t.Fatalf("a workspace the caller does not see: %v, want NotFound", err)
	}

	live := e.watch(nil)
	live.untilSynced()
	if _, err := trail.SetAuditPolicy(admin, &registryv1.SetAuditPolicyRequest{Workspace: "ops", Policy: &registryv1.AuditPolicy{RecordIo: true}}); err != nil {
		t.Fatal(err)
	}
	if ev := live.next().GetAuditPolicy(); ev.GetWorkspace() != "ops" || !ev.GetPolicy().GetRecordIo() {
		t.Fatalf("a live watcher heard %v, want ops recording inputs and outputs", ev)
	}
	if res, err := trail.GetAuditPolicy(ann, &registryv1.GetAuditPolicyRequest{Workspace: "ops"}); err != nil || !res.GetPolicy().GetRecordIo() {
		t.Fatalf("the policy reads %v, %v after it was set", res, err)
	}
	// A snapshot holds it for the watcher of everything and of ops, and not
	// for a watcher of another workspace.
	for ws, want := range map[string]bool{"": true, "ops": true, "dev": false} {
		var workspace *string
		if ws != "" {
			workspace = proto.String(ws)
		}
		got := false
		for _, ev := range e.watch(workspace).untilSynced() {
			if p := ev.GetAuditPolicy(); p != nil {
				got = p.GetWorkspace() == "ops" && p.GetPolicy().GetRecordIo()
			}
		}
		if got != want {
			t.Fatalf("a snapshot for workspace %q holds ops's policy: %v, want %v", ws, got, want)
		}
	}
	if _, err := trail.SetAuditPolicy(admin, &registryv1.SetAuditPolicyRequest{Workspace: "ops", Policy: &registryv1.AuditPolicy{}}); err != nil {
		t.Fatal(err)
	}
	if ev := live.next().GetAuditPolicy(); ev.GetWorkspace() != "ops" || ev.GetPolicy().GetRecordIo() {
		t.Fatalf("a live watcher heard %v, want ops back to metadata", ev)
	}
	var acts []string
	testkit.Eventually(t, "both changes in the trail", 10*time.Second, func() bool {
		res, err := trail.ListAudit(admin, &registryv1.ListAuditRequest{Action: "audit.policy"})
		acts = nil
		for _, ev := range res.GetEvents() {
			acts = append(acts, ev.GetWorkspace()+": "+ev.GetDetail())
		}
		return err == nil && len(acts) == 2
	})
	if acts[0] != "ops: records inputs and outputs" || acts[1] != "ops: records no inputs or outputs" {
		t.Fatalf("the trail holds %q", acts)
	}
}

// Events that carry inputs and outputs are large: a page stops before its
// bytes outgrow a gRPC message, and the pages after it hold the rest.
func TestAPageOfTheTrailStaysWithinItsBytes(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	w := audit.NewWriter(js, "mailbox", nil, logging.Discard())
	big := strings.Repeat("é", audit.MaxContentBytes) // cut at a character's edge
	const events = 60
	for i := range events {
		w.Record(&registryv1.AuditEvent{Actor: "ann", Workspace: "ops", Action: "invocation", Target: "box_echo",
			Invocation: &registryv1.AuditInvocation{Id: "inv-" + strings.Repeat("0", i+1), Outcome: "ok",
				Content: audit.Content(big, nil, big, big, big)}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w.Close(ctx) // sends what is queued
	trail := registryv1.NewAuditServiceClient(e.cc)
	req := &registryv1.ListAuditRequest{PageSize: 1000, Action: "invocation"}
	var ids []string
	pages := 0
	for {
		res, err := trail.ListAudit(admin, req)
		if err != nil {
			t.Fatal(err)
		}
		if n := proto.Size(res); n > 3<<20 {
			t.Fatalf("a page of %d events is %d bytes", len(res.GetEvents()), n)
		}
		pages++
		for _, ev := range res.GetEvents() {
			c := ev.GetInvocation().GetContent()
			if len(c.GetTruncated()) != 4 || !strings.HasPrefix(big, c.GetInput()) || len(c.GetInput()) > audit.MaxContentBytes {
				t.Fatalf("content truncated %v, input of %d bytes", c.GetTruncated(), len(c.GetInput()))
			}
			ids = append(ids, ev.GetInvocation().GetId())
		}
		if req.PageToken = res.GetNextPageToken(); req.PageToken == "" {
			break
		}
	}
	if len(ids) != events || pages < 4 {
		t.Fatalf("read %d events in %d pages, want %d in several", len(ids), pages, events)
	}
	for i, id := range ids {
		if id != "inv-"+strings.Repeat("0", i+1) {
			t.Fatalf("event %d is %s: out of order or repeated", i, id)
		}
	}
}
