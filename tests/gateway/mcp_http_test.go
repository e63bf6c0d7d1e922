package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway"
)

// initialize is an MCP initialize request as any client sends it first.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

// post sends initialize to path with h and returns the status and the
// envelope's sentence (or the body, when it is not an envelope).
func (s *suite) post(t testing.TB, path string, h http.Header, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range h {
		req.Header[k] = vs
	}
	if host != "" {
		req.Host = host
	}
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var env struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != "" {
		return res.StatusCode, env.Error
	}
	return res.StatusCode, string(body)
}

// slowHandle calls slowbox_wait with a short timeout on cs and returns the
// handle the answer names.
func slowHandle(t testing.TB, cs *mcp.ClientSession, slow *follower) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slowbox_wait", Arguments: map[string]any{},
		Meta: mcp.Meta{"run.switchboard/timeout": "300ms"}})
	if err != nil || !res.IsError || !strings.Contains(texts(res)[0], "is still running as invocation inv-") {
		t.Fatalf("the slow call answered %v, %v", res, err)
	}
	return testkit.Receive(t, slow.invocations, 5*time.Second, "the host to be handed the invocation").GetInvocation()
}

// poster reports whether id was posted by name: only its poster may
// collect it (anyone else is told it is absent).
func (s *suite) poster(t testing.TB, id, name string) bool {
	t.Helper()
	_, err := s.Mailbox.Capture(testkit.As(name, identity.Driver), &mailboxv1.CaptureRequest{Invocation: id})
	return err == nil
}

func TestBearerTokensOpenTheMCPEndpointUntilRevoked(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	slow := s.waiter(t, "slowbox")
	mint := func(name, grade string) *registryv1.CreateTokenResponse {
		t.Helper()
		tok, err := s.Registry.CreateToken(opsCtx, &registryv1.CreateTokenRequest{Identity: name, Grade: grade, Note: "mcp test", Workspaces: []string{"default"}})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	agent := mint("agent-bot", "driver")
	cs := s.connect(t, "/mcp", bearer(agent.GetSecret()), nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "laptop_cat", Arguments: map[string]any{"via": "token"}})
	if err != nil || res.IsError || texts(res)[0] != `{"via":"token"}` {
		t.Fatalf("a call with a token: %v, %v", res, err)
	}
	// The token's identity posts the calls.
	id := slowHandle(t, cs, slow)
	if !s.poster(t, id, "agent-bot") || s.poster(t, id, "alice") {
		t.Fatalf("%s was not posted by agent-bot alone", id)
	}

	// A host token may not drive.
	if st, got := s.post(t, "/mcp", bearer(mint("box", "host").GetSecret()), ""); st != http.StatusForbidden ||
		got != `"box" is a host and may not use the MCP endpoint: listing and calling tools takes a driver or an admin` {
		t.Fatalf("a host token: HTTP %d %s", st, got)
	}

	if _, err := s.Registry.RevokeToken(opsCtx, &registryv1.RevokeTokenRequest{Id: agent.GetToken().GetId()}); err != nil {
		t.Fatal(err)
	}
	if st, got := s.post(t, "/mcp", bearer(agent.GetSecret()), ""); st != http.StatusUnauthorized || got != "unknown or revoked token" {
		t.Fatalf("a revoked token: HTTP %d %s", st, got)
	}
	// Revocation takes effect at once, in the middle of a session.
	if _, err := cs.ListTools(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("the revoked token's open session still lists: %v", err)
	}
}

