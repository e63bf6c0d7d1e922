package bridge

import (
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestCompleteAsksTheServerForWhatItLists: the Go SDK's example server
// completes a prompt's argument with what was typed and an "x"; a server
// without the capability is not asked; a prompt or template the server
// does not list never goes upstream.
func TestCompleteAsksTheServerForWhatItLists(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.mount(t, "goex", stdioServer(testkit.Tool(t, "everything")))
	s.mount(t, "big", stdioServer(testkit.Build(t, bigPkg)))
	s.awaitState(t, "goex", bridgev1.State_STATE_RUNNING)
	s.awaitState(t, "big", bridgev1.State_STATE_RUNNING)

	got, err := s.bridge.Complete(driver, &bridgev1.CompleteRequest{Client: "goex", Prompt: "greet (with Icons)", Argument: "name", Value: "Al",
		Context: map[string]string{"greeting": "hi"}})
	if err != nil || !slices.Equal(got.GetValues(), []string{"Alx"}) || got.GetTotal() != 1 || got.GetHasMore() {
		t.Fatalf("Complete(goex, greet (with Icons)) = %v, %v; want [Alx] of 1", got, err)
	}
	got, err = s.bridge.Complete(driver, &bridgev1.CompleteRequest{Client: "big", Prompt: "big", Argument: "a", Value: "b"})
	if err != nil || len(got.GetValues()) != 0 {
		t.Fatalf("Complete(big, big) of a server without completions = %v, %v; want no values", got, err)
	}

	for _, c := range []struct {
		req  *bridgev1.CompleteRequest
		code codes.Code
		msg  string
	}{
		{&bridgev1.CompleteRequest{Client: "goex", Prompt: "nope", Argument: "name"}, codes.NotFound, `MCP server "goex" lists no prompt "nope"`},
		{&bridgev1.CompleteRequest{Client: "goex", UriTemplate: "file:///{path}", Argument: "path"}, codes.NotFound, `MCP server "goex" lists no resource template "file:///{path}"`},
		{&bridgev1.CompleteRequest{Client: "goex", Prompt: "greet", UriTemplate: "x://{y}", Argument: "y"}, codes.InvalidArgument,
			`a completion names a prompt or a resource template, exactly one (prompt "greet", uri_template "x://{y}")`},
		{&bridgev1.CompleteRequest{Client: "goex", Prompt: "greet"}, codes.InvalidArgument,
			`the argument to complete ("") must be named, and name and value at most 65536 bytes (they are 0)`},
	} {
		_, err := s.bridge.Complete(driver, c.req)
		if st := status.Convert(err); st.Code() != c.code || st.Message() != c.msg {
			t.Errorf("Complete(%v) = %v; want %v %q", c.req, err, c.code, c.msg)
		}
	}
}

// TestCompletionsAreBounded: at most MaxCompletions suggestions of at most
// MaxCompletionBytes each pass; the rest are said to be more.
func TestCompletionsAreBounded(t *testing.T) {
	long := string(make([]byte, MaxCompletionBytes+1))
	many := make([]string, 0, MaxCompletions+5)
	for i := range MaxCompletions + 5 {
		many = append(many, string(rune('a'+i%26)))
	}
	for _, c := range []struct {
		in   []string
		n    int
		more bool
	}{
		{[]string{"a", long, "b"}, 2, true},
		{many, MaxCompletions, true},
		{[]string{"a"}, 1, false},
	} {
		out := completions(mcp.CompletionResultDetails{Values: c.in})
		if len(out.GetValues()) != c.n || out.GetHasMore() != c.more {
			t.Errorf("completions of %d values = %d values, has_more %v; want %d, %v", len(c.in), len(out.GetValues()), out.GetHasMore(), c.n, c.more)
		}
	}
}
