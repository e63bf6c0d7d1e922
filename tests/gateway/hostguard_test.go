package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// guardedRoutes are requests to every kind of route the gateway serves:
// the act endpoint, a REST route of each backend (the bridge's Mount among
// them: a web page must never start a program), the OpenAPI document, the
// health check, the MCP endpoint and a path that is no route at all.
var guardedRoutes = []struct{ method, path, body string }{
	{http.MethodPut, "/v1/servers/pwn", `{"stdio":{"command":"/bin/true"}}`},
	{http.MethodPost, "/v1/act", `{"op":"invoke","client":"laptop","tool":"cat","input":{}}`},
	{http.MethodGet, "/v1/workspaces/default/clients", ""},
	{http.MethodPost, "/v1/invocations", `{"client":"laptop","tool":"cat","input":"{}"}`},
	{http.MethodGet, "/openapi.json", ""},
	{http.MethodGet, "/healthz", ""},
	{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	{http.MethodPost, "/mcp/default", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	{http.MethodGet, "/no/such/route", ""},
}

// A web page whose name rebinds to 127.0.0.1 (DNS rebinding) sends its own
// name as Host; a page of another site sends its Origin. Neither reaches
// any route: the bridge starts no program, no tool runs.
func TestEveryRouteRefusesARebindingHostAndAForeignOrigin(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	for _, rt := range guardedRoutes {
		for _, tc := range []struct {
			name, host, origin, want string
		}{
			{"a rebinding Host", "evil.example:8080", "",
				`this gateway does not answer to Host "evil.example:8080": it answers to localhost, 127.0.0.1, ::1 (dev mode answers loopback names only)`},
			{"a foreign Origin", "", "http://evil.example",
				`this gateway refuses requests from Origin "http://evil.example": allow it with --http-origins if a page there should call this gateway`},
		} {
			t.Run(tc.name+" "+rt.method+" "+rt.path, func(t *testing.T) {
				t.Parallel()
				st, body := s.send(t, rt.method, rt.path, rt.body, tc.host, tc.origin)
				var env struct {
					OK    bool   `json:"ok"`
					Error string `json:"error"`
				}
				if err := json.Unmarshal([]byte(body), &env); err != nil || st != http.StatusForbidden || env.OK || env.Error != tc.want {
					t.Fatalf("HTTP %d %s\nwant 403 with the error %s", st, body, tc.want)
				}
			})
		}
	}
	t.Cleanup(func() {
		res, err := s.bridge.ListServers(testkit.As("me", identity.Admin), &bridgev1.ListServersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, srv := range res.GetServers() {
			if srv.GetClient() == "pwn" {
				t.Errorf("the bridge mounted %q for a rebound page: %v", srv.GetClient(), srv)
			}
		}
	})
}

// The loopback names reach every route: what curl, the CLI and a
// container's health check send.
func TestLoopbackNamesReachEveryRoute(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	for _, host := range []string{"localhost:8080", "127.0.0.1", "[::1]:8080"} {
		for _, path := range []string{"/healthz", "/openapi.json"} {
			if st, body := s.send(t, http.MethodGet, path, "", host, ""); st != http.StatusOK {
				t.Errorf("Host %s GET %s: HTTP %d %s", host, path, st, body)
			}
		}
		if st, body := s.send(t, http.MethodPost, "/v1/act", `{"op":"clients","workspace":"default"}`, host, ""); st != http.StatusOK {
			t.Errorf("Host %s POST /v1/act: HTTP %d %s", host, st, body)
		}
	}
}

// send makes one request as "me" with host as its Host ("" for the
// listener's own address) and origin as its Origin ("" for none).
func (s *suite) send(t testing.TB, method, path, body, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Switchboard-Identity", "me")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
