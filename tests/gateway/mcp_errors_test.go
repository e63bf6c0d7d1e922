package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestAServersJSONRPCErrorReachesTheClient: the conformance server answers
// test_missing_capability with -32021 to a client without sampling (the
// bridge never declares it). Through the endpoint the client gets that
// error as the server sent it — status 400 in the stateless era, as
// SEP-2575 asks — and a task of the call is failed with it.
func TestAServersJSONRPCErrorReachesTheClient(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	s.mountConformance(t)
	const tool = "conf_test_missing_capability"
	const data = `{"requiredCapabilities":{"roots":{},"sampling":{}}}` // as the server encodes it
	forEachRevision(t, func(t *testing.T, rev string) {
		cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), nil)
		testkit.Eventually(t, tool+" listed", 20*time.Second, func() bool {
			_, listed := toolNames(t, cs)
			return listed[tool] != nil
		})
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); !ok || rpcErr.Code != mcp.CodeMissingRequiredClientCapabilities || string(rpcErr.Data) != data {
			t.Fatalf("tools/call %s = %v; want the server's -32021 with its data %s", tool, err, data)
		}

		c := s.rawMCPSession(t, rev)
		status := http.StatusOK
		if rev >= "2026-07-28" {
			status = http.StatusBadRequest
		}
		if r := c.send(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}, false); r.status != status || r.code != -32021 || string(r.data) != data {
			t.Fatalf("tools/call %s by hand: HTTP %d, %d %q %s; want HTTP %d, -32021 with the server's data", tool, r.status, r.code, r.msg, r.data, status)
		}
		done := awaitTask(t, c, startTask(t, c, tool).TaskID)
		if done.Status != "failed" || done.Result != nil || string(done.Error) == "" || done.StatusMessage == "" {
			t.Fatalf("the task of %s = %+v (error %s); want failed with the server's error", tool, done, done.Error)
		}
	})
}
