package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// mintToken mints a token as the suite's admin and returns its secret.
func (s *suite) mintToken(t testing.TB, req *registryv1.CreateTokenRequest) string {
	t.Helper()
	res, err := s.Registry.CreateToken(opsCtx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res.GetSecret()
}

// refusal is the envelope of a refusal sentence.
func refusal(sentence string) string {
	b, _ := json.Marshal(struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}{false, sentence})
	return string(b)
}

// wantReply sends one request and checks the whole answer.
func (s *suite) wantReply(t *testing.T, method, path string, h http.Header, body string, status int, want string) {
	t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	res := do(t, s.Client, method, s.URL+path, h, b)
	if res.Status != status || string(res.Body) != want {
		t.Fatalf("%s %s %s: HTTP %d %s\nwant HTTP %d %s", method, path, body, res.Status, res.Body, status, want)
	}
}

// TestAHostTokenMayOnlyHost: a host token is refused at every act that is
// not a host's — mounting and minting over REST, listing and invoking over
// the act endpoint.
func TestAHostTokenMayOnlyHost(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	h := bearer(s.mintToken(t, &registryv1.CreateTokenRequest{Identity: "ci-bot", Grade: "host"}))
	denied := func(method string) string {
		return refusal(fmt.Sprintf(`"ci-bot" is a host and may not call %s`, method))
	}
	s.wantReply(t, http.MethodPut, "/v1/servers/files", h, `{"stdio":{"command":"cat"}}`, 403, denied("BridgeService.Mount"))
	s.wantReply(t, http.MethodDelete, "/v1/servers/files", h, "", 403, denied("BridgeService.Unmount"))
	s.wantReply(t, http.MethodPost, "/v1/tokens", h, `{"identity":"ci-bot","grade":"admin","workspaces":["*"]}`, 403, denied("RegistryService.CreateToken"))
	s.wantReply(t, http.MethodPut, "/v1/grants/ci-bot", h, `{"workspaces":["*"]}`, 403, denied("RegistryService.SetGrant"))
	s.wantReply(t, http.MethodPost, "/v1/act", h, `{"op":"clients","workspace":"default"}`, 403, denied("RegistryService.ListClients"))
	s.wantReply(t, http.MethodPost, "/v1/act", h, `{"op":"invoke","client":"laptop","tool":"cat","input":{}}`, 403, denied("MailboxService.Invoke"))
	// What a host may do, it does.
	s.wantReply(t, http.MethodPost, "/v1/act", h, `{"op":"advertise","tools":[]}`, 200, `{"ok":true,"kind":"advertised","wrote":false}`)
}

// TestADriverTokenMayNotAdminister: mounting, minting and granting are an
// admin's.
func TestADriverTokenMayNotAdminister(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	h := bearer(s.mintToken(t, &registryv1.CreateTokenRequest{Identity: "agent", Workspaces: []string{"*"}}))
	denied := func(method string) string {
		return refusal(fmt.Sprintf(`"agent" is a driver and may not call %s`, method))
	}
	s.wantReply(t, http.MethodPut, "/v1/servers/files", h, `{"stdio":{"command":"cat"}}`, 403, denied("BridgeService.Mount"))
	s.wantReply(t, http.MethodPost, "/v1/tokens", h, `{"identity":"agent","grade":"admin","workspaces":["*"]}`, 403, denied("RegistryService.CreateToken"))
	s.wantReply(t, http.MethodPut, "/v1/workspaces/default/clients/x", h, "", 403, denied("RegistryService.RegisterClient"))
	s.wantReply(t, http.MethodGet, "/v1/servers", h, "", 200, `{"servers":[]}`)
}

