package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway"
)

// spy is an MCP server (the Go SDK's, over Streamable HTTP) that the
// bridge mounts; it records every request it is sent, headers and body.
type spy struct {
	URL  string
	mu   sync.Mutex
	seen []string
}

func newSpy(t testing.TB) *spy {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "spy", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Answers with its input."},
		func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil, nil
		})
	sp := &spy{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var b strings.Builder
		_ = r.Header.Write(&b)
		sp.mu.Lock()
		sp.seen = append(sp.seen, r.URL.String()+"\n"+b.String()+"\n"+string(body))
		sp.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	// The bridge holds a stream open to the spy: end it, or Close waits.
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	sp.URL = ts.URL
	return sp
}

// saw reports whether s appears in any request the spy was sent, and how
// many requests it was sent.
func (sp *spy) saw(s string) (bool, int) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, r := range sp.seen {
		if strings.Contains(r, s) {
			return true, len(sp.seen)
		}
	}
	return false, len(sp.seen)
}

// oauthSuite is a suite whose MCP endpoint takes the tokens of p, with
// the spy mounted as "spy" in the default workspace.
func oauthSuite(t testing.TB, p *provider) (*suite, *spy) {
	t.Helper()
	s := newSuite(t, options{configure: func(c *gateway.Config) {
		c.OAuth.Issuers = p.Issuer
		c.OAuth.Resource = "http://" + c.Listen
	}})
	sp := newSpy(t)
	st, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "spy", Config: &bridgev1.ServerConfig{
		Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: sp.URL}}}})
	if err != nil || st.GetServer().GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("Mount(spy) = %v, %v", st, err)
	}
	s.join(t, "default", "spy")
	return s, sp
}

// initializeWith posts an MCP initialize to path with h, returning the
// status, the WWW-Authenticate header and the envelope's sentence.
func (s *suite) initializeWith(t testing.TB, path string, h http.Header) (int, string, string) {
	t.Helper()
	hh := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	for k, v := range h {
		hh[k] = v
	}
	rep := do(t, s.Client, http.MethodPost, s.URL+path, hh, []byte(initialize))
	return rep.Status, rep.Header.Get("WWW-Authenticate"), envelopeError(rep.Body)
}

// The flow a client of the MCP authorization spec follows, against a real
// OpenID provider: 401 → the resource's metadata → the issuer's discovery →
// a token from its token endpoint → a tool call with it. The token reaches
// no one past the gateway.
func TestOAuthClientFollowsTheChallengeToAToolCall(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "")
	s, sp := oauthSuite(t, p)
	endpoint := s.URL + "/mcp/default"
	p.store.set([]string{endpoint}, 0)
	ctx := context.Background()

	// 1. Without a token: 401, and a challenge naming the metadata.
	st, challenge, _ := s.initializeWith(t, "/mcp/default", nil)
	if st != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d", st)
	}
	chs, err := oauthex.ParseWWWAuthenticate([]string{challenge})
	if err != nil || len(chs) != 1 || chs[0].Scheme != "bearer" {
		t.Fatalf("challenge %q: %v, %v", challenge, chs, err)
	}
	mdURL, scope := chs[0].Params["resource_metadata"], chs[0].Params["scope"]
	if mdURL != s.URL+"/.well-known/oauth-protected-resource/mcp/default" || scope != "switchboard:driver switchboard:workspace:default" {
		t.Fatalf("challenge %q", challenge)
	}
	// 2. The metadata names the resource and its authorization server.
	md, err := oauthex.GetProtectedResourceMetadata(ctx, mdURL, endpoint, s.Client)
	if err != nil || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != p.Issuer {
		t.Fatalf("metadata %+v, %v", md, err)
	}
	// 3. The issuer's discovery document names its token endpoint.
	asm, err := oauthex.GetAuthServerMeta(ctx, md.AuthorizationServers[0]+"/.well-known/openid-configuration", md.AuthorizationServers[0], s.Client)
	if err != nil || asm == nil || asm.TokenEndpoint == "" {
		t.Fatalf("discovery: %+v, %v", asm, err)
	}
	// 4. A token for the scopes the challenge named (client credentials).
	tok := p.token(t, asm.TokenEndpoint, strings.Fields(scope)...)
	// 5. A tool call through the MCP endpoint with the Go SDK's client.
	cs := s.connect(t, "/mcp/default", bearer(tok), nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "spy_echo", Arguments: map[string]any{"x": 1}})
	if err != nil || res.IsError || texts(res)[0] != "echoed" {
		t.Fatalf("the call with the provider's token: %v, %v", res, err)
	}
	// The mounted server was called, and never saw the caller's token.
	if seen, n := sp.saw(tok); seen || n == 0 {
		t.Fatalf("the mounted server saw the token: %v (of %d requests)", seen, n)
	}
	if seen, _ := sp.saw(strings.Split(tok, ".")[2]); seen {
		t.Fatal("the mounted server saw the token's signature")
	}

	// Switchboard's own tokens and the dev header keep working beside it.
	sbt, err := s.Registry.CreateToken(opsCtx, &registryv1.CreateTokenRequest{Identity: "agent-bot", Grade: "driver", Workspaces: []string{"default"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]http.Header{"a Switchboard token": bearer(sbt.GetSecret()), "the dev header": as("alice", "driver")} {
		if st, _, got := s.initializeWith(t, "/mcp/default", h); st != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", name, st, got)
		}
	}
}

