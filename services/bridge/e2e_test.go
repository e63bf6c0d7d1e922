package bridge

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A driver calls a presented name: registry → mailbox → bridge → the real
// conformance server over stdio → capture.
func TestEndToEndThroughTheMailboxToARealServer(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	st := s.mount(t, "conf", stdioServer(testkit.Tool(t, "everything-server")))
	if st.GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("state after Mount = %v (last fault %q)", st.GetState(), st.GetLastFault())
	}
	if st.GetTransport() != "stdio" || st.GetServerName() != "mcp-conformance-test-server" || st.GetServerVersion() != "1.0.0" ||
		st.GetProtocolVersion() == "" || st.GetToolCount() < 20 {
		t.Errorf("Mount's status = %v", st)
	}

	resolved, err := s.reg.ResolveTool(driver, &registryv1.ResolveToolRequest{PresentedName: "conf_test_simple_text"})
	if err != nil {
		t.Fatalf("the presented name does not resolve: %v", err)
	}
	if resolved.GetClient() != "conf" || resolved.GetTool().GetName() != "test_simple_text" {
		t.Fatalf("resolved to %v", resolved)
	}

	tests := []struct {
		name, tool, input string
		want              *mailboxv1.Capture
	}{
		{"text is stdout, and the result travels whole", "test_simple_text", `{}`,
			withResult(captureOf("This is a simple text response for testing.", "", 0),
				`{"content":[{"type":"text","text":"This is a simple text response for testing."}]}`)},
		{"an image is named, and its bytes travel in the result", "test_image_content", `{}`,
			withResult(captureOf("[image content]", "", 0),
				`{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="}]}`)},
		{"isError is exit 1 with the message on stderr, and the result as it was", "test_error_handling", `{}`,
			withResult(captureOf("", "this tool intentionally returns an error for testing", 1),
				`{"content":[{"type":"text","text":"this tool intentionally returns an error for testing"}],"isError":true}`)},
		{"input that is not an object is refused before it is sent", "test_simple_text", `[1,2]`,
			captureOf("", `MCP tool "test_simple_text" takes its arguments as a JSON object, but the input is not a JSON object; it was not called`, 1)},
		{"progress carries the invocation id as its token", "test_tool_with_progress", `{}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.call(t, resolved.GetClient(), tt.tool, tt.input)
			if tt.want != nil && !proto.Equal(got, tt.want) {
				t.Errorf("capture = %v\nwant      %v", got, tt.want)
			}
			if tt.want == nil && !strings.HasPrefix(got.GetStdout(), "inv-") {
				t.Errorf("stdout = %q, want the invocation id echoed as the progress token", got.GetStdout())
			}
		})
	}
	row := s.row(t, "conf")
	if !contains(row.GetNotices(), "progress inv-") || !contains(row.GetNotices(), "/100 Completed step 100 of 100") {
		t.Errorf("progress did not reach status.notices: %q", row.GetNotices())
	}

	t.Run("a cwd is refused before it is sent", func(t *testing.T) {
		res, err := s.mb.Call(driver, &mailboxv1.CallRequest{Client: "conf", Tool: "test_simple_text", Input: `{}`, Cwd: proto.String("/tmp")})
		if err != nil {
			t.Fatal(err)
		}
		want := captureOf("", `tool "test_simple_text" does not take a cwd: an MCP server is not told a working directory, so it was not called`, 1)
		if !proto.Equal(res.GetCapture(), want) {
			t.Errorf("capture = %v", res.GetCapture())
		}
	})

	t.Run("tools/list_changed is re-advertised", func(t *testing.T) {
		s.call(t, "conf", "test_trigger_tool_change", `{}`)
		testkit.Eventually(t, "the new tool in the registry", 20*time.Second, func() bool { return s.advertised(t, "conf")["__transient_tool_for_list_changed"] })
		got := s.call(t, "conf", "__transient_tool_for_list_changed", `{}`)
		if got.GetExitCode() != 0 {
			t.Errorf("calling the re-advertised tool: %v", got)
		}
	})
}

func captureOf(stdout, stderr string, exit int32) *mailboxv1.Capture {
	return &mailboxv1.Capture{Stdout: proto.String(stdout), Stderr: proto.String(stderr), ExitCode: proto.Int32(exit)}
}

func withResult(c *mailboxv1.Capture, result string) *mailboxv1.Capture {
	c.McpResult = &result
	return c
}

// The SDK's example server names tools with spaces and parentheses: they
// are advertised under their own names, presented sanitised, and reachable.
func TestToolNamesWithSpacesArePresentedAndCallable(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.mount(t, "example", &bridgev1.ServerConfig{
		Transport: stdioServer(testkit.Tool(t, "everything")).Transport,
		DenyTools: []string{"sample", "elicit (form)", "elicit (url)", "roots"},
	})
	if !s.advertised(t, "example")["greet (structured)"] {
		t.Fatalf("advertised %v", s.advertised(t, "example"))
	}
	list, err := s.reg.ListTools(driver, &registryv1.ListToolsRequest{Workspace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var presented string
	for _, pt := range list.GetTools() {
		if pt.GetClient() == "example" && pt.GetTool().GetName() == "greet (structured)" {
			presented = pt.GetPresentedName()
		}
	}
	if !strings.HasPrefix(presented, "example_greet__structured") {
		t.Fatalf("presented name = %q", presented)
	}
	resolved, err := s.reg.ResolveTool(driver, &registryv1.ResolveToolRequest{PresentedName: presented})
	if err != nil {
		t.Fatal(err)
	}
	got := s.call(t, resolved.GetClient(), resolved.GetTool().GetName(), `{"name":"bob"}`)
	if got.GetStdout() != `{"message":"Hi bob"}` || got.GetExitCode() != 0 {
		t.Errorf("capture = %v", got)
	}
	row := s.row(t, "example")
	if !slices.ContainsFunc(row.GetToolsSkipped(), func(s string) bool { return s == `"sample": in deny_tools` }) {
		t.Errorf("tools_skipped = %q", row.GetToolsSkipped())
	}
	if !strings.Contains(row.GetStderrTail(), "greet (structured)") {
		t.Errorf("the server's stderr did not reach the tail: %q", row.GetStderrTail())
	}
}

// The same call over Streamable HTTP, with sessions and without.
func TestEndToEndOverHTTP(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	bin := testkit.Tool(t, "everything-server")
	for _, tt := range []struct{ client, flag string }{{"sessions", "-stateless=false"}, {"stateless", "-stateless=true"}} {
		addr := testkit.FreeAddr(t)
		testkit.StartHTTP(t, bin, addr, tt.flag)
		st := s.mount(t, tt.client, httpServer("http://"+addr+"/"))
		if st.GetState() != bridgev1.State_STATE_RUNNING || st.GetTransport() != "http" {
			t.Fatalf("%s: status = %v", tt.client, st)
		}
		if got := s.call(t, tt.client, "test_simple_text", `{}`); got.GetStdout() != "This is a simple text response for testing." {
			t.Errorf("%s: capture = %v", tt.client, got)
		}
	}
}
