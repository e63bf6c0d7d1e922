package mailbox_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
)

// TestMCPParamsReachTheHostThroughTheRecord: an Invoke posted at one
// replica, with its MCP params, is handed out by the replica its host
// reads from, which knows it only from its record; the params arrive
// byte for byte.
func TestMCPParamsReachTheHostThroughTheRecord(t *testing.T) {
	t.Parallel()
	s, other := newTwoReplicas(t)
	s.advertise(t, "laptop", "echo")
	stream, stop := s.follow(t, "laptop")
	defer stop()

	params := `{"inputResponses":{"name":{"action":"accept","content":{"name":"Alice"}}},"requestState":"st-1"}`
	res, err := other.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: "{}", McpParams: &params})
	if err != nil {
		t.Fatal(err)
	}
	inv := next(t, stream).GetInvocation()
	if inv.GetInvocation() != res.GetInvocation() || inv.McpParams == nil || inv.GetMcpParams() != params {
		t.Fatalf("handed %v; want mcp_params %s", inv, params)
	}
	if _, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New("ok", "", 0)}); err != nil {
		t.Fatal(err)
	}
	c, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation()})
	if err != nil || c.GetCapture().GetStdout() != "ok" {
		t.Fatalf("capture = %v, %v", c, err)
	}

	// Without params, none arrive.
	s.invoke(t, "laptop", "echo", "{}")
	if inv := next(t, stream).GetInvocation(); inv.McpParams != nil {
		t.Fatalf("handed %v; want no mcp_params", inv)
	}
}

func TestMCPParamsAreBoundedAndAnObject(t *testing.T) {
	t.Parallel()
	s := newSuite(t, func(b *mailbox.Bounds) { b.MaxInputBytes = 16 << 10 })
	s.advertise(t, "laptop", "echo")
	for _, tt := range []struct {
		params string
		code   codes.Code
		msg    string
	}{
		{`[1]`, codes.InvalidArgument, "mcp_params is not a JSON object"},
		{`{"requestState":`, codes.InvalidArgument, "mcp_params is not valid JSON"},
		{`{"requestState":"` + strings.Repeat("x", 16<<10) + `"}`, codes.ResourceExhausted,
			"input and mcp_params: 16405 bytes together is more than the 16384 this mailbox takes for one invocation (--max-input-bytes)"},
	} {
		_, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: "{}", McpParams: &tt.params})
		testkit.Refused(t, err, tt.code, tt.msg)
		_, err = s.mb.Call(driver, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: "{}", McpParams: &tt.params})
		testkit.Refused(t, err, tt.code, tt.msg)
	}
}