// Each token the endpoint must not take is refused with a sentence saying
// why, and a challenge; the provider's key rotation is picked up without
// a restart.
func TestOAuthRefusesTokensItMustNotTake(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "")
	s, _ := oauthSuite(t, p)
	endpoint := s.URL + "/mcp/default"
	tokenURL := p.Issuer + "/oauth/token"
	scopes := []string{"switchboard:driver", "switchboard:workspace:default"}
	refused := func(t *testing.T, tok string, status int, sentence, code string) {
		t.Helper()
		st, challenge, got := s.initializeWith(t, "/mcp/default", bearer(tok))
		if st != status || got != sentence {
			t.Fatalf("HTTP %d %q\nwant %d %q", st, got, status, sentence)
		}
		if !strings.Contains(challenge, `error="`+code+`"`) || !strings.Contains(challenge, `resource_metadata="`+s.URL+`/.well-known/oauth-protected-resource/mcp/default"`) {
			t.Fatalf("challenge %q", challenge)
		}
	}
	accepted := func(t *testing.T, tok string) {
		t.Helper()
		if st, _, got := s.initializeWith(t, "/mcp/default", bearer(tok)); st != http.StatusOK {
			t.Fatalf("a good token: HTTP %d %s", st, got)
		}
	}

	t.Run("another audience", func(t *testing.T) {
		other := "https://api.example.com/mcp/default"
		p.store.set([]string{other}, 0)
		tok := p.token(t, tokenURL, scopes...)
		p.store.set([]string{endpoint}, 0)
		refused(t, tok, http.StatusUnauthorized, `the access token is for "`+other+`", not this endpoint: ask `+p.Issuer+` for a token with resource=`+endpoint, "invalid_token")
		// A token for the gateway as a whole is for this endpoint too.
		p.store.set([]string{s.URL}, 0)
		accepted(t, p.token(t, tokenURL, scopes...))
		p.store.set([]string{endpoint}, 0)
	})
	t.Run("expired", func(t *testing.T) {
		p.store.set([]string{endpoint}, -time.Minute)
		tok := p.token(t, tokenURL, scopes...)
		p.store.set([]string{endpoint}, 0)
		st, _, got := s.initializeWith(t, "/mcp/default", bearer(tok))
		if st != http.StatusUnauthorized || !strings.HasPrefix(got, "the access token expired at ") || !strings.HasSuffix(got, "; get a new one from "+p.Issuer) {
			t.Fatalf("an expired token: HTTP %d %s", st, got)
		}
	})
	t.Run("rotated-out key", func(t *testing.T) {
		p.store.set([]string{endpoint}, 0)
		old := p.token(t, tokenURL, scopes...)
		accepted(t, old)
		p.store.rotate(t)
		// The provider may sign a token or two more with the key it had
		// loaded: wait for one signed by the new key.
		var fresh string
		testkit.Eventually(t, "a token signed by the provider's new key", 30*time.Second, func() bool {
			fresh = p.token(t, tokenURL, scopes...)
			return p.store.keyIDOf(t, fresh) != p.store.keyIDOf(t, old)
		})
		// A token signed by the new key is taken without a restart: its
		// unknown key id makes the gateway fetch the keys again.
		accepted(t, fresh)
		// The retired key is published no more, so its token is refused —
		// once the key set holds what that fetch brought: go-oidc's
		// RemoteKeySet lets a fetch's waiters go before it replaces its
		// cached keys, so for a moment the retired key may still be there.
		testkit.Eventually(t, "the retired key's token refused", 30*time.Second, func() bool {
			st, _, _ := s.initializeWith(t, "/mcp/default", bearer(old))
			return st != http.StatusOK
		})
		refused(t, old, http.StatusUnauthorized, `the access token's signature matches none of the keys `+p.Issuer+
			` publishes now (its key id is "`+p.store.keyIDOf(t, old)+`"): it was signed by a retired key or by someone else; get a new token`, "invalid_token")
	})
	t.Run("unknown issuer", func(t *testing.T) {
		stranger := newProvider(t, endpoint)
		tok := stranger.token(t, stranger.Issuer+"/oauth/token", scopes...)
		refused(t, tok, http.StatusUnauthorized, `tokens issued by "`+stranger.Issuer+`" are not accepted here; this endpoint accepts tokens from `+p.Issuer, "invalid_token")
	})
	t.Run("missing scope", func(t *testing.T) {
		p.store.set([]string{endpoint}, 0)
		tok := p.token(t, tokenURL, "switchboard:driver", "switchboard:workspace:ops")
		refused(t, tok, http.StatusForbidden, `the access token of "sid1" grants no scope "switchboard:workspace:default" for this endpoint's workspace`, "insufficient_scope")
		tok = p.token(t, tokenURL, "switchboard:workspace:default")
		refused(t, tok, http.StatusForbidden, `the access token of "sid1" grants neither "switchboard:driver" nor "switchboard:admin": the MCP endpoint serves drivers and admins`, "insufficient_scope")
	})
	t.Run("not a JWT", func(t *testing.T) {
		refused(t, "opaque-token", http.StatusUnauthorized, "the access token is not a JWT, and this gateway introspects no opaque tokens", "invalid_token")
	})
}