// The identity is derived for each request, never kept with the session:
// the same session, presenting another identity, acts as that one.
// An MCP session serves only the identity that began it: a call in it acts
// as that caller, and another caller who learned its Mcp-Session-Id can
// neither call in it nor end it — the session is absent to them (404), on
// this replica as on any other, and its owner goes on using it.
func TestAnMCPSessionServesOnlyTheIdentityThatBeganIt(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	slow := s.waiter(t, "slowbox")
	var mu sync.Mutex
	session := ""
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp",
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Switchboard-Identity", "alice")
			res, err := testkit.HTTP.Transport.RoundTrip(r)
			if err == nil && res.Header.Get("Mcp-Session-Id") != "" {
				mu.Lock()
				session = res.Header.Get("Mcp-Session-Id")
				mu.Unlock()
			}
			return res, err
		})}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if first := slowHandle(t, cs, slow); !s.poster(t, first, "alice") {
		t.Fatalf("alice's call %s was not posted by alice", first)
	}
	mu.Lock()
	stolen := session
	mu.Unlock()
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, s.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Switchboard-Identity", "bob")
		req.Header.Set("Mcp-Session-Id", stolen)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := testkit.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `of \"bob\": a session serves only the identity that began it`) {
			t.Errorf("bob's %s with alice's session: %d %s; want 404, the session absent to him", method, res.StatusCode, body)
		}
	}
	if again := slowHandle(t, cs, slow); !s.poster(t, again, "alice") {
		t.Fatalf("alice's session no longer served her: %s", again)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTheMCPEndpointRefusesForeignHostsAndOrigins(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true, configure: func(c *gateway.Config) { c.HTTPOrigins = "http://app.localhost:3000" }})
	alice := as("alice", identity.Driver)
	withOrigin := func(o string) http.Header {
		h := alice.Clone()
		h.Set("Origin", o)
		return h
	}
	tests := []struct {
		name, path string
		header     http.Header
		host       string
		status     int
		want       string
	}{
		{"a rebinding Host is refused", "/mcp", alice, "evil.example:8080", http.StatusForbidden,
			`this gateway does not answer to Host "evil.example:8080"`},
		{"a foreign page is refused", "/mcp", withOrigin("http://evil.example"), "", http.StatusForbidden,
			`this gateway refuses requests from Origin "http://evil.example": allow it with --http-origins if a page there should call this gateway`},
		{"the refusal comes before credentials are looked at", "/mcp", http.Header{"Origin": {"http://evil.example"}}, "", http.StatusForbidden,
			"refuses requests from Origin"},
		{"a configured origin is let through", "/mcp", withOrigin("http://app.localhost:3000"), "", http.StatusOK, `"serverInfo":{"name":"switchboard"`},
		{"localhost is a name of every gateway", "/mcp", alice, "localhost", http.StatusOK, `"protocolVersion":"2025-06-18"`},
		{"no identity is refused after the guard", "/mcp", http.Header{}, "", http.StatusUnauthorized, "no identity"},
		{"a workspace name that cannot be one", "/mcp/Bad_Name", alice, "", http.StatusBadRequest, `workspace name "Bad_Name" is not 1–64 chars`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, got := s.post(t, tt.path, tt.header, tt.host)
			if st != tt.status || !strings.Contains(got, tt.want) {
				t.Fatalf("HTTP %d %s\nwant %d containing %s", st, got, tt.status, tt.want)
			}
		})
	}
}

// Open MCP sessions hold notification streams (a session's GET stream, a
// stateless client's subscriptions/listen): a shutdown ends them rather
// than waiting its whole grace for them.
func TestShutdownEndsOpenMCPSessions(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	listening := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}}
	for _, rev := range revisions {
		cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), listening)
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := s.stopGateway(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the gateway took %v to shut down with a session open", took)
	} else {
		t.Logf("shut down in %v with a session open (grace 35s)", took)
	}
}

func TestTheGatewayRefusesMCPSettingsItCannotServeSafely(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"a public name in dev mode", []string{"--http-hosts", "localhost,gateway.example.com"},
			`--http-hosts: dev mode answers loopback names only, and "gateway.example.com" is not one`},
		{"an origin that is a URL", []string{"--http-origins", "http://localhost:3000/app"},
			`--http-origins: "http://localhost:3000/app" is not an origin such as https://app.example.com`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--dev", "--listen", "127.0.0.1:0"}, tt.args...)
			var stderr strings.Builder
			if err := gateway.Main(context.Background(), args, &stderr); err == nil || err.Error() != tt.want {
				t.Fatalf("Main(%q) = %v\nwant %q", args, err, tt.want)
			}
		})
	}
}
