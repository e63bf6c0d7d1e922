package badinput

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// scopeRows are the rows of docs/bad-input.md about grades, tokens,
// grants and pages.
var scopeRows = map[string]func(t *testing.T, s *suite){
	"operator-grade": func(t *testing.T, s *suite) {
		wantHTTP(t, s, http.MethodPost, "/v1/act", http.Header{"Switchboard-Identity": {"me"}, "Switchboard-Grade": {"operator"}},
			`{"op":"clients","workspace":"default"}`, 401, `{"ok":false,"error":"Switchboard-Grade: grade \"operator\" is gone: it was split into driver`)
	},
	"dev-without-secret": func(t *testing.T, s *suite) {
		// Another local user names an admin, over gRPC and over HTTP, but
		// cannot read the run's secret: nothing is taken on their word.
		cc := testkit.Dial(t, s.grpcAddr)
		_, err := registryv1.NewRegistryServiceClient(cc).ListTokens(testkit.As("mallory", identity.Admin), &registryv1.ListTokensRequest{})
		wantStatus(t, err, codes.Unauthenticated, `this dev-mode suite takes calls only with its per-run secret in the "switchboard-dev-secret" metadata key (HTTP header Switchboard-Dev-Secret): switchboard dev wrote it to dev-secret in its --data directory, readable by its own user only (the switchboard CLI and switchboard host --dev read it by themselves; its console link carries it)`)
		code, body := testkit.Request(t, http.MethodPut, s.httpBase+"/v1/servers/sh", http.Header{"Switchboard-Identity": {"mallory"}},
			`{"stdio":{"command":"/bin/sh","args":["-c","id"]}}`)
		if code != 401 || !strings.Contains(body, `this dev-mode suite takes calls only with its per-run secret in the Switchboard-Dev-Secret header`) {
			t.Fatalf("a mount without the secret: %d %s", code, body)
		}
		code, body = testkit.Request(t, http.MethodPost, s.httpBase+"/v1/act", http.Header{"Switchboard-Identity": {"mallory"}, "Switchboard-Dev-Secret": {"guessed"}},
			`{"op":"clients","workspace":"default"}`)
		if code != 401 || !strings.Contains(body, `the secret this call carries in the Switchboard-Dev-Secret header is not this run's`) {
			t.Fatalf("an act with a wrong secret: %d %s", code, body)
		}
	},
	"certificate-without-grade": func(t *testing.T, s *suite) {
		p := productionRegistry(t)
		_, err := p.as(t, "nobody", "").ListGrants(context.Background(), &registryv1.ListGrantsRequest{})
		wantStatus(t, err, codes.Unauthenticated, `the client certificate of "nobody" names no grade: its OU must be one of host, driver, admin, service or scrape, and it has none`)
	},
	"assertion-out-of-scope": func(t *testing.T, s *suite) {
		p := productionRegistry(t)
		for _, tc := range []struct{ service, name, grade, want string }{
			{"gateway", "registry", "service", `"gateway" asserted "registry" as a service: nobody may act on behalf of a service; a service calls with its own certificate`},
			{"bridge", "alice", "driver", `"bridge" asserted "alice" as a driver, but "bridge" may act only for hosts`},
			{"mailbox", "box", "host", `"mailbox" asserted "box" as a host, but "mailbox" acts on behalf of nobody: its calls are its own`},
		} {
			ctx := testkit.As(tc.name, identity.Grade(tc.grade))
			_, err := p.as(t, tc.service, "service").ListTools(ctx, &registryv1.ListToolsRequest{Workspace: "default"})
			wantStatus(t, err, codes.PermissionDenied, tc.want)
		}
	},
	"host-token-administers": func(t *testing.T, s *suite) {
		h := bearer(t, s, &registryv1.CreateTokenRequest{Identity: "ci-bot", Grade: "host"})
		wantHTTP(t, s, http.MethodPut, "/v1/servers/files", h, `{"stdio":{"command":"cat"}}`, 403,
			`{"ok":false,"error":"\"ci-bot\" is a host and may not call BridgeService.Mount"}`)
		wantHTTP(t, s, http.MethodPost, "/v1/tokens", h, `{"identity":"ci-bot","grade":"admin","workspaces":["*"]}`, 403,
			`{"ok":false,"error":"\"ci-bot\" is a host and may not call RegistryService.CreateToken"}`)
	},
	"outside-workspaces": func(t *testing.T, s *suite) {
		h := bearer(t, s, &registryv1.CreateTokenRequest{Identity: "agent", Workspaces: []string{"garage"}})
		wantHTTP(t, s, http.MethodPost, "/v1/act", h, `{"op":"clients","workspace":"default"}`, 404, `{"ok":false,"error":"unknown workspace \"default\""}`)
		wantHTTP(t, s, http.MethodGet, "/v1/workspaces/default/tools", h, "", 404, `{"ok":false,"error":"unknown workspace \"default\""}`)
		wantHTTP(t, s, http.MethodGet, "/v1/tools/box_echo", h, "", 404, `{"ok":false,"error":"no tool is presented as \"box_echo\" right now`)
		wantHTTP(t, s, http.MethodPost, "/v1/act", h, `{"op":"invoke","client":"box","tool":"echo","input":{}}`, 404,
			`{"ok":false,"error":"client \"box\" advertises no tool \"echo\" right now"}`)
	},
	"token-without-workspaces": func(t *testing.T, s *suite) {
		_, err := s.reg.CreateToken(testkit.As("op", identity.Admin), &registryv1.CreateTokenRequest{Identity: "agent"})
		wantStatus(t, err, codes.InvalidArgument, `create token: a driver token needs the workspaces it may see: name them (--workspaces dev,ops, or '*' for every workspace)`)
	},
	"expired-token": func(t *testing.T, s *suite) {
		res, err := s.reg.CreateToken(testkit.As("op", identity.Admin), &registryv1.CreateTokenRequest{Identity: "agent", Workspaces: []string{"*"}, Ttl: durationpb.New(time.Nanosecond)})
		if err != nil {
			t.Fatal(err)
		}
		wantHTTP(t, s, http.MethodPost, "/v1/act", http.Header{"Authorization": {"Bearer " + res.GetSecret()}}, `{"op":"clients","workspace":"default"}`, 401,
			fmt.Sprintf(`{"ok":false,"error":"token %s of \"agent\" expired at `, res.GetToken().GetId()))
	},
	"bad-page-token": func(t *testing.T, s *suite) {
		wantHTTP(t, s, http.MethodGet, "/v1/workspaces/default/tools?page_token=garbage", nil, "", 400,
			`{"ok":false,"error":"page_token \"garbage\" is not one this registry gave for the tools of workspace \"default\"; list again without a page_token to start over"}`)
		_, err := s.reg.ListClients(testkit.As("op", identity.Admin), &registryv1.ListClientsRequest{Workspace: "default", PageSize: -5})
		wantStatus(t, err, codes.InvalidArgument, "page_size -5 is negative: send 0 for the default (100), or up to 1000")
	},
}

