package gateway_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestAMountedServerAsksTheClientThroughTheMailbox: a mounted server of
// the stateless era asks for input in its result (input_required). A
// client of that era gets the result and calls again with its answer; a
// client of 2025-11-25 is asked in its session by the endpoint, which calls
// again for it. Either way the answer reaches the server through the
// mailbox, and so do the client's capabilities: a client that cannot be
// asked is not. A prompt asks and is answered the same way, through the
// bridge.
func TestAMountedServerAsksTheClientThroughTheMailbox(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	s.mountConformance(t)
	const (
		asks   = "conf_test_input_required_result_elicitation"
		caps   = "conf_test_input_required_result_capabilities"
		prompt = "conf_test_input_required_result_prompt"
	)
	forEachRevision(t, func(t *testing.T, rev string) {
		var asked atomic.Int32
		answering := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			switch req.Params.Message {
			case "What is your name?":
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice"}}, nil
			case "Please provide context for the prompt":
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "tea"}}, nil
			}
			t.Errorf("asked %q; want one of the server's questions", req.Params.Message)
			return &mcp.ElicitResult{Action: "decline"}, nil
		}}
		cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), answering)
		testkit.Eventually(t, asks+" listed", 20*time.Second, func() bool {
			_, listed := toolNames(t, cs)
			return listed[asks] != nil
		})
		call := func(cs *mcp.ClientSession, tool string) string {
			t.Helper()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
			if err != nil || res.IsError || len(texts(res)) != 1 {
				t.Fatalf("tools/call %s = %+v, %v", tool, res, err)
			}
			return texts(res)[0]
		}
		if got := call(cs, asks); got != "Hello, Alice!" || asked.Load() != 1 {
			t.Fatalf("tools/call %s = %q, the client asked %d times; want Hello, Alice! after one question", asks, got, asked.Load())
		}
		if got := call(cs, caps); got != "Capability-aware input requests fulfilled" || asked.Load() != 2 {
			t.Fatalf("tools/call %s by a client that can be asked = %q (asked %d times)", caps, got, asked.Load())
		}
		// prompts/get asks the same way, and is answered the same way.
		p, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: prompt})
		if err != nil || len(p.Messages) != 1 || asked.Load() != 3 {
			t.Fatalf("prompts/get %s = %+v, %v (asked %d times)", prompt, p, err, asked.Load())
		}
		if text, _ := p.Messages[0].Content.(*mcp.TextContent); text == nil || text.Text != "Context: tea" {
			t.Fatalf("prompts/get %s = %+v; want the prompt made with the answer", prompt, p.Messages[0].Content)
		}
		// Declaring nothing (the SDK's client declares roots unless told).
		mute := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		if got := call(mute, caps); got != "No declared client capability supports an in-band input request" {
			t.Fatalf("tools/call %s by a client that cannot be asked = %q; want the server not to ask", caps, got)
		}
		// A task is asked through tasks/get and answered with tasks/update:
		// the bridge turns the server's input requests into questions and
		// calls it again with the answers, in the same invocation.
		meta := taskMeta()
		meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)["elicitation"] = map[string]any{}
		raw := s.rawMCPSession(t, rev)
		created := decodeTask(t, "tools/call as a task", raw.send(t, "tools/call", map[string]any{"name": asks, "arguments": map[string]any{}, "_meta": meta}, false))
		asking := awaitTask(t, raw, created.TaskID)
		if asking.Status != "input_required" || len(asking.InputRequests) != 1 {
			t.Fatalf("task of %s reads %+v; want input_required with the server's input request", asks, asking)
		}
		answers := map[string]any{}
		for k := range asking.InputRequests {
			answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Tasked"}}
		}
		if done := answerTask(t, raw, created.TaskID, answers, meta); done.Status != "completed" || !strings.Contains(string(done.Result), "Hello, Tasked!") {
			t.Fatalf("task of %s ended %+v; want completed with the answer", asks, done)
		}
	})
}
