package grpcserver_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

const noCertificate = "no client certificate: this server requires mutual TLS with a certificate signed by the suite's CA"

// A TLS peer without a client certificate is told nothing but whether the
// server is healthy: reflection (the API's shape) and every method of
// every service are refused with the sentence.
func TestATLSPeerWithoutACertificateGetsOnlyHealth(t *testing.T) {
	t.Parallel()
	p := testkit.NewPKI(t)
	serverTLS, err := p.Leaf(t, "registry", "service").ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	srv := grpcserver.New(grpcserver.Options{Logger: logging.Discard(), TLS: serverTLS,
		Guard: identity.Guard{Auth: identity.Authenticator{}, Policy: policy}})
	srv.RegisterService(&whoamiDesc, struct{}{})
	srv.Serving("test.Whoami")
	addr := serveServer(t, srv, false)
	bare := &tls.Config{RootCAs: serverTLS.ClientCAs, MinVersion: tls.VersionTLS13} // trusts the server, presents nothing
	cc := dial(t, addr, bare)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	res, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "test.Whoami"})
	if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health without a certificate = %v, %v; want SERVING", res, err)
	}
	methods := 0
	for svc, info := range srv.GRPC.GetServiceInfo() {
		if svc == healthpb.Health_ServiceDesc.ServiceName {
			continue
		}
		for _, m := range info.Methods {
			methods++
			full := "/" + svc + "/" + m.Name
			t.Run(full, func(t *testing.T) {
				err := callAnyway(ctx, cc, full)
				if status.Code(err) != codes.Unauthenticated || status.Convert(err).Message() != noCertificate {
					t.Fatalf("%s without a certificate: %v\nwant UNAUTHENTICATED %q", full, err, noCertificate)
				}
			})
		}
	}
	if methods < 3 { // Whoami.Who and the two reflection services
		t.Fatalf("the server lists %d methods besides health; want the test service and reflection", methods)
	}
}

// callAnyway calls method with an empty message whatever its kind, and
// returns how the call ended.
func callAnyway(ctx context.Context, cc *grpc.ClientConn, method string) error {
	s, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	_ = s.SendMsg(&emptypb.Empty{}) // a refusal arrives on RecvMsg
	_ = s.CloseSend()
	return s.RecvMsg(&emptypb.Empty{})
}

// serveServer serves srv on a loopback port until the test ends.
func serveServer(t *testing.T, srv *grpcserver.Server, dev bool) string {
	t.Helper()
	lis, err := listen.TCP("127.0.0.1:0", dev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return lis.Addr().String()
}

// A peer that ignores the server's SETTINGS and opens one stream past
// MaxConcurrentStreams on one connection has that stream refused
// (REFUSED_STREAM) while the others stay open: the bound holds against a
// peer that does not play along, not only against grpc-go's polite client.
func TestAPeerIsHeldToTheStreamBoundPerConnection(t *testing.T) {
	t.Parallel()
	addr := serve(t, true, nil)
	// A health watch sends no request message here, so each stays open.
	bound, refused := testkit.StreamFlood(t, addr, "/grpc.health.v1.Health/Watch", grpcserver.MaxConcurrentStreams+1)
	if bound != grpcserver.MaxConcurrentStreams {
		t.Errorf("the server's SETTINGS_MAX_CONCURRENT_STREAMS = %d; want %d", bound, grpcserver.MaxConcurrentStreams)
	}
	if extra := uint32(1 + 2*grpcserver.MaxConcurrentStreams); len(refused) != 1 || refused[0] != extra {
		t.Errorf("streams refused: %v; want only stream %d, the one past the bound", refused, extra)
	}
}
