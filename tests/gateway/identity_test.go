package gateway_test

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway"
	"github.com/switchboard-run/switchboard/tests/internal/scripted"
)

// tokenRegistry knows one token, "sbt_good", for alice (a driver of every
// workspace), and one of service grade, which the gateway must refuse.
func tokenRegistry() *scripted.Registry {
	return &scripted.Registry{
		OnAuthenticateToken: func(_ identity.Identity, req *registryv1.AuthenticateTokenRequest) (*registryv1.AuthenticateTokenResponse, error) {
			switch req.GetSecret() {
			case "sbt_good":
				return &registryv1.AuthenticateTokenResponse{Identity: "alice", Grade: "driver", Workspaces: []string{"*"}}, nil
			case "sbt_service":
				return &registryv1.AuthenticateTokenResponse{Identity: "mailbox", Grade: "service"}, nil
			}
			return nil, status.Error(codes.Unauthenticated, "unknown or revoked token")
		},
	}
}

func invokeMailbox() *scripted.Mailbox {
	return &scripted.Mailbox{
		OnInvoke: func(identity.Identity, *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error) {
			return &mailboxv1.InvokeResponse{Invocation: handle}, nil
		},
		OnCapture: func(_ identity.Identity, req *mailboxv1.CaptureRequest) (*mailboxv1.CaptureResponse, error) {
			return &mailboxv1.CaptureResponse{Invocation: req.GetInvocation()}, nil
		},
	}
}

const invokeBody = `{"op":"invoke","client":"laptop","tool":"grep","input":{}}`

// sawCaller checks that a scripted backend was called as name with grade.
func sawCaller(t *testing.T, c scripted.Call, name string, grade identity.Grade) {
	t.Helper()
	if c.Caller.Name != name || c.Caller.Grade != grade {
		t.Fatalf("%s reached the backend as %v, want %s (%s)", c.Method, c.Caller, name, grade)
	}
}

// noCredentialForwarded fails when any credential reached a backend.
func noCredentialForwarded(t *testing.T, calls []scripted.Call) {
	t.Helper()
	for _, c := range calls {
		for k, vs := range c.Metadata {
			for _, v := range vs {
				if k == "authorization" || strings.Contains(v, "sbt_") {
					t.Fatalf("%s carried %s: %q to the backend", c.Method, k, v)
				}
			}
		}
	}
}