// bearer mints a token as an admin and returns the header presenting it.
func bearer(t *testing.T, s *suite, req *registryv1.CreateTokenRequest) http.Header {
	t.Helper()
	res, err := s.reg.CreateToken(testkit.As("op", identity.Admin), req)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{"Authorization": {"Bearer " + res.GetSecret()}}
}

// wantHTTP sends one request to the suite's gateway (as "me", an admin in
// dev mode, when h is nil) and checks the status and the reply's start.
func wantHTTP(t *testing.T, s *suite, method, path string, h http.Header, body string, code int, prefix string) {
	t.Helper()
	if h == nil {
		h = http.Header{"Switchboard-Identity": {"me"}}
	}
	got, reply := s.send(t, method, path, h, body)
	if got != code || !strings.HasPrefix(reply, prefix) {
		t.Fatalf("%s %s: %d %s\nwant %d starting %s", method, path, got, reply, code, prefix)
	}
}

// production is a registry run alone in production mode: mutual TLS, each
// caller identified by its certificate.
type production struct {
	addr string
	pki  *testkit.PKI
}

func productionRegistry(t *testing.T) *production {
	t.Helper()
	p := &production{addr: testkit.FreeAddr(t), pki: testkit.NewPKI(t)}
	files := p.pki.Leaf(t, "registry", "service")
	testkit.Start(t, testkit.Build(t, "github.com/switchboard-run/switchboard/services/registry/cmd/registry"),
		"--listen", p.addr, "--nats", testkit.NATS(t).ClientURL(), "--tls-ca", files.CA, "--tls-cert", files.Cert, "--tls-key", files.Key)
	admin := p.as(t, "ops", "admin")
	testkit.Eventually(t, "the production registry to answer", 20*time.Second, func() bool {
		_, err := admin.ListGrants(context.Background(), &registryv1.ListGrantsRequest{})
		return status.Code(err) != codes.Unavailable
	})
	return p
}

// as is a client of the registry presenting a certificate named name with
// OU grade ("" for none).
func (p *production) as(t *testing.T, name, grade string) registryv1.RegistryServiceClient {
	t.Helper()
	cc, err := grpcclient.Dial(p.addr, p.pki.ClientTLS(t, name, grade))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return registryv1.NewRegistryServiceClient(cc)
}
