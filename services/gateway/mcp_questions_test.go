package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A mounted server of the era with sessions that asks its client during a
// tool call (elicitation/create, sampling/createMessage) asks the agent
// behind the endpoint: a client in a session that declared the capability
// is asked on its session, and its answer reaches the server through the
// mailbox (the result shows it); one that declared neither is not asked,
// and the server hears the bridge's refusal.
func TestAMountedServersQuestionsReachTheClientInItsSession(t *testing.T) {
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
	cs := s.connectAt(t, "2025-11-25", "/mcp", as("alice", identity.Driver), opts)
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
	plain := s.connectAt(t, "2025-11-25", "/mcp", as("alice", identity.Driver), nil)
	if got := text(plain, "asks_test_elicitation", `{"message": "Who are you?"}`); !strings.Contains(got, "cannot be asked") {
		t.Errorf("test_elicitation from a client that cannot be asked answered %q; want the bridge's refusal", got)
	}
}