// With an introspection endpoint configured, an opaque token is checked
// there (RFC 7662): the provider's own endpoint, the gateway
// authenticating as its client.
func TestOAuthIntrospectsOpaqueTokens(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "")
	p.store.mu.Lock()
	p.store.opaque = true
	p.store.mu.Unlock()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(introspectorSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSuite(t, options{laptop: true, configure: func(c *gateway.Config) {
		c.OAuth.Issuers = p.Issuer
		c.OAuth.Resource = "http://" + c.Listen
		c.OAuth.IntrospectionURL = p.Issuer + "/oauth/introspect"
		c.OAuth.IntrospectionClientID = introspector
		c.OAuth.IntrospectionSecretFile = secret
	}})
	endpoint := s.URL + "/mcp/default"
	tokenURL := p.Issuer + "/oauth/token"
	scopes := []string{"switchboard:driver", "switchboard:workspace:default"}

	p.store.set([]string{endpoint, introspector}, 0)
	tok := p.token(t, tokenURL, scopes...)
	if strings.Count(tok, ".") == 2 {
		t.Fatalf("the provider issued a JWT, not an opaque token: %s", tok)
	}
	cs := s.connect(t, "/mcp/default", bearer(tok), nil)
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "laptop_cat", Arguments: map[string]any{"via": "introspection"}}); err != nil || res.IsError {
		t.Fatalf("a call with an introspected token: %v, %v", res, err)
	}
	// A token for another API: the provider vouches for it, the gateway
	// refuses it.
	p.store.set([]string{"https://api.example.com", introspector}, 0)
	other := p.token(t, tokenURL, scopes...)
	if st, _, got := s.initializeWith(t, "/mcp/default", bearer(other)); st != http.StatusUnauthorized ||
		got != `the access token is for "https://api.example.com", "gateway", not this endpoint: ask `+p.Issuer+` for a token with resource=`+endpoint {
		t.Fatalf("another audience: HTTP %d %s", st, got)
	}
	// An expired token is not active.
	p.store.set([]string{endpoint, introspector}, -time.Minute)
	expired := p.token(t, tokenURL, scopes...)
	if st, _, got := s.initializeWith(t, "/mcp/default", bearer(expired)); st != http.StatusUnauthorized ||
		got != "the access token is not active: its issuer says it is unknown, expired or revoked" {
		t.Fatalf("an expired token: HTTP %d %s", st, got)
	}
	// Nor is a token the provider never issued.
	if st, _, got := s.initializeWith(t, "/mcp/default", bearer("made-up")); st != http.StatusUnauthorized ||
		got != "the access token is not active: its issuer says it is unknown, expired or revoked" {
		t.Fatalf("a made-up token: HTTP %d %s", st, got)
	}
}