// TestADriverTokenSeesOnlyItsWorkspaces: outside the token's workspaces a
// workspace, client or tool is absent, with the sentences of ones that do
// not exist, on every route.
func TestADriverTokenSeesOnlyItsWorkspaces(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true}) // laptop is in default
	h := bearer(s.mintToken(t, &registryv1.CreateTokenRequest{Identity: "agent", Workspaces: []string{"garage"}}))
	unknown := refusal(`unknown workspace "default"`)
	s.wantReply(t, http.MethodPost, "/v1/act", h, `{"op":"clients","workspace":"default"}`, 404, unknown)
	s.wantReply(t, http.MethodGet, "/v1/workspaces/default/clients", h, "", 404, unknown)
	s.wantReply(t, http.MethodGet, "/v1/workspaces/default/tools", h, "", 404, unknown)
	s.wantReply(t, http.MethodGet, "/v1/tools/laptop_cat", h, "", 404,
		refusal(`no tool is presented as "laptop_cat" right now; list the workspace's tools for the names in force`))
	s.wantReply(t, http.MethodGet, "/v1/clients/laptop", h, "", 404, refusal(`no client "laptop": it advertises no tools and belongs to no workspace`))
	absent := refusal(`client "laptop" advertises no tool "cat" right now`)
	s.wantReply(t, http.MethodPost, "/v1/act", h, `{"op":"invoke","client":"laptop","tool":"cat","input":{}}`, 404, absent)
	s.wantReply(t, http.MethodPost, "/v1/call", h, `{"client":"laptop","tool":"cat","input":"{}"}`, 404, absent)
	if st, got := s.post(t, "/mcp", h, ""); st != 404 || got != `unknown workspace "default"` {
		t.Fatalf("the MCP endpoint of default: HTTP %d %s", st, got)
	}

	// Once laptop joins garage, the same token reaches it.
	s.join(t, "garage", "laptop")
	res := do(t, s.Client, http.MethodPost, s.URL+"/v1/act", h, []byte(`{"op":"invoke","client":"laptop","tool":"cat","input":{}}`))
	if res.Status != 200 {
		t.Fatalf("invoking inside the token's workspace: HTTP %d %s", res.Status, res.Body)
	}
	if got := do(t, s.Client, http.MethodPost, s.URL+"/v1/act", h, []byte(`{"op":"clients","workspace":"garage"}`)); got.Status != 200 {
		t.Fatalf("listing the token's workspace: HTTP %d %s", got.Status, got.Body)
	}
}

// TestExpiredAndRevokedTokensAreRefusedAtOnce.
func TestExpiredAndRevokedTokensAreRefusedAtOnce(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	expired, err := s.Registry.CreateToken(opsCtx, &registryv1.CreateTokenRequest{Identity: "agent", Workspaces: []string{"*"}, Ttl: durationpb.New(time.Nanosecond)})
	if err != nil {
		t.Fatal(err)
	}
	tok := expired.GetToken()
	s.wantReply(t, http.MethodPost, "/v1/act", bearer(expired.GetSecret()), `{"op":"clients","workspace":"default"}`, 401,
		refusal(fmt.Sprintf(`token %s of "agent" expired at %s; an admin mints a new one (switchboard tokens create)`, tok.GetId(), tok.GetExpires().AsTime().UTC().Format(time.RFC3339))))

	live, err := s.Registry.CreateToken(opsCtx, &registryv1.CreateTokenRequest{Identity: "agent", Grade: "host"})
	if err != nil {
		t.Fatal(err)
	}
	h := bearer(live.GetSecret())
	s.wantReply(t, http.MethodPost, "/v1/act", h, `{"op":"advertise","tools":[]}`, 200, `{"ok":true,"kind":"advertised","wrote":false}`)
	if _, err := s.Registry.RevokeToken(opsCtx, &registryv1.RevokeTokenRequest{Id: live.GetToken().GetId()}); err != nil {
		t.Fatal(err)
	}
	s.wantReply(t, http.MethodPost, "/v1/act", h, `{"op":"advertise","tools":[]}`, 401, refusal("unknown or revoked token"))
}

// TestAnAdminMintsATokenOverREST: the token's grade, workspaces and ttl
// travel as JSON (a ttl is seconds, as protojson writes a duration).
func TestAnAdminMintsATokenOverREST(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	res := do(t, s.Client, http.MethodPost, s.URL+"/v1/tokens", as("ops", "admin"),
		[]byte(`{"identity":"alice","grade":"driver","workspaces":["default"],"ttl":"2592000s","note":"laptop"}`))
	var got struct {
		Token struct {
			Grade      string    `json:"grade"`
			Workspaces []string  `json:"workspaces"`
			Created    time.Time `json:"created"`
			Expires    time.Time `json:"expires"`
		} `json:"token"`
		Secret string `json:"secret"`
	}
	if res.Status != 200 || json.Unmarshal(res.Body, &got) != nil {
		t.Fatalf("POST /v1/tokens: HTTP %d %s", res.Status, res.Body)
	}
	tok := got.Token
	if tok.Grade != "driver" || len(tok.Workspaces) != 1 || tok.Workspaces[0] != "default" || tok.Expires.Sub(tok.Created) != 30*24*time.Hour || got.Secret == "" {
		t.Fatalf("the token minted over REST: %s", res.Body)
	}
	s.wantReply(t, http.MethodPost, "/v1/tokens", as("ops", "admin"), `{"identity":"alice","grade":"driver"}`, 400,
		refusal(`create token: a driver token needs the workspaces it may see: name them (--workspaces dev,ops, or '*' for every workspace)`))
}
