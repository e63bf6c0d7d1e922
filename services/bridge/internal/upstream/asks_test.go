package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A mounted server that asks the bridge for something (docs/mcp.md, "The
// bridge, toward a mounted server") gets what the table says, in every
// mode. In a session its own requests are refused (no roots, a sentence
// for sampling and elicitation), so the call fails rather than waits for a
// user who is not there. A server of the stateless era asks in its result
// (input_required), which comes back as it is, for the driver to answer.
func TestAServerThatAsksTheBridgeGetsWhatTheMethodsTableSays(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := conformance(t, m, newEvents().options(t))
		ask := func(tool, args string) (*mcp.CallToolResult, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			return s.Call(ctx, tool, json.RawMessage(args), nil, "", nil)
		}
		stateless := s.Info().ProtocolVersion >= statelessRevision
		if stateless {
			for tool, key := range map[string]string{
				"test_input_required_result_list_roots":  "client_roots",
				"test_input_required_result_sampling":    "capital_question",
				"test_input_required_result_elicitation": "user_name",
			} {
				res, err := ask(tool, `{}`)
				if err != nil || !res.NeedsInput() || res.InputRequests[key] == nil {
					t.Errorf("%s: %+v, %v; want input_required asking %q", tool, res, err, key)
				}
			}
			return
		}
		res, err := ask("test_input_required_result_list_roots", `{}`)
		if err != nil || res.IsError || len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "Client exposed 0 root(s)") {
			t.Fatalf("roots: %+v, %v; want the call to see no roots", res, err)
		}
		for _, c := range []struct{ tool, args, want string }{
			// The server's request reaches the bridge, which refuses it
			// with a sentence the server shows: no driver can be asked.
			{"test_sampling", `{"prompt": "hi"}`, samplingRefusal},
			{"test_elicitation", `{"message": "hi"}`, elicitationRefusal},
			// An input_required result is fulfilled by the server's SDK
			// asking the bridge in the session.
			{"test_input_required_result_sampling", `{}`, samplingRefusal},
			{"test_input_required_result_elicitation", `{}`, elicitationRefusal},
		} {
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

// A driver's answers reach a stateless-era server with the retry, and so
// do its capabilities: the server asks only what the driver can answer.
func TestADriversAnswersAndCapabilitiesReachTheServer(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := conformance(t, m, newEvents().options(t))
		if s.Info().ProtocolVersion < statelessRevision {
			t.Skipf("a server of %s reads the capabilities its session declared", s.Info().ProtocolVersion)
		}
		call := func(tool, params string) *mcp.CallToolResult {
			t.Helper()
			from, err := ParseClientParams(params)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			res, err := s.Call(ctx, tool, json.RawMessage(`{}`), from, "", nil)
			if err != nil {
				t.Fatalf("%s with %s: %v", tool, params, err)
			}
			return res
		}
		first := call("test_input_required_result_elicitation", `{}`)
		state, _ := json.Marshal(first.RequestState)
		res := call("test_input_required_result_elicitation",
			`{"inputResponses":{"user_name":{"action":"accept","content":{"name":"Alice"}}},"requestState":`+string(state)+`}`)
		if res.NeedsInput() || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "Hello, Alice!" {
			t.Fatalf("the retry with the answer: %+v; want Hello, Alice!", res)
		}
		res = call("test_input_required_result_capabilities", `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}`)
		if !res.NeedsInput() || len(res.InputRequests) != 1 || res.InputRequests["greeting"] == nil {
			t.Fatalf("asking a driver that can sample only: %+v; want one sampling request", res.InputRequests)
		}
	})
}

func TestClientParamsAreDecodedStrictly(t *testing.T) {
	t.Parallel()
	for params, want := range map[string]string{
		`{"inputResponses":{},"cursor":"x"}`:                          `mcp_params: json: unknown field "cursor"`,
		`{"_meta":{"progressToken":1}}`:                               `mcp_params: json: unknown field "progressToken"`,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":[]}}`: `mcp_params: _meta "io.modelcontextprotocol/clientCapabilities" is not an object`,
		`{"requestState":7}`:                                          `mcp_params: json: cannot unmarshal number into Go struct field ClientParams.requestState of type string`,
		`{} {}`:                                                       `mcp_params: more than one JSON value`,
	} {
		if _, err := ParseClientParams(params); err == nil || err.Error() != want {
			t.Errorf("%s: %v; want %q", params, err, want)
		}
	}
}

// A server that asks while no call in flight has a driver that can be
// asked is refused at once with the bridge's sentence, and other requests
// pass on.
func TestAnElicitationRequestIsRefusedWithASentence(t *testing.T) {
	t.Parallel()
	passed := ""
	h := (&Session{hearing: map[*Hearing]bool{}}).asks(func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
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

// A server's request during a call whose driver can be asked reaches the
// driver (Hearing.Ask), and the driver's answer reaches the server: the
// tool's result shows it; a driver's refusal reaches it as its error.
func TestAServersQuestionReachesTheCallsDriver(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := conformance(t, m, newEvents().options(t))
		if s.Info().ProtocolVersion >= statelessRevision {
			t.Skipf("a server of %s asks with input_required results", s.Info().ProtocolVersion)
		}
		var asked []string
		hear := &Hearing{Ask: func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			asked = append(asked, method+" "+string(params))
			if method == "sampling/createMessage" {
				return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"Paris, says the driver"},"model":"driver-model"}`), nil
			}
			return json.RawMessage(`{"action":"accept","content":{"username":"alice"}}`), nil
		}}
		call := func(tool, args string) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			res, err := s.Call(ctx, tool, json.RawMessage(args), nil, "", hear)
			if err != nil || len(res.Content) == 0 {
				t.Fatalf("%s: %+v, %v", tool, res, err)
			}
			return res.Content[0].(*mcp.TextContent).Text
		}
		if got := call("test_elicitation", `{"message": "Your name?"}`); !strings.Contains(got, "alice") {
			t.Errorf("test_elicitation answered %q; want the driver's answer in it", got)
		}
		if got := call("test_sampling", `{"prompt": "Capital of France?"}`); !strings.Contains(got, "Paris, says the driver") {
			t.Errorf("test_sampling answered %q; want the driver's sample in it", got)
		}
		if len(asked) != 2 || !strings.HasPrefix(asked[0], "elicitation/create {") || !strings.Contains(asked[0], "Your name?") {
			t.Errorf("the driver was asked %q; want the elicitation with its message, then the sampling", asked)
		}
		hear.Ask = func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, &jsonrpc.Error{Code: -32601, Message: "the client declared no elicitation"}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		res, err := s.Call(ctx, "test_elicitation", json.RawMessage(`{"message": "again?"}`), nil, "", hear)
		got := fmt.Sprint(err)
		if err == nil && len(res.Content) > 0 {
			got = res.Content[0].(*mcp.TextContent).Text
		}
		if !strings.Contains(got, "method not found") { // -32601, as the server's SDK names it
			t.Errorf("a refused question: %q; want the driver's refusal (-32601) to reach the server", got)
		}
	})
}
