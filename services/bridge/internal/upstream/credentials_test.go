package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// credentials are the bridge's own for one server (docs/design.md §4).
var credentials = map[string]string{"Authorization": "Bearer bridge-own-secret", "X-Api-Key": "k-123"}

// recorder is a real MCP server (the official SDK's Streamable HTTP handler,
// with sessions) that keeps the headers of every request it serves. It runs
// in the test process rather than behind a reverse proxy: a proxy hop to a
// separate server added a connection of its own that could drop a response
// under load, which is not what these tests are about.
func recorder(t *testing.T) (*httptest.Server, *headerLog) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "recorder", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "test_simple_text", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "This is a simple text response for testing."}}}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	log := &headerLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.mu.Lock()
		log.headers = append(log.headers, r.Header.Clone())
		log.methods = append(log.methods, r.Method)
		log.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv, log
}

// A server that redirects the bridge to another origin gets no
// credentials there: the redirect is refused, with a sentence naming both
// places, and the other origin never sees the headers.
func TestCredentialsNeverFollowARedirectToAnotherOrigin(t *testing.T) {
	t.Parallel()
	elsewhere, log := recorder(t)
	configured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(configured.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, httpConfig(configured.URL+"/", credentials), newEvents().options(t))
	if err == nil {
		s.Close()
	}
	want := "redirected the bridge to " + elsewhere.URL + "/, another origin: the bridge sends this server's credentials only to " + configured.URL + " and follows no redirect elsewhere"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open = %v\nwant an error containing %q", err, want)
	}
	seen, _ := log.all()
	for i, h := range seen {
		for k := range credentials {
			if h.Get(k) != "" {
				t.Errorf("request %d to the other origin carried %s: %v", i, k, h)
			}
		}
	}
}

// A redirect within the configured origin is followed, credentials and
// all: it is the same server.
func TestARedirectWithinTheOriginKeepsTheCredentials(t *testing.T) {
	t.Parallel()
	srv, log := recorder(t)
	// The recorder, served again with /old redirected to / on its origin.
	mux := http.NewServeMux()
	mux.Handle("/old", http.RedirectHandler("/", http.StatusTemporaryRedirect))
	mux.Handle("/", srv.Config.Handler)
	same := httptest.NewServer(mux)
	t.Cleanup(same.Close)

	s := open(t, httpConfig(same.URL+"/old", credentials), newEvents().options(t))
	if got := call(t, s, "test_simple_text", `{}`); got.GetExitCode() != 0 {
		t.Fatalf("a call through a same-origin redirect = %v", got)
	}
	seen, _ := log.all()
	if len(seen) == 0 {
		t.Fatal("no request reached the server")
	}
	for i, h := range seen {
		if h.Get("Authorization") != credentials["Authorization"] || h.Get("X-Api-Key") != credentials["X-Api-Key"] {
			t.Errorf("request %d within the origin lacks the credentials: %v", i, h)
		}
	}
}
