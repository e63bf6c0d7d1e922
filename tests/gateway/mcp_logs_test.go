package gateway_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestAMountedServersLogMessagesReachTheClientThatAskedForThem: the
// conformance server logs three messages during test_tool_with_logging.
// A client that asked for log messages (logging/setLevel in a session, the
// call's _meta logLevel in the stateless era) gets all three, in order;
// one that did not gets none.
func TestAMountedServersLogMessagesReachTheClientThatAskedForThem(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	s.mountConformance(t)
	// One revision after the other: the bridge gives a message to a call
	// only while it is the server's one call in flight.
	for _, rev := range revisions {
		t.Run("protocol "+rev, func(t *testing.T) { logsReachTheClient(t, s, rev) })
	}
}

func logsReachTheClient(t *testing.T, s *suite, rev string) {
	const tool = "conf_test_tool_with_logging"
	want := []string{"Tool execution started", "Tool processing data", "Tool execution completed"}
	var mu sync.Mutex
	var heard []string
	opts := &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
		mu.Lock()
		defer mu.Unlock()
		if s, ok := req.Params.Data.(string); ok && req.Params.Level == "info" {
			heard = append(heard, s)
		}
	}}
	cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), opts)
	testkit.Eventually(t, tool+" listed", 20*time.Second, func() bool {
		_, listed := toolNames(t, cs)
		return listed[tool] != nil
	})
	call := func(meta mcp.Meta) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, Meta: meta})
		if err != nil || res.IsError {
			t.Fatalf("tools/call %s = %+v, %v", tool, res, err)
		}
	}
	// Not asked for: the messages stay the mount's (a second call, which
	// asks, would hear any that were wrongly sent ahead of its own).
	call(nil)
	var meta mcp.Meta
	if rev >= "2026-07-28" {
		meta = mcp.Meta{mcp.MetaKeyLogLevel: "debug"}
	} else if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	call(meta)
	// The SDK's client hands notifications to its handler after the
	// replies that follow them: wait for the three.
	testkit.Eventually(t, "the three log messages", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(heard) >= len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(heard, want) {
		t.Fatalf("heard %q; want %q", heard, want)
	}
}
