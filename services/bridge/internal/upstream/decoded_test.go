package upstream

import (
	"context"
	"encoding/json"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/bridge/internal/results"
	stdiotransport "github.com/switchboard-run/switchboard/services/bridge/internal/stdio"
)

func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// The bridge's stdio transport decodes the common tools/call answers
// itself (internal/stdio, toolresult.go): every result, and so every
// capture, is the one the SDK's own client and transport get from the same
// server, whichever of the two decoded it.
func TestEveryResultIsTheOneTheSDKGets(t *testing.T) {
	t.Parallel()
	bin := testkit.Tool(t, "everything-server")
	s := open(t, stdioConfig(bin), Options{Client: "decoded"})
	sdk, err := mcp.NewClient(&mcp.Implementation{Name: "reference", Version: "v1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sdk.Close() })
	for _, tool := range []string{"test_simple_text", "test_error_handling", "test_image_content", "test_audio_content",
		"test_embedded_resource", "test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress"} {
		t.Run(tool, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			got, err := s.Call(ctx, tool, json.RawMessage(`{}`), nil, "", nil)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			want, err := sdk.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("the SDK's CallTool: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("result = %#v, the SDK's %#v", got, want)
			}
			if g, w := results.FromResult(got, 0), results.FromResult(want, 0); !proto.Equal(g, w) {
				t.Errorf("capture = %v, from the SDK's result %v", g, w)
			}
			// With the bytes kept, the capture passes on the result as the
			// server sent it: the same, as JSON, as the SDK's encoded.
			kctx, whole := stdiotransport.KeepWhole(ctx)
			kept, err := s.Call(kctx, tool, json.RawMessage(`{}`), nil, "", nil)
			if err != nil {
				t.Fatalf("Call keeping the bytes: %v", err)
			}
			if tool == "test_simple_text" && whole.JSON == nil {
				t.Error("a text result's bytes were not kept")
			}
			g, w := results.FromWhole(kept, whole.JSON, 0), results.FromResult(want, 0)
			if !sameJSON(g.GetMcpResult(), w.GetMcpResult()) {
				t.Errorf("passed on %s, from the SDK's result %s", g.GetMcpResult(), w.GetMcpResult())
			}
			g.McpResult, w.McpResult = nil, nil
			if !proto.Equal(g, w) {
				t.Errorf("capture keeping the bytes = %v, from the SDK's result %v", g, w)
			}
		})
	}
}
