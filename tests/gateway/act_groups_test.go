package gateway_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
)

// A token limited to a group lists clients through it: only the group's
// tools, under its alias and descriptions, each one an invoke through the
// group reaches; any other group is absent, and no group is refused.
func TestATokenLimitedToAGroupListsClientsThroughIt(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	s.setGroup(t, &registryv1.Group{Workspace: "default", Name: "read", Patterns: []string{"laptop_*", "!laptop_fail"},
		Overrides: []*registryv1.ToolOverride{{Tool: "laptop_cat", Alias: proto.String("echo"), Description: proto.String("Echoes its input.")}}})
	s.setGroup(t, &registryv1.Group{Workspace: "default", Name: "stats", Patterns: []string{"laptop_stats"}})
	act := bearer(s.mintToken(t, &registryv1.CreateTokenRequest{Identity: "agent", Workspaces: []string{"default"}, Groups: []string{"read"}}))

	res := do(t, s.Client, http.MethodPost, s.URL+"/v1/act", act, []byte(`{"op":"clients","workspace":"default","group":"default/read"}`))
	type tool struct{ Name, Alias, Description string }
	var got struct {
		OK   bool
		Rows []struct {
			Client string
			Tools  []tool
		}
	}
	if res.Status != http.StatusOK || json.Unmarshal(res.Body, &got) != nil || !got.OK || len(got.Rows) != 1 || got.Rows[0].Client != "laptop" {
		t.Fatalf("clients through its group: HTTP %d %s", res.Status, res.Body)
	}
	want := []tool{{"cat", "echo", "Echoes its input."}, {"stats", "", "Prints a JSON object."}}
	if !reflect.DeepEqual(got.Rows[0].Tools, want) {
		t.Fatalf("clients through its group lists %+v, want %+v", got.Rows[0].Tools, want)
	}
	// What the listing names is what an invoke through the group takes.
	for _, tl := range got.Rows[0].Tools {
		body := `{"op":"invoke","client":"laptop","tool":"` + tl.Name + `","input":{},"group":"default/read"}`
		if rep := do(t, s.Client, http.MethodPost, s.URL+"/v1/act", act, []byte(body)); rep.Status != http.StatusOK {
			t.Fatalf("invoking %s as listed: HTTP %d %s", tl.Name, rep.Status, rep.Body)
		}
	}

	// A group outside its limit is absent, with the words of one that does
	// not exist; no group is refused naming its groups.
	s.wantReply(t, http.MethodPost, "/v1/act", act, `{"op":"clients","workspace":"default","group":"default/stats"}`, 404,
		refusal(`unknown group "stats" in workspace "default"`))
	s.wantReply(t, http.MethodPost, "/v1/act", act, `{"op":"clients","workspace":"default","group":"default/nope"}`, 404,
		refusal(`unknown group "nope" in workspace "default"`))
	s.wantReply(t, http.MethodPost, "/v1/act", act, `{"op":"clients","workspace":"default"}`, 403,
		refusal(toolgroups.Limited("agent", []string{"read"})))
}
