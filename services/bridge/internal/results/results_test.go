package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

type want struct {
	stdout, stderr string
	exit           int32
}

func check(t *testing.T, got *mailboxv1.Capture, w want) {
	t.Helper()
	if got.Stdout == nil || got.Stderr == nil || got.ExitCode == nil {
		t.Fatalf("capture has an unset field: %v", got)
	}
	if got.GetStdout() != w.stdout || got.GetStderr() != w.stderr || got.GetExitCode() != w.exit {
		t.Errorf("capture = {stdout %q, stderr %q, exit %d}\n     want {stdout %q, stderr %q, exit %d}",
			got.GetStdout(), got.GetStderr(), got.GetExitCode(), w.stdout, w.stderr, w.exit)
	}
}

func TestFromResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want want
	}{
		{"text blocks go to stdout joined by newlines",
			&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "one"}, &mcp.TextContent{Text: "two"}}},
			want{stdout: "one\ntwo"}},
		{"an image is named in place",
			&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "see:"}, &mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
			want{stdout: "see:\n[image content]"}},
		{"audio is named",
			&mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: []byte{1}, MIMEType: "audio/wav"}}},
			want{stdout: "[audio content]"}},
		{"a resource link is named with its uri",
			&mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///tmp/x", Name: "x"}}},
			want{stdout: "[resource_link content: file:///tmp/x]"}},
		{"an embedded text resource is carried as text",
			&mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://r", Text: "inside"}}}},
			want{stdout: "inside"}},
		{"an embedded blob is named with its uri",
			&mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://b", Blob: []byte{0}}}}},
			want{stdout: "[resource content: test://b]"}},
		{"isError puts the message on stderr with exit 1",
			&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "expected string, received undefined at message"}}},
			want{stderr: "expected string, received undefined at message", exit: 1}},
		{"isError without a message still says so",
			&mcp.CallToolResult{IsError: true},
			want{stderr: "the tool reported an error and gave no message", exit: 1}},
		{"structured content is stdout when no block has text",
			&mcp.CallToolResult{StructuredContent: map[string]any{"message": "Hi bob", "n": 2}},
			want{stdout: `{"message":"Hi bob","n":2}`}},
		{"structured content comes before named non-text blocks",
			&mcp.CallToolResult{StructuredContent: map[string]any{"ok": true}, Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}}}},
			want{stdout: "{\"ok\":true}\n[image content]"}},
		{"text blocks win over structured content, which they mirror",
			&mcp.CallToolResult{StructuredContent: map[string]any{"ok": true}, Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}},
			want{stdout: `{"ok":true}`}},
		{"an empty result is an empty success", &mcp.CallToolResult{}, want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check(t, FromResult(tt.res, 0), tt.want)
		})
	}
}

func TestFromResultCapsStdoutAndStderr(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 30)
	got := FromResult(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: long}}}, 10)
	if want := strings.Repeat("é", 10) + "\n[truncated: 20 more characters not shown]"; got.GetStdout() != want {
		t.Errorf("stdout = %q, want %q", got.GetStdout(), want)
	}
	got = FromResult(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: long}}}, 10)
	if !strings.HasSuffix(got.GetStderr(), "[truncated: 20 more characters not shown]") {
		t.Errorf("stderr was not capped: %q", got.GetStderr())
	}
	big := strings.Repeat("x", DefaultMaxChars+5)
	got = FromResult(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, 0)
	if !strings.HasSuffix(got.GetStdout(), "[truncated: 5 more characters not shown]") {
		t.Errorf("the default cap did not apply: ends %q", got.GetStdout()[len(got.GetStdout())-50:])
	}
}

func TestFromError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want want
	}{
		{"a JSON-RPC error is named with its code and message",
			fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: -32602, Message: `unknown tool "nope"`}),
			want{stderr: `MCP server "files" answered tools/call "read" with JSON-RPC error -32602: unknown tool "nope"`, exit: 1}},
		{"a transport failure says the call failed",
			errors.New("connection closed"),
			want{stderr: `calling tool "read" on MCP server "files" failed: connection closed`, exit: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check(t, FromError(tt.err, "files", "read", 0), tt.want)
		})
	}
}

