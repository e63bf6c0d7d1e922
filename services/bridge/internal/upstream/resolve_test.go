package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A driver that resolves (a Task) is asked a stateless-era server's input
// requests during the run, all of a round at once, whatever their method;
// the server is called again with the answers and its requestState until
// it answers. A refused question ends the call with the client's error.
func TestADriverThatResolvesIsAskedEachRoundOfInputRequests(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := conformance(t, m, newEvents().options(t))
		if s.Info().ProtocolVersion < statelessRevision {
			t.Skipf("a server of %s asks in its session (asks.go)", s.Info().ProtocolVersion)
		}
		from, err := ParseClientParams(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{},"roots":{}},"run.switchboard/answers":true,"run.switchboard/resolve":true}}`)
		if err != nil {
			t.Fatal(err)
		}
		answers := map[string]string{
			"elicitation/create":     `{"action":"accept","content":{"name":"Ada","color":"green"}}`,
			"sampling/createMessage": `{"role":"assistant","content":{"type":"text","text":"Hello"},"model":"m"}`,
			"roots/list":             `{"roots":[{"uri":"file:///work","name":"work"}]}`,
		}
		var mu sync.Mutex
		var asked []string
		refuse := "" // a method the client refuses
		hear := &Hearing{Ask: func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, method)
			if method == refuse {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no such capability"}
			}
			return json.RawMessage(answers[method]), nil
		}}
		call := func(tool, args string) (*mcp.CallToolResult, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			mu.Lock()
			asked = nil
			mu.Unlock()
			return s.Call(ctx, tool, json.RawMessage(args), from, "", hear)
		}
		for _, c := range []struct {
			tool, want string
			rounds     int
		}{
			{"test_input_required_result_multi_round", "Multi-round complete: Ada likes green", 2},
			{"test_input_required_result_multiple_inputs", "Hello Ada — 1 root(s) visible", 3},
		} {
			res, err := call(c.tool, `{}`)
			if err != nil || res.NeedsInput() || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != c.want {
				t.Errorf("%s: %+v, %v; want %q", c.tool, res, err, c.want)
			}
			if len(asked) != c.rounds {
				t.Errorf("%s asked %v; want %d questions", c.tool, asked, c.rounds)
			}
		}
		refuse = "roots/list"
		_, err = call("test_input_required_result_multiple_inputs", `{}`)
		if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); !ok || rpcErr.Code != jsonrpc.CodeMethodNotFound ||
			!strings.Contains(rpcErr.Message, `input request "client_roots" (roots/list): the client answered: no such capability`) {
			t.Errorf("a refused question: %v; want the client's error, naming the request", err)
		}
		refuse = ""
		// Without resolve the result comes back as it is, for the driver.
		from.Meta.Resolve = false
		if res, err := call("test_input_required_result_multi_round", `{}`); err != nil || !res.NeedsInput() || len(asked) != 0 {
			t.Errorf("without resolve: %+v, %v, asked %v; want input_required, nothing asked", res, err, asked)
		}
	})
}
