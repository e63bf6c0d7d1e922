package gateway_test

import (
	"context"
	"net/http"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// /mcp/{workspace}/servers/{client} serves one mounted server as the server
// itself does: its tools, prompts and resources under their own names, and
// nothing of the workspace's other clients; in both protocol eras.
func TestAServersEndpointServesItUnderItsOwnNames(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	s.mountConformance(t)
	direct := directSession(t, testkit.Tool(t, "everything-server"))
	wantTools, wantPrompts := listNames(t, direct)
	forEachRevision(t, func(t *testing.T, rev string) {
		cs := s.connectAt(t, rev, "/mcp/default/servers/conf", as("alice", identity.Driver), nil)
		var tools, prompts []string
		testkit.Eventually(t, "conf's tools and prompts", 20*time.Second, func() bool {
			tools, prompts = listNames(t, cs)
			return slices.Equal(tools, wantTools) && slices.Equal(prompts, wantPrompts)
		})
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
		if err != nil || res.IsError || !slices.Equal(texts(res), []string{"This is a simple text response for testing."}) {
			t.Fatalf("test_simple_text = %v, %v", texts(res), err)
		}
		p, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "test_simple_prompt"})
		if err != nil || len(p.Messages) == 0 {
			t.Fatalf("test_simple_prompt = %v, %v", p, err)
		}
		r, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://static-text"})
		if err != nil || len(r.Contents) != 1 || r.Contents[0].Text == "" {
			t.Fatalf("test://static-text = %v, %v", r, err)
		}
		// Another client's tool is not this server's, by either name.
		for _, name := range []string{"cat", "laptop_cat"} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			want := `"conf" offers no tool "` + name + `" in workspace "default" right now; list its tools (tools/list) for the names in force`
			if err != nil || !res.IsError || !slices.Equal(texts(res), []string{want}) {
				t.Fatalf("calling %s: %v %v, want the refusal %q", name, texts(res), err, want)
			}
		}
	})

	h := initHeader(as("alice", identity.Driver))
	s.wantReply(t, http.MethodPost, "/mcp/default/servers/nobody", h, initialize, 404,
		refusal(`unknown server "nobody" in workspace "default": no client of that name presents a tool, prompt or resource there`))
	s.wantReply(t, http.MethodPost, "/mcp/elsewhere/servers/conf", h, initialize, 404,
		refusal(`unknown server "conf" in workspace "elsewhere": no client of that name presents a tool, prompt or resource there`))
	// A caller limited to tool groups has only its groups' endpoints.
	s.setGroup(t, &registryv1.Group{Workspace: "default", Name: "conf", Patterns: []string{"conf_*"}})
	secret := s.mintToken(t, &registryv1.CreateTokenRequest{Identity: "agent", Workspaces: []string{"default"}, Groups: []string{"conf"}})
	s.wantReply(t, http.MethodPost, "/mcp/default/servers/conf", initHeader(bearer(secret)), initialize, 403,
		refusal(toolgroups.Limited("agent", []string{"conf"})))
}

// directSession connects to the stdio MCP server command itself.
func directSession(t *testing.T, command string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(command)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// listNames is a session's tool and prompt names, sorted.
func listNames(t *testing.T, cs *mcp.ClientSession) (tools, prompts []string) {
	t.Helper()
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool.Name)
	}
	for p, err := range cs.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	slices.Sort(tools)
	slices.Sort(prompts)
	return tools, prompts
}
