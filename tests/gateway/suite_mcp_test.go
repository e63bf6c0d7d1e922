package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The suite's MCP clients are the Go SDK's, over Streamable HTTP.

// revisions are the two eras of MCP over HTTP the endpoint serves: the
// stateless one (no initialize, no session; list_changed on
// subscriptions/listen) and the one with sessions (list_changed on the
// session's GET stream). The SDK's client speaks the newest unless told.
var revisions = []string{"2026-07-28", "2025-11-25"}

// forEachRevision runs f once per revision, in parallel.
func forEachRevision(t *testing.T, f func(t *testing.T, rev string)) {
	for _, rev := range revisions {
		t.Run("protocol "+rev, func(t *testing.T) {
			t.Parallel()
			f(t, rev)
		})
	}
}

// connect opens an MCP session at path (/mcp or /mcp/<workspace>), in the
// newest revision.
func (s *suite) connect(t testing.TB, path string, h http.Header, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return s.connectAt(t, "", path, h, opts)
}

// connectAt is connect in revision rev, which the server must agree to.
func (s *suite) connectAt(t testing.TB, rev, path string, h http.Header, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := s.openSession(rev, path, h, opts)
	if err != nil {
		t.Fatalf("connecting to %s: %v", path, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; rev != "" && got != rev {
		t.Fatalf("asked for protocol %s, the server agreed to %s", rev, got)
	}
	return cs
}

// openSession is connectAt's attempt, for a test that expects a refusal.
func (s *suite) openSession(rev, path string, h http.Header, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + path,
		HTTPClient: testkit.HeaderClient(h)}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
}

// texts is a result's text blocks.
func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}
