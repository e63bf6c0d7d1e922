package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

const screenshotPkg = procs.Module + "tests/gateway/testdata/screenshot"

// What a mounted MCP server answers reaches an MCP client through the
// workspace endpoint as the server answered it — a 1.4 MB screenshot's
// bytes, audio, embedded resources, structured content, _meta, an error's
// own text — in both protocol eras: each result is compared with the same
// call made to the server directly.
func TestAMountedServersResultsReachTheClientIntact(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	s.mountConformance(t)
	shot := testkit.Build(t, screenshotPkg)
	st, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "shot", Config: &bridgev1.ServerConfig{
		Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: shot}}}})
	if err != nil || st.GetServer().GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("Mount(shot) = %v, %v", st, err)
	}
	s.join(t, "default", "shot")

	calls := []struct{ command, client, tool string }{
		{shot, "shot", "screenshot"},
		{testkit.Tool(t, "everything-server"), "conf", "test_image_content"},
		{testkit.Tool(t, "everything-server"), "conf", "test_audio_content"},
		{testkit.Tool(t, "everything-server"), "conf", "test_embedded_resource"},
		{testkit.Tool(t, "everything-server"), "conf", "test_multiple_content_types"},
		{testkit.Tool(t, "everything-server"), "conf", "test_error_handling"},
	}
	direct := map[string]*mcp.CallToolResult{}
	for _, c := range calls {
		direct[c.tool] = callDirectly(t, c.command, c.tool)
	}
	if img, ok := direct["screenshot"].Content[1].(*mcp.ImageContent); !ok || len(img.Data) < 1<<20 {
		t.Fatalf("the screenshot fixture answered %T, want an image of over 1 MiB", direct["screenshot"].Content[1])
	}
	forEachRevision(t, func(t *testing.T, rev string) {
		cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), nil)
		for _, c := range calls {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.client + "_" + c.tool, Arguments: map[string]any{}})
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", c.tool, err)
			}
			want := direct[c.tool]
			if g, w := resultJSON(t, got), resultJSON(t, want); g != w {
				t.Errorf("%s through Switchboard:\n%.600s\ndirectly:\n%.600s", c.tool, g, w)
			}
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shot_screenshot", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		img := res.Content[1].(*mcp.ImageContent)
		if !bytes.Equal(img.Data, direct["screenshot"].Content[1].(*mcp.ImageContent).Data) {
			t.Fatal("the screenshot's bytes changed on the way")
		}
		if cfg, err := png.DecodeConfig(bytes.NewReader(img.Data)); err != nil || cfg.Width != 800 || cfg.Height != 600 {
			t.Fatalf("the screenshot is not the 800×600 PNG: %+v %v", cfg, err)
		}
	})
}

// callDirectly calls tool on the stdio MCP server command, with no
// Switchboard in between.
func callDirectly(t *testing.T, command, tool string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := directSession(t, command).CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("%s directly: %v", tool, err)
	}
	return res
}

// resultJSON is what a client reads of a result: its blocks, structured
// content, isError and the server's _meta (Switchboard's own keys, and the
// SDK's serverInfo, which names whichever server answered, left out).
func resultJSON(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	meta := mcp.Meta{}
	for k, v := range res.Meta {
		if k != mcp.MetaKeyServerInfo && !strings.HasPrefix(k, "run.switchboard/") {
			meta[k] = v
		}
	}
	b, err := json.Marshal(&mcp.CallToolResult{Meta: meta, Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