func TestDevModeBearerTokensActAsTheirIdentity(t *testing.T) {
	t.Parallel()
	reg, mb := tokenRegistry(), invokeMailbox()
	g := newSuite(t, options{scripted: &scripted.Options{Registry: reg, Mailbox: mb}})

	res := do(t, g.Client, http.MethodPost, g.URL+"/v1/act", bearer("sbt_good"), []byte(invokeBody))
	if res.Status != 200 {
		t.Fatalf("act with a good token: HTTP %d %s", res.Status, res.Body)
	}
	sawCaller(t, mb.Rec.Last(t, "Invoke"), "alice", identity.Driver)
	// The check is the gateway's own call, as its service identity.
	auth := reg.Rec.Last(t, "AuthenticateToken")
	sawCaller(t, auth, "gateway", identity.Service)
	if s := auth.Request.(*registryv1.AuthenticateTokenRequest).GetSecret(); s != "sbt_good" {
		t.Fatalf("the registry was asked about %q", s)
	}

	res = do(t, g.Client, http.MethodGet, g.URL+"/v1/invocations/"+handle+"/capture", bearer("sbt_good"), nil)
	if res.Status != 200 {
		t.Fatalf("REST with a good token: HTTP %d %s", res.Status, res.Body)
	}
	sawCaller(t, mb.Rec.Last(t, "Capture"), "alice", identity.Driver)
	noCredentialForwarded(t, append(mb.Rec.Calls(), reg.Rec.Calls()...))

	for _, tc := range []struct {
		name   string
		header http.Header
		want   string
	}{
		{"a revoked token is refused as the registry says", bearer("sbt_revoked"), `{"ok":false,"error":"unknown or revoked token"}`},
		{"a service-grade token is refused", bearer("sbt_service"), `{"ok":false,"error":"the token of \"mailbox\" carries grade \"service\"; a token may only be host, driver or admin"}`},
		{"a token with an identity header is ambiguous", http.Header{"Authorization": {"Bearer sbt_good"}, "Switchboard-Identity": {"bob"}},
			`{"ok":false,"error":"send either Authorization: Bearer <token> or the Switchboard-Identity header, not both"}`},
		{"two Authorization headers are refused", http.Header{"Authorization": {"Bearer sbt_good", "Bearer sbt_good"}}, `{"ok":false,"error":"send one Authorization header, not 2"}`},
		{"an empty bearer is refused", bearer(""), `{"ok":false,"error":"the Authorization header must be \"Bearer <token>\""}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, g.Client, http.MethodPost, g.URL+"/v1/act", tc.header, []byte(invokeBody))
			if res.Status != 401 || string(res.Body) != tc.want {
				t.Fatalf("HTTP %d %s, want 401 %s", res.Status, res.Body, tc.want)
			}
			if res.Header.Get("WWW-Authenticate") == "" {
				t.Fatal("a 401 without WWW-Authenticate")
			}
		})
	}
}

func TestProductionForwardsTheCallerOnBehalfOverTheServiceCertificate(t *testing.T) {
	t.Parallel()
	p := testkit.NewPKI(t)
	backendTLS, err := p.Leaf(t, "backend", "service").ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	reg, mb := tokenRegistry(), invokeMailbox()
	gwFiles := p.Leaf(t, "gateway", "service")
	g := newSuite(t, options{scripted: &scripted.Options{TLS: backendTLS, Registry: reg, Mailbox: mb},
		configure: func(c *gateway.Config) { c.Security = process.Security{Files: gwFiles} }})
	g.URL = strings.Replace(g.URL, "http://", "https://", 1)

	httpsClient := func(f *certs.Files) *http.Client {
		cfg, err := gwFiles.ClientConfig("127.0.0.1") // trusts the CA
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = nil
		if f != nil {
			pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	aliceFiles := p.Leaf(t, "alice", "driver")

	res := do(t, httpsClient(&aliceFiles), http.MethodPost, g.URL+"/v1/act", nil, []byte(invokeBody))
	if res.Status != 200 {
		t.Fatalf("act with alice's certificate: HTTP %d %s", res.Status, res.Body)
	}
	sawCaller(t, mb.Rec.Last(t, "Invoke"), "alice", identity.Driver)

	anonymous := httpsClient(nil)
	res = do(t, anonymous, http.MethodPost, g.URL+"/v1/act", nil, []byte(invokeBody))
	want := `{"ok":false,"error":"no identity: present a client certificate signed by the suite's CA, or send Authorization: Bearer <token>"}`
	if res.Status != 401 || string(res.Body) != want {
		t.Fatalf("act without a certificate: HTTP %d %s, want 401 %s", res.Status, res.Body, want)
	}

	res = do(t, anonymous, http.MethodPost, g.URL+"/v1/act", as("alice", identity.Driver), []byte(invokeBody))
	if res.Status != 401 || !strings.Contains(string(res.Body), "only in dev mode") {
		t.Fatalf("a dev header in production: HTTP %d %s", res.Status, res.Body)
	}

	res = do(t, anonymous, http.MethodGet, g.URL+"/v1/invocations/"+handle+"/capture", bearer("sbt_good"), nil)
	if res.Status != 200 {
		t.Fatalf("REST with a token in production: HTTP %d %s", res.Status, res.Body)
	}
	sawCaller(t, mb.Rec.Last(t, "Capture"), "alice", identity.Driver)
	// In production the gateway's own call carries no asserted identity:
	// its certificate speaks for it.
	sawCaller(t, reg.Rec.Last(t, "AuthenticateToken"), "gateway", identity.Service)
	noCredentialForwarded(t, append(mb.Rec.Calls(), reg.Rec.Calls()...))

	// A token sent with a certificate wins: it was chosen for this request.
	bobFiles := p.Leaf(t, "bob", "driver")
	res = do(t, httpsClient(&bobFiles), http.MethodPost, g.URL+"/v1/act", bearer("sbt_good"), []byte(invokeBody))
	if res.Status != 200 {
		t.Fatalf("a token with bob's certificate: HTTP %d %s", res.Status, res.Body)
	}
	sawCaller(t, mb.Rec.Last(t, "Invoke"), "alice", identity.Driver)

	res = do(t, anonymous, http.MethodGet, g.URL+"/healthz", nil, nil)
	if res.Status != 200 {
		t.Fatalf("healthz over mutual TLS: HTTP %d %s", res.Status, res.Body)
	}

	// The metrics name every workspace and client: a scraper (Prometheus
	// with its own certificate) or an admin reads them, nobody else.
	promFiles, opsFiles := p.Leaf(t, "prometheus", "scrape"), p.Leaf(t, "ops", "admin")
	for _, c := range []struct {
		who    string
		client *http.Client
		status int
		says   string
	}{
		{"prometheus", httpsClient(&promFiles), 200, "switchboard_http_requests_total"},
		{"an admin", httpsClient(&opsFiles), 200, "go_goroutines"},
		{"a driver", httpsClient(&aliceFiles), 403, `"alice is a driver; metrics are served to a scraper (a certificate or token of grade scrape) or an admin"`},
		{"nobody", anonymous, 401, "no identity"},
	} {
		res = do(t, c.client, http.MethodGet, g.URL+"/metrics", nil, nil)
		if res.Status != c.status || !strings.Contains(string(res.Body), c.says) {
			t.Errorf("/metrics as %s: HTTP %d %.120s, want %d with %s", c.who, res.Status, res.Body, c.status, c.says)
		}
	}
}
