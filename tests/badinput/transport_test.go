package badinput

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The rows of docs/bad-input.md about the transport: who may reach a
// listener, and what the bridge sends upstream (docs/security.md).
func init() {
	rows["dns-rebinding"] = func(t *testing.T, s *suite) {
		want := `{"ok":false,"error":"this gateway does not answer to Host \"evil.example:8080\": it answers to localhost, 127.0.0.1, ::1 (dev mode answers loopback names only)"}`
		for _, r := range []struct{ method, path, body string }{
			{http.MethodPut, "/v1/servers/pwn", `{"stdio":{"command":"/bin/true"}}`},
			{http.MethodPost, "/v1/act", `{"op":"invoke","client":"box","tool":"echo","input":{}}`},
			{http.MethodGet, "/openapi.json", ""},
			{http.MethodGet, "/healthz", ""},
			{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		} {
			if code, body := s.request(t, r.method, r.path, r.body, "evil.example:8080", ""); code != 403 || body != want {
				t.Errorf("%s %s from a rebound page: %d %s\nwant 403 %s", r.method, r.path, code, body, want)
			}
		}
		res, err := bridgev1.NewBridgeServiceClient(s.conn).ListServers(testkit.As("op", identity.Admin), &bridgev1.ListServersRequest{})
		if err != nil || len(res.GetServers()) != 0 {
			t.Fatalf("after the rebound page, the bridge serves %v (%v); want nothing mounted", res.GetServers(), err)
		}
	}
	rows["foreign-origin"] = func(t *testing.T, s *suite) {
		want := `{"ok":false,"error":"this gateway refuses requests from Origin \"http://evil.example\": allow it with --http-origins if a page there should call this gateway"}`
		if code, body := s.request(t, http.MethodPost, "/v1/act", `{"op":"invoke","client":"box","tool":"echo","input":{}}`, "", "http://evil.example"); code != 403 || body != want {
			t.Fatalf("%d %s\nwant 403 %s", code, body, want)
		}
	}
	rows["reflection-without-identity"] = func(t *testing.T, s *suite) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stream, err := reflectionpb.NewServerReflectionClient(s.conn).ServerReflectionInfo(ctx)
		if err == nil {
			err = stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
		}
		// Send says io.EOF when the server has already ended the stream
		// (here, as soon as it refused it); the status is Recv's to tell.
		if err == nil || errors.Is(err, io.EOF) {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.Unauthenticated || !strings.HasPrefix(status.Convert(err).Message(), "no identity: ") {
			t.Fatalf("reflection with no identity: %v; want UNAUTHENTICATED no identity", err)
		}
		if res, err := healthpb.NewHealthClient(s.conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health with no identity: %v %v; want SERVING", res, err)
		}
	}
	rows["stream-flood"] = func(t *testing.T, s *suite) {
		bound, refused := testkit.StreamFlood(t, s.grpcAddr, "/grpc.health.v1.Health/Watch", grpcserver.MaxConcurrentStreams+1)
		if extra := uint32(1 + 2*grpcserver.MaxConcurrentStreams); bound != grpcserver.MaxConcurrentStreams || len(refused) != 1 || refused[0] != extra {
			t.Fatalf("the server says it takes %d streams and refused %v; want %d and only stream %d", bound, refused, grpcserver.MaxConcurrentStreams, extra)
		}
	}
	rows["plain-http-credentials"] = func(t *testing.T, s *suite) {
		_, err := bridgev1.NewBridgeServiceClient(s.conn).Mount(testkit.As("op", identity.Admin), &bridgev1.MountRequest{Client: "plain",
			Config: &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{
				Url: "http://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer s"}}}}})
		wantStatus(t, err, codes.InvalidArgument, `mount "plain": url "http://mcp.example.com/mcp" is plain http, so the server's credentials (headers Authorization) would cross the network in the clear: use https://, or a loopback host`)
	}
	rows["credentials-redirect"] = func(t *testing.T, s *suite) {
		var mu sync.Mutex
		var leaked []string
		elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			leaked = append(leaked, r.Header.Get("Authorization"))
			mu.Unlock()
			http.Error(w, "not here", http.StatusNotFound)
		}))
		defer elsewhere.Close()
		configured := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/mcp", http.StatusTemporaryRedirect))
		defer configured.Close()
		br := bridgev1.NewBridgeServiceClient(s.conn)
		op := testkit.As("op", identity.Admin)
		res, err := br.Mount(op, &bridgev1.MountRequest{Client: "redirected", Config: &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Http{
			Http: &bridgev1.HttpTransport{Url: configured.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer bridge-own"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		defer br.Unmount(op, &bridgev1.UnmountRequest{Client: "redirected"})
		want := "redirected the bridge to " + elsewhere.URL + "/mcp, another origin: the bridge sends this server's credentials only to " + configured.URL + " and follows no redirect elsewhere"
		if !strings.Contains(res.GetServer().GetLastFault(), want) {
			t.Errorf("the mount's fault: %q\nwant it to contain %q", res.GetServer().GetLastFault(), want)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(leaked) > 0 {
			t.Errorf("the other origin was reached %d times (Authorization %q)", len(leaked), leaked)
		}
	}
}

// request sends one request to the gateway as "driver", with host as its
// Host ("" for the listener's address) and origin as its Origin ("" for
// none).
func (s *suite) request(t *testing.T, method, path, body, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.httpBase+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Switchboard-Identity", "driver")
	req.Header.Set("Switchboard-Dev-Secret", s.secret)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b))
}
