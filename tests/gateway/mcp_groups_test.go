package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// absent is the sentence of a tool the endpoint does not present: a tool
// outside a group gets the very words of one that does not exist.
func absent(name string) string {
	return `no tool is presented as "` + name + `" in workspace "default" right now; list the workspace's tools (tools/list) for the names in force`
}

// groupedSuite is a workspace with a local host (laptop), the everything
// server mounted (conf) and two groups: "laptop-read", the laptop's tools
// but fail (cat renamed "echo", with a description of the operator's) and
// box's get tools; "conf", two of the conformance server's tools.
func groupedSuite(t *testing.T) *suite {
	s := newSuite(t, options{laptop: true})
	s.mountConformance(t)
	s.setGroup(t, &registryv1.Group{Workspace: "default", Name: "laptop-read", Patterns: []string{"laptop_*", "box_get*", "!laptop_fail"},
		Overrides: []*registryv1.ToolOverride{{Tool: "laptop_cat", Alias: proto.String("echo"), Description: proto.String("Echoes its input.")}}})
	s.setGroup(t, &registryv1.Group{Workspace: "default", Name: "conf", Patterns: []string{"conf_test_simple_text", "conf_test_error_*"}})
	return s
}

func (s *suite) setGroup(t testing.TB, g *registryv1.Group) {
	t.Helper()
	if _, err := s.Registry.SetGroup(opsCtx, &registryv1.SetGroupRequest{Group: g}); err != nil {
		t.Fatalf("SetGroup(%s): %v", g.GetName(), err)
	}
}

// toolNames lists cs's tools by name, sorted (the SDK sorts them).
func toolNames(t testing.TB, cs *mcp.ClientSession) ([]string, map[string]*mcp.Tool) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		byName[tool.Name] = tool
	}
	return names, byName
}

func call(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

func wantAbsent(t testing.TB, cs *mcp.ClientSession, name string) {
	t.Helper()
	res := call(t, cs, name, map[string]any{})
	if got := texts(res); !res.IsError || len(got) != 1 || got[0] != absent(name) {
		t.Fatalf("calling %s outside the group = %v (isError %v), want the absent sentence", name, got, res.IsError)
	}
}

// Each group's client sees exactly the group's tools, under their aliases
// and descriptions; a call by alias runs the tool itself; every other tool
// is absent; a new matching advertisement and an edit of the group reach
// the group's clients as list_changed.
func TestAGroupEndpointServesExactlyItsTools(t *testing.T) {
	t.Parallel()
	forEachRevision(t, func(t *testing.T, rev string) {
		s := groupedSuite(t)
		laptopChanged, confChanged := make(chan struct{}, 16), make(chan struct{}, 16)
		alice := as("alice", identity.Driver)
		laptop := s.connectAt(t, rev, "/mcp/default/laptop-read", alice, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { laptopChanged <- struct{}{} }})
		conf := s.connectAt(t, rev, "/mcp/default/conf", alice, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { confChanged <- struct{}{} }})

		names, tools := toolNames(t, laptop)
		if !slices.Equal(names, []string{"echo", "laptop_stats"}) {
			t.Fatalf("laptop-read lists %v", names)
		}
		if d := tools["echo"].Description; d != "Echoes its input." {
			t.Fatalf("echo's description is %q, want the group's", d)
		}
		if tools["echo"].Meta[mcpserveMetaTool] != "cat" {
			t.Fatalf("echo's _meta is %v, want the tool's own name cat", tools["echo"].Meta)
		}
		res := call(t, laptop, "echo", map[string]any{"text": "hi"})
		if got := strings.Join(texts(res), ""); res.IsError || !strings.Contains(got, `"text":"hi"`) {
			t.Fatalf("calling echo = %q (isError %v), want cat's echo of its input", got, res.IsError)
		}
		for _, name := range []string{"laptop_cat", "laptop_fail", "conf_test_simple_text"} {
			wantAbsent(t, laptop, name)
		}

		if names, _ := toolNames(t, conf); !slices.Equal(names, []string{"conf_test_error_handling", "conf_test_simple_text"}) {
			t.Fatalf("conf lists %v", names)
		}
		if res := call(t, conf, "conf_test_simple_text", map[string]any{}); res.IsError {
			t.Fatalf("calling conf_test_simple_text in its group = %v", texts(res))
		}
		wantAbsent(t, conf, "laptop_stats")
		wantAbsent(t, conf, "echo")

		// A new advertisement the group admits.
		if _, err := s.Registry.Advertise(testkit.As("box", identity.Host), &registryv1.AdvertiseRequest{Tools: []*registryv1.Tool{
			{Name: "get_x", Description: "x", InputSchema: `{"type":"object"}`}, {Name: "put_x", Description: "x", InputSchema: `{"type":"object"}`}}}); err != nil {
			t.Fatal(err)
		}
		s.join(t, "default", "box")
		testkit.Receive(t, laptopChanged, 10*time.Second, "list_changed on laptop-read after box advertised a get tool")
		testkit.Eventually(t, "laptop-read to list box's get tool", 10*time.Second, func() bool {
			names, _ := toolNames(t, laptop)
			return slices.Equal(names, []string{"box_get_x", "echo", "laptop_stats"})
		})

		// An edit of the group.
		s.setGroup(t, &registryv1.Group{Workspace: "default", Name: "conf", Patterns: []string{"conf_test_simple_text", "box_*"}})
		testkit.Receive(t, confChanged, 10*time.Second, "list_changed on conf after the group was edited")
		testkit.Eventually(t, "conf to list the edited group's tools", 10*time.Second, func() bool {
			names, _ := toolNames(t, conf)
			return slices.Equal(names, []string{"box_get_x", "box_put_x", "conf_test_simple_text"})
		})
		wantAbsent(t, conf, "conf_test_error_handling")

		// A removed group's endpoint refuses every request, its sessions'
		// too, naming the group.
		if _, err := s.Registry.DeleteGroup(opsCtx, &registryv1.DeleteGroupRequest{Workspace: "default", Name: "conf"}); err != nil {
			t.Fatal(err)
		}
		gone := refusal(`unknown group "conf" in workspace "default"`)
		testkit.Eventually(t, "the removed group's endpoint to refuse", 10*time.Second, func() bool {
			res := do(t, s.Client, http.MethodPost, s.URL+"/mcp/default/conf", initHeader(alice), []byte(initialize))
			return res.Status == http.StatusNotFound && string(res.Body) == gone
		})
		if _, err := conf.ListTools(context.Background(), nil); err == nil {
			t.Fatal("a session of the removed group still lists tools")
		}
	})
}

