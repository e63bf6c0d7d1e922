package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A mounted server of the era with sessions that asks its client during a
// tool call (elicitation/create, sampling/createMessage) asks the agent
// behind the endpoint, whatever its era: a client in a session that
// declared the capability is asked on its session; a stateless client gets
// an input_required result and its retry resumes the same invocation. Its
// answer reaches the server through the mailbox (the result shows it); a
// client that declared neither is not asked, and the server hears the
// bridge's refusal.
func TestAMountedServersQuestionsReachTheClientInEitherEra(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	addr := testkit.FreeAddr(t)
	testkit.StartHTTP(t, testkit.Tool(t, "everything-server"), addr, "-stateless=false")
	st, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "asks", Config: &bridgev1.ServerConfig{
		Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: "http://" + addr + "/"}}}})
	if err != nil || st.GetServer().GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("Mount(asks) = %v, %v", st, err)
	}
	s.join(t, "default", "asks")
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) { questionsReachTheClient(t, s, era) })
	}
	t.Run("a retry resumes its own invocation", func(t *testing.T) { retriesResumeTheirInvocation(t, s) })
	t.Run("a task is input_required until tasks/update", func(t *testing.T) { taskAsksThroughTasksGet(t, s) })
	t.Run("a plugin backend asks the same way", func(t *testing.T) { pluginAsks(t, s) })
}

// A plugin backend's ask line is a question like a server's: the client
// in a session is asked, and the backend gets its answer.
func pluginAsks(t *testing.T, s *suite) {
	fake := testkit.Build(t, "github.com/switchboard-run/switchboard/services/bridge/internal/plugin/testdata/fakebackend")
	if _, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "pask", Config: &bridgev1.ServerConfig{
		Transport: &bridgev1.ServerConfig_Plugin{Plugin: &bridgev1.PluginManifest{Command: []string{fake},
			Tools: []*registryv1.Tool{{Name: "ask", Description: "asks", InputSchema: `{"type":"object"}`}}}}}}); err != nil {
		t.Fatal(err)
	}
	s.join(t, "default", "pask")
	cs := s.connectAt(t, "2025-11-25", "/mcp", as("alice", identity.Driver), &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"said": req.Params.Message}}, nil
		}})
	testkit.Eventually(t, "pask_ask listed", 20*time.Second, func() bool {
		_, listed := toolNames(t, cs)
		return listed["pask_ask"] != nil
	})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "pask_ask", Arguments: map[string]any{}})
	if err != nil || res.IsError || len(texts(res)) != 1 || texts(res)[0] != `{"error":null,"result":{"action":"accept","content":{"said":"Sure?"}}}` {
		t.Fatalf("tools/call pask_ask = %+v, %v; want the backend's reply carrying the client's answer", res, err)
	}
}

// A task whose server asks reads input_required, with the question as an
// input request, on any gateway replica; tasks/update there answers it, and
// the task completes with the server's result carrying the answer.
func taskAsksThroughTasksGet(t *testing.T, s *suite) {
	meta := func() map[string]any {
		m := taskMeta()
		m["io.modelcontextprotocol/clientCapabilities"].(map[string]any)["elicitation"] = map[string]any{}
		return m
	}
	first := s.rawMCPSessionAs(t, "2026-07-28", "alice")
	created := decodeTask(t, "tools/call as a task", first.send(t, "tools/call", map[string]any{
		"name": "asks_test_elicitation", "arguments": map[string]any{"message": "Which task?"}, "_meta": meta()}, false))
	elsewhere := &rawMCPClient{url: serveGatewayReplica(t, s.Addr) + "/mcp", rev: "2026-07-28", h: as("alice", identity.Driver)}
	asking := awaitTask(t, elsewhere, created.TaskID)
	if asking.Status != "input_required" || len(asking.InputRequests) != 1 {
		t.Fatalf("the task reads %+v; want input_required with one input request", asking)
	}
	var key string
	for k, req := range asking.InputRequests {
		if req.Method != "elicitation/create" || req.Params["message"] != "Which task?" {
			t.Fatalf("input request %q = %+v; want the server's elicitation", k, req)
		}
		key = k
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"username": "alice-by-task"}}}
	if done := answerTask(t, elsewhere, created.TaskID, answer, meta()); done.Status != "completed" || !strings.Contains(string(done.Result), "alice-by-task") {
		t.Fatalf("the task ended %+v; want completed with the answer in its result", done)
	}
}

