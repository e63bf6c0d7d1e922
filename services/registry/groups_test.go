package registry_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
)

func TestGroupsAreStoredWatchedAndRefused(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	e.advertise("gh", tools("get_issue", "delete_issue")...)
	e.register("ops", "gh")
	w := e.watch(proto.String("ops"))
	w.untilSynced()

	g := &registryv1.Group{Workspace: "ops", Name: "readonly", Patterns: []string{"*_get*", "!*_delete*"},
		Overrides: []*registryv1.ToolOverride{{Tool: "gh_get_issue", Alias: proto.String("issue")}}}
	set, err := e.reg.SetGroup(admin, &registryv1.SetGroupRequest{Group: g})
	if err != nil {
		t.Fatal(err)
	}
	if set.Group.Updated == nil || !slices.Equal(set.Group.Patterns, g.Patterns) {
		t.Fatalf("SetGroup stored %v", set.Group)
	}
	if ev := w.next(); !proto.Equal(ev.GetGrouped(), set.Group) {
		t.Fatalf("the workspace's watcher got %v, want the group", ev)
	}
	// A second replica-like reader: a new watch's snapshot holds the group.
	snap := e.watch(proto.String("ops")).untilSynced()
	found := false
	for _, ev := range snap {
		found = found || proto.Equal(ev.GetGrouped(), set.Group)
	}
	if !found {
		t.Fatalf("a new watch's snapshot lacks the group: %v", snap)
	}

	driver := testkit.AsIn("ann", identity.Driver, "ops")
	got, err := e.reg.GetGroup(driver, &registryv1.GetGroupRequest{Workspace: "ops", Name: "readonly"})
	if err != nil || !proto.Equal(got.Group, set.Group) {
		t.Fatalf("GetGroup = %v, %v", got, err)
	}
	list, err := e.reg.ListGroups(driver, &registryv1.ListGroupsRequest{Workspace: "ops"})
	if err != nil || len(list.Groups) != 1 {
		t.Fatalf("ListGroups = %v, %v", list, err)
	}
	outsider := testkit.AsIn("bob", identity.Driver, "dev")
	_, err = e.reg.GetGroup(outsider, &registryv1.GetGroupRequest{Workspace: "ops", Name: "readonly"})
	if status.Convert(err).Message() != `unknown group "readonly" in workspace "ops"` {
		t.Fatalf("a driver outside the workspace got %v, want the unknown group's sentence", err)
	}
	if _, err := e.reg.SetGroup(driver, &registryv1.SetGroupRequest{Group: g}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a driver's SetGroup = %v, want PERMISSION_DENIED", err)
	}

	for _, tc := range []struct {
		name string
		g    *registryv1.Group
		want string
	}{
		{"a bad glob", &registryv1.Group{Workspace: "ops", Name: "x", Patterns: []string{"gh_[get"}}, `pattern "gh_[get" of group "x" is not a glob`},
		{"an alias taken by another tool", &registryv1.Group{Workspace: "ops", Name: "x", Patterns: []string{"*"},
			Overrides: []*registryv1.ToolOverride{{Tool: "gh_get_issue", Alias: proto.String("gh_delete_issue")}}},
			`alias "gh_delete_issue" of tool "gh_get_issue" in group "x" collides`},
		{"a bad workspace", &registryv1.Group{Workspace: "Ops", Name: "x", Patterns: []string{"*"}}, `workspace name "Ops"`},
	} {
		_, err := e.reg.SetGroup(admin, &registryv1.SetGroupRequest{Group: tc.g})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tc.want) {
			t.Errorf("%s: SetGroup = %v, want INVALID_ARGUMENT containing %q", tc.name, err, tc.want)
		}
	}

	del, err := e.reg.DeleteGroup(admin, &registryv1.DeleteGroupRequest{Workspace: "ops", Name: "readonly"})
	if err != nil || del.Group.GetName() != "readonly" {
		t.Fatalf("DeleteGroup = %v, %v", del, err)
	}
	if ev := w.next(); ev.GetGrouped().GetName() != "readonly" || len(ev.GetGrouped().GetPatterns()) != 0 {
		t.Fatalf("after the delete the watcher got %v, want the group without patterns", ev)
	}
	_, err = e.reg.DeleteGroup(admin, &registryv1.DeleteGroupRequest{Workspace: "ops", Name: "readonly"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("deleting it again = %v, want NOT_FOUND", err)
	}
}

func TestGroupsPerWorkspaceAreBounded(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	for i := range toolgroups.MaxGroups {
		g := &registryv1.Group{Workspace: "ops", Name: "g" + strconv.Itoa(i), Patterns: []string{"*"}}
		if _, err := e.reg.SetGroup(admin, &registryv1.SetGroupRequest{Group: g}); err != nil {
			t.Fatal(err)
		}
	}
	// Replacing one still works; one more does not.
	if _, err := e.reg.SetGroup(admin, &registryv1.SetGroupRequest{Group: &registryv1.Group{Workspace: "ops", Name: "g0", Patterns: []string{"a*"}}}); err != nil {
		t.Fatal(err)
	}
	_, err := e.reg.SetGroup(admin, &registryv1.SetGroupRequest{Group: &registryv1.Group{Workspace: "ops", Name: "one-more", Patterns: []string{"*"}}})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "holds 64 groups already") {
		t.Fatalf("the 65th group = %v, want RESOURCE_EXHAUSTED naming the bound", err)
	}
}

func TestTheGroupsFileIsSetAtStart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "groups.json")
	body := `{"groups": [{"workspace": "ops", "name": "readonly", "patterns": ["*_get*"],
	  "overrides": [{"tool": "gh_get_issue", "description": "Read one issue."}]}]}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	e := serve(t, nil, func(c *registry.Config) { c.Groups = path })
	got, err := e.reg.GetGroup(admin, &registryv1.GetGroupRequest{Workspace: "ops", Name: "readonly"})
	if err != nil || got.Group.GetOverrides()[0].GetDescription() != "Read one issue." {
		t.Fatalf("GetGroup = %v, %v", got, err)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"groups": [{"workspace": "ops", "name": "x", "patterns": ["[a"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = registry.New(context.Background(), registry.Config{WatchBuffer: 8, MaxTools: 8, MaxTokenTTL: registry.DefaultMaxTokenTTL, Groups: bad}, e.nc, logging.Discard())
	if err == nil || !strings.Contains(err.Error(), `pattern "[a" of group "x" is not a glob`) {
		t.Fatalf("a registry with a bad groups file = %v, want the refusal naming the pattern", err)
	}
}
