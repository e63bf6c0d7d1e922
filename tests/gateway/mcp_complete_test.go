package gateway_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestPromptsArePresentedLikeToolsAndComplete: the Go SDK's example
// server's prompt "greet (with Icons)" is presented sanitised as a tool of
// that name is, and its own name on the server's endpoint; completion/complete
// reaches the server through both (it answers what was typed and an "x").
func TestPromptsArePresentedLikeToolsAndComplete(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	cfg := &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: testkit.Tool(t, "everything")}}}
	if _, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "goex", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	s.join(t, "default", "goex")
	sanitised := names.Presented("goex", "greet (with Icons)")
	forEachRevision(t, func(t *testing.T, rev string) {
		ctx := context.Background()
		for path, name := range map[string]string{"/mcp": sanitised, "/mcp/default/servers/goex": "greet (with Icons)"} {
			cs := s.connectAt(t, rev, path, as("alice", identity.Driver), nil)
			if cs.InitializeResult().Capabilities.Completions == nil {
				t.Fatalf("%s does not declare completions", path)
			}
			testkit.Eventually(t, "goex's prompts listed at "+path, 20*time.Second, func() bool {
				return promptNames(t, cs)[name] != nil
			})
			if got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: map[string]string{"name": "Al"}}); err != nil || len(got.Messages) == 0 {
				t.Fatalf("prompts/get %q at %s = %+v, %v", name, path, got, err)
			}
			got, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: name},
				Argument: mcp.CompleteParamsArgument{Name: "name", Value: "Al"}})
			if err != nil || !slices.Equal(got.Completion.Values, []string{"Alx"}) || got.Completion.Total != 1 {
				t.Fatalf("completion/complete of %q at %s = %+v, %v; want [Alx] of 1", name, path, got, err)
			}
		}
		cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), nil)
		_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet (with Icons)"},
			Argument: mcp.CompleteParamsArgument{Name: "name"}})
		refusedWith(t, err, `no prompt is presented as "greet (with Icons)" in workspace "default" right now; list prompts/list for the names in force`)
		_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "file:///{path}"},
			Argument: mcp.CompleteParamsArgument{Name: "path"}})
		refusedWith(t, err, `no resource template "file:///{path}" is served in workspace "default" right now; list resources/templates/list for the templates in force`)
	})
}
