package gateway

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// healthBackend is a real gRPC server answering only grpc.health.v1 with st.
func healthBackend(t *testing.T, st healthpb.HealthCheckResponse_ServingStatus) *grpc.ClientConn {
	t.Helper()
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", st)
	healthpb.RegisterHealthServer(srv, hs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return testkit.Dial(t, lis.Addr().String())
}

// devGateway is a dev-mode gateway in front of the given backends.
func devGateway(t *testing.T, registry, mailbox, bridge *grpc.ClientConn) *Gateway {
	t.Helper()
	g, err := New(Config{Flags: process.Flags{Security: process.Security{Dev: true}}},
		Backends{Registry: registry, Mailbox: mailbox, Bridge: bridge, Self: identity.Self{Dev: true, Identity: devSelf}}, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// get is g's answer to a GET of path from a container's probe.
func get(g *Gateway, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1:8080"
	rec := httptest.NewRecorder()
	g.Handler().ServeHTTP(rec, req)
	return rec
}

func TestHealthzReflectsEachBackend(t *testing.T) {
	t.Parallel()
	up := healthBackend(t, healthpb.HealthCheckResponse_SERVING)
	draining := healthBackend(t, healthpb.HealthCheckResponse_NOT_SERVING)
	gone := testkit.Dial(t, testkit.FreeAddr(t)) // nobody listens there
	for _, tc := range []struct {
		name                      string
		registry, mailbox, bridge *grpc.ClientConn
		status                    int
		want                      string
	}{
		{"every backend serving is 200", up, up, up, 200, `{"ok":true,"bridge":"SERVING","mailbox":"SERVING","registry":"SERVING"}`},
		{"a draining backend is named", up, draining, up, 503, `{"ok":false,"error":"backend down: mailbox (NOT_SERVING)"}`},
		{"an unreachable backend is named", gone, up, up, 503, `{"ok":false,"error":"backend down: registry (`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := get(devGateway(t, tc.registry, tc.mailbox, tc.bridge), "/healthz") // no identity: probes hold none
			if rec.Code != tc.status || !strings.HasPrefix(rec.Body.String(), tc.want) {
				t.Fatalf("HTTP %d %s, want %d %s…", rec.Code, rec.Body.String(), tc.status, tc.want)
			}
		})
	}
}