// The stateless round trip on the wire: the question comes as an
// input_required result whose requestState names the running invocation;
// a retry by anyone but its poster, for another tool, or with a state the
// endpoint never gave is refused; its poster's retry answers it, and the
// server's result carries the answer.
func retriesResumeTheirInvocation(t *testing.T, s *suite) {
	alice, bob := s.rawMCPSessionAs(t, "2026-07-28", "alice"), s.rawMCPSessionAs(t, "2026-07-28", "bob")
	caps := map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}}}
	call := func(c *rawMCPClient, tool string, extra map[string]any) map[string]any {
		t.Helper()
		params := map[string]any{"name": tool, "arguments": map[string]any{"message": "Who are you?"}, "_meta": maps.Clone(caps)}
		maps.Copy(params, extra)
		r := c.send(t, "tools/call", params, false)
		var res map[string]any
		if r.code != 0 || json.Unmarshal(r.result, &res) != nil {
			t.Fatalf("tools/call %s: HTTP %d, error %d %q, result %s", tool, r.status, r.code, r.msg, r.result)
		}
		return res
	}
	first := call(alice, "asks_test_elicitation", nil)
	state, _ := first["requestState"].(string)
	asked, _ := first["inputRequests"].(map[string]any)
	if first["resultType"] != "input_required" || len(asked) != 1 || !strings.HasPrefix(state, "run.switchboard/invocation:inv-") {
		t.Fatalf("the first call answered %v; want input_required with one request and a state naming the invocation", first)
	}
	var question string
	for q, req := range asked {
		if method := req.(map[string]any)["method"]; method != "elicitation/create" {
			t.Fatalf("input request %q is %v; want elicitation/create", q, method)
		}
		question = q
	}
	// The console's invocations view shows the question waiting.
	inv := strings.Split(strings.TrimPrefix(state, "run.switchboard/invocation:"), ":")[0]
	s.consoleLive(t, "/console/api/invocations/live", aliceHeader).until(t, "invocation-list",
		contains(`data-invocation="`+inv+`" data-phase="handed out"`, "waiting for 1 answer(s)"))
	answer := map[string]any{question: map[string]any{"action": "accept", "content": map[string]any{"username": "alice-on-the-wire"}}}
	refused := func(who string, got map[string]any, want string) {
		t.Helper()
		if got["isError"] != true || !strings.Contains(fmt.Sprint(got["content"]), want) {
			t.Errorf("%s: answered %v; want an isError result saying %q", who, got, want)
		}
	}
	refused("bob's retry", call(bob, "asks_test_elicitation", map[string]any{"requestState": state, "inputResponses": answer}), "no invocation")
	refused("a retry of another tool", call(alice, "asks_test_sampling", map[string]any{"requestState": state, "inputResponses": answer}),
		"not of \"asks_test_sampling\"")
	refused("a forged state", call(alice, "asks_test_elicitation", map[string]any{"requestState": "run.switchboard/invocation:nope", "inputResponses": answer}),
		"not one this endpoint gave")
	done := call(alice, "asks_test_elicitation", map[string]any{"requestState": state, "inputResponses": answer})
	if done["isError"] == true || !strings.Contains(fmt.Sprint(done["content"]), "alice-on-the-wire") {
		t.Errorf("alice's retry answered %v; want the server's result with her answer", done)
	}
}

func questionsReachTheClient(t *testing.T, s *suite, era string) {
	var mu sync.Mutex
	var asked []string
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, "elicit: "+req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "alice-from-the-agent"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, "sample")
			return &mcp.CreateMessageResult{Role: "assistant", Model: "agent-model", Content: &mcp.TextContent{Text: "Paris, says the agent"}}, nil
		},
	}
	cs := s.connectAt(t, era, "/mcp", as("alice", identity.Driver), opts)
	testkit.Eventually(t, "asks_test_elicitation listed", 20*time.Second, func() bool {
		_, listed := toolNames(t, cs)
		return listed["asks_test_elicitation"] != nil
	})
	text := func(cs *mcp.ClientSession, tool, args string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var in map[string]any
		if err := json.Unmarshal([]byte(args), &in); err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: in})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("tools/call %s = %+v, %v", tool, res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := text(cs, "asks_test_elicitation", `{"message": "Who are you?"}`); !strings.Contains(got, "alice-from-the-agent") {
		t.Errorf("test_elicitation answered %q; want the agent's answer in it", got)
	}
	if got := text(cs, "asks_test_sampling", `{"prompt": "Capital of France?"}`); !strings.Contains(got, "Paris, says the agent") {
		t.Errorf("test_sampling answered %q; want the agent's sample in it", got)
	}
	mu.Lock()
	if len(asked) != 2 || asked[0] != "elicit: Who are you?" || asked[1] != "sample" {
		t.Errorf("the agent was asked %q; want the elicitation, then the sampling", asked)
	}
	mu.Unlock()

	// A client that declared neither is never asked; the server hears why.
	plain := s.connectAt(t, era, "/mcp", as("alice", identity.Driver), nil)
	if got := text(plain, "asks_test_elicitation", `{"message": "Who are you?"}`); !strings.Contains(got, "cannot be asked") {
		t.Errorf("test_elicitation from a client that cannot be asked answered %q; want the bridge's refusal", got)
	}
}
