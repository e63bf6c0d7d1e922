package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A mounted server that asks the bridge for something (docs/mcp.md, "The
// bridge, toward a mounted server") gets what the table says, in every
// mode: no roots, and a refusal of sampling and elicitation, whether it asks
// with a request of its own (sessions) or with an input_required result
// (2026-07-28), so the call fails rather than waits for a user who is not
// there.
func TestAServerThatAsksTheBridgeGetsWhatTheMethodsTableSays(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := conformance(t, m, newEvents().options(t))
		ask := func(tool, args string) (*mcp.CallToolResult, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			return s.Call(ctx, tool, json.RawMessage(args), "", nil)
		}
		res, err := ask("test_input_required_result_list_roots", `{}`)
		if err != nil || res.IsError || len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "Client exposed 0 root(s)") {
			t.Fatalf("roots: %+v, %v; want the call to see no roots", res, err)
		}
		stateless := s.Info().ProtocolVersion >= "2026-07-28"
		for _, c := range []struct {
			tool, args, want string
			asks             bool // the server sends a request of its own, which it can only do in a session
		}{
			// In a session the server's request reaches the bridge, which
			// refuses it with a sentence the server shows.
			{"test_sampling", `{"prompt": "hi"}`, samplingRefusal, true},
			// The server's SDK checks the client's capabilities before it
			// asks for elicitation, so it refuses itself.
			{"test_elicitation", `{"message": "hi"}`, "client does not support elicitation", true},
			// An input_required result is fulfilled by asking the bridge
			// in a session, and inside the bridge's SDK without one.
			{"test_input_required_result_sampling", `{}`, samplingRefusal, false},
			{"test_input_required_result_elicitation", `{}`, "client does not support elicitation", false},
		} {
			if stateless {
				if c.asks {
					// 2026-07-28 has no server-to-client requests: the server's
					// SDK refuses to send one, and the call fails there.
					c.want = "cannot be sent while serving a request on protocol version 2026-07-28"
				} else if c.want == samplingRefusal {
					c.want = "client does not support CreateMessage" // the SDK's client, refusing itself
				}
			}
			res, err := ask(c.tool, c.args)
			got := ""
			if err != nil {
				got = err.Error()
			} else if res.IsError && len(res.Content) > 0 {
				got = res.Content[0].(*mcp.TextContent).Text
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("%s: %q; want a failure saying %q", c.tool, got, c.want)
			}
		}
	})
}

// A server that asks for elicitation although the bridge declared no such
// capability (the go-sdk's server checks and never does; others may) is
// refused at once with the bridge's sentence, and other requests pass on.
func TestAnElicitationRequestIsRefusedWithASentence(t *testing.T) {
	t.Parallel()
	passed := ""
	h := refuseAsks(func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		passed = method
		return nil, nil
	})
	for method, want := range map[string]*jsonrpc.Error{
		"elicitation/create":     {Code: jsonrpc.CodeInvalidParams, Message: elicitationRefusal},
		"sampling/createMessage": {Code: codeUnsupported, Message: samplingRefusal},
	} {
		_, err := h(context.Background(), method, nil)
		var got *jsonrpc.Error
		if !errors.As(err, &got) || got.Code != want.Code || got.Message != want.Message {
			t.Errorf("%s: %v; want %d %q", method, err, want.Code, want.Message)
		}
	}
	if _, err := h(context.Background(), "ping", nil); err != nil || passed != "ping" {
		t.Errorf("ping: %v, passed on %q; want it passed on", err, passed)
	}
}