// initHeader is h with the headers an MCP POST carries.
func initHeader(h http.Header) http.Header {
	h = h.Clone()
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	return h
}

// mcpserveMetaTool is the _meta key naming a presented tool's own name.
const mcpserveMetaTool = "run.switchboard/tool"

func TestAnUnknownGroupIsRefusedNamingIt(t *testing.T) {
	t.Parallel()
	s := groupedSuite(t)
	h := initHeader(as("alice", identity.Driver))
	for _, group := range []string{"nope", "Bad_Name"} {
		s.wantReply(t, http.MethodPost, "/mcp/default/"+group, h, initialize, 404, refusal(`unknown group "`+group+`" in workspace "default"`))
	}
}

// A token limited to a group reaches that group's endpoint only: another
// group is absent, and the workspace's endpoint and the REST routes are
// refused with the sentence naming its groups.
func TestATokenLimitedToAGroupUsesOnlyThatGroup(t *testing.T) {
	t.Parallel()
	s := groupedSuite(t)
	secret := s.mintToken(t, &registryv1.CreateTokenRequest{Identity: "agent", Workspaces: []string{"default"}, Groups: []string{"conf"}})
	h := bearer(secret)
	cs := s.connect(t, "/mcp/default/conf", h, nil)
	if names, _ := toolNames(t, cs); !slices.Equal(names, []string{"conf_test_error_handling", "conf_test_simple_text"}) {
		t.Fatalf("the group's token lists %v", names)
	}
	if res := call(t, cs, "conf_test_simple_text", map[string]any{}); res.IsError {
		t.Fatalf("calling in its group = %v", texts(res))
	}
	h = initHeader(h)
	s.wantReply(t, http.MethodPost, "/mcp/default/laptop-read", h, initialize, 404, refusal(`unknown group "laptop-read" in workspace "default"`))
	limited := refusal(toolgroups.Limited("agent", []string{"conf"}))
	s.wantReply(t, http.MethodPost, "/mcp/default", h, initialize, 403, limited)
	s.wantReply(t, http.MethodGet, "/v1/workspaces/default/tools", h, "", 403, limited)

	// The act endpoint: only an invoke through its group (and collecting).
	act := bearer(secret)
	s.wantReply(t, http.MethodPost, "/v1/act", act, `{"op":"clients","workspace":"default"}`, 403, limited)
	s.wantReply(t, http.MethodPost, "/v1/act", act, `{"op":"invoke","client":"conf","tool":"test_simple_text","input":{}}`, 403, limited)
	s.wantReply(t, http.MethodPost, "/v1/act", act, `{"op":"invoke","client":"laptop","tool":"stats","input":{},"group":"default/laptop-read"}`, 404,
		refusal(`unknown group "laptop-read" in workspace "default"`))
	s.wantReply(t, http.MethodPost, "/v1/act", act, `{"op":"invoke","client":"laptop","tool":"stats","input":{},"group":"default/conf"}`, 404,
		refusal(`client "laptop" advertises no tool "stats" right now`))
	res := do(t, s.Client, http.MethodPost, s.URL+"/v1/act", act, []byte(`{"op":"invoke","client":"conf","tool":"test_simple_text","input":{},"group":"default/conf"}`))
	var routed struct{ Invocation string }
	if res.Status != 200 || json.Unmarshal(res.Body, &routed) != nil || routed.Invocation == "" {
		t.Fatalf("an invoke through its group: HTTP %d %s", res.Status, res.Body)
	}
	res = do(t, s.Client, http.MethodPost, s.URL+"/v1/act", act, []byte(`{"op":"capture","invocation":"`+routed.Invocation+`","wait":"20s"}`))
	if res.Status != 200 || !strings.Contains(string(res.Body), `"capture":`) {
		t.Fatalf("collecting it: HTTP %d %s", res.Status, res.Body)
	}

	if _, err := s.Registry.CreateToken(opsCtx, &registryv1.CreateTokenRequest{Identity: "x", Grade: "admin", Workspaces: []string{"*"}, Groups: []string{"conf"}}); err == nil ||
		!strings.Contains(err.Error(), "groups (--groups) limit a driver token; an admin token is not limited to tool groups") {
		t.Fatalf("an admin token with groups = %v, want the refusal", err)
	}
}