// A server's JSON-RPC error travels as mcp_error too, its data bounded; a
// failure to reach the server is no server's error and has none.
func TestFromErrorKeepsTheServersError(t *testing.T) {
	t.Parallel()
	got := FromError(&jsonrpc.Error{Code: -32603, Message: "boom", Data: []byte(`{"why":"disk"}`)}, "files", "read", 0)
	if got.GetMcpError() != `{"code":-32603,"message":"boom","data":{"why":"disk"}}` {
		t.Errorf("mcp_error = %s", got.GetMcpError())
	}
	big := []byte(`"` + strings.Repeat("x", MaxErrorData) + `"`)
	if got := FromError(&jsonrpc.Error{Code: 1, Message: "m", Data: big}, "files", "read", 0); got.GetMcpError() != `{"code":1,"message":"m"}` {
		t.Errorf("mcp_error with data over %d bytes = %.80s…", MaxErrorData, got.GetMcpError())
	}
	if got := FromError(errors.New("connection closed"), "files", "read", 0); got.McpError != nil {
		t.Errorf("a transport failure has mcp_error %s", got.GetMcpError())
	}
}

// The result travels whole beside the text: every block, structured
// content, isError and _meta, as the server sent them; the result type is
// left for the driver to set for its own client.
func TestFromResultPassesTheResultOnWhole(t *testing.T) {
	t.Parallel()
	const sent = `{"_meta":{"k":"v","io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}},"content":[{"type":"text","text":"see:"},` +
		`{"type":"image","data":"iVBORw0KGgoAAAANSUhEUg==","mimeType":"image/png","annotations":{"audience":["user"]}},` +
		`{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},` +
		`{"type":"resource_link","uri":"file:///x","name":"x"},` +
		`{"type":"resource","resource":{"uri":"test://b","mimeType":"application/octet-stream","blob":"AAE="}}],` +
		`"structuredContent":{"n":1},"isError":true,"resultType":"complete"}`
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(sent), &res); err != nil {
		t.Fatal(err)
	}
	c := FromResult(&res, 0)
	if c.McpResult == nil {
		t.Fatal("no mcp_result")
	}
	want := strings.NewReplacer(`,"resultType":"complete"`, "", `,"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}`, "").Replace(sent)
	if got := c.GetMcpResult(); !jsonEqual(t, got, want) {
		t.Fatalf("mcp_result = %s\nwant %s", got, want)
	}
	if c.GetExitCode() != 1 || !strings.HasPrefix(c.GetStderr(), "see:\n[image content]") {
		t.Fatalf("the text fields changed: %v", c)
	}
}

// A result over MaxResultBytes reaches drivers as text, which says so.
func TestFromResultSaysWhenTheResultIsTooLargeToPassOn(t *testing.T) {
	t.Parallel()
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shot:"}, &mcp.ImageContent{Data: make([]byte, MaxResultBytes), MIMEType: "image/png"}}}
	c := FromResult(res, 0)
	if c.McpResult != nil {
		t.Fatalf("a result of over %d bytes was passed on whole", MaxResultBytes)
	}
	if want := "shot:\n[image content]\n[the server's result is "; !strings.HasPrefix(c.GetStdout(), want) || !strings.Contains(c.GetStdout(), "only its text is shown]") {
		t.Fatalf("stdout = %q, want it to say the result was too large", c.GetStdout())
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// A result asking for input travels whole for an MCP driver, and reads as
// a failure naming what was asked for any other.
func TestFromResultPassesAnInputRequiredResultOn(t *testing.T) {
	t.Parallel()
	const sent = `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}},"resultType":"input_required",` +
		`"inputRequests":{"who":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}},` +
		`"roots":{"method":"roots/list","params":{}}},"requestState":"s-1"}`
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(sent), &res); err != nil {
		t.Fatal(err)
	}
	c := FromResult(&res, 0)
	check(t, c, want{stderr: "the MCP server asks its client for input before it answers: roots (roots/list), who (elicitation/create); " +
		"only an MCP client of revision 2026-07-28 or later can answer, by calling the tool again with inputResponses and requestState", exit: 1})
	wantResult := `{"content":[],"inputRequests":{"who":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}},` +
		`"roots":{"method":"roots/list","params":{}}},"requestState":"s-1"}`
	if got := c.GetMcpResult(); !jsonEqual(t, got, wantResult) {
		t.Fatalf("mcp_result = %s\nwant %s", got, wantResult)
	}
}