// The REST routes: an admin sets, reads, lists and removes a group; a
// driver reads; a bad glob is refused naming it.
func TestGroupsOverREST(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	ops := as("ops", identity.Admin)
	ops.Set("Content-Type", "application/json")
	res := do(t, s.Client, http.MethodPut, s.URL+"/v1/workspaces/default/groups/readonly", ops,
		[]byte(`{"patterns":["*_get*","!*_delete*"],"overrides":[{"tool":"gh_get_issue","alias":"issue"}]}`))
	if res.Status != 200 || !strings.Contains(string(res.Body), `"name":"readonly"`) || !strings.Contains(string(res.Body), `"alias":"issue"`) {
		t.Fatalf("PUT a group: HTTP %d %s", res.Status, res.Body)
	}
	res = do(t, s.Client, http.MethodGet, s.URL+"/v1/workspaces/default/groups", as("alice", identity.Driver), nil)
	if res.Status != 200 || !strings.Contains(string(res.Body), `"patterns":["*_get*","!*_delete*"]`) {
		t.Fatalf("GET the groups: HTTP %d %s", res.Status, res.Body)
	}
	res = do(t, s.Client, http.MethodPut, s.URL+"/v1/workspaces/default/groups/bad", ops, []byte(`{"patterns":["[x"]}`))
	if res.Status != 400 || !strings.Contains(string(res.Body), `pattern \"[x\" of group \"bad\" is not a glob`) {
		t.Fatalf("PUT a bad glob: HTTP %d %s", res.Status, res.Body)
	}
	res = do(t, s.Client, http.MethodPut, s.URL+"/v1/workspaces/default/groups/x", as("alice", identity.Driver), []byte(`{"patterns":["*"]}`))
	if res.Status != 403 {
		t.Fatalf("a driver's PUT: HTTP %d %s", res.Status, res.Body)
	}
	if res = do(t, s.Client, http.MethodDelete, s.URL+"/v1/workspaces/default/groups/readonly", ops, nil); res.Status != 200 {
		t.Fatalf("DELETE the group: HTTP %d %s", res.Status, res.Body)
	}
	res = do(t, s.Client, http.MethodGet, s.URL+"/v1/workspaces/default/groups/readonly", ops, nil)
	if res.Status != 404 || !strings.Contains(string(res.Body), `unknown group \"readonly\" in workspace \"default\"`) {
		t.Fatalf("GET the removed group: HTTP %d %s", res.Status, res.Body)
	}
}
