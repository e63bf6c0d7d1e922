package grpcserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/listen"
	"github.com/switchboard-run/switchboard/kit/logging"
)

const noCertificate = "no client certificate: this server requires mutual TLS with a certificate signed by the suite's CA"

// A TLS peer without a client certificate is told nothing but whether the
// server is healthy: reflection (the API's shape) and every method of
// every service are refused with the sentence.
func TestATLSPeerWithoutACertificateGetsOnlyHealth(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	serverTLS, err := p.leaf(t, "registry", "service").ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	srv := grpcserver.New(grpcserver.Options{Logger: logging.Discard(), TLS: serverTLS,
		Guard: identity.Guard{Auth: identity.Authenticator{}, Policy: policy}})
	srv.GRPC.RegisterService(&whoamiDesc, struct{}{})
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
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// The server says its bound in its first SETTINGS.
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			v, ok := sf.Value(http2.SettingMaxConcurrentStreams)
			if !ok || v != grpcserver.MaxConcurrentStreams {
				t.Fatalf("the server's SETTINGS_MAX_CONCURRENT_STREAMS = %d (set: %v); want %d", v, ok, grpcserver.MaxConcurrentStreams)
			}
			break
		}
	}
	if err := fr.WriteSettingsAck(); err != nil {
		t.Fatal(err)
	}
	// Open one health watch more than the bound. A watch sends no request
	// message here, so each stays open, waiting for it.
	var hdr bytes.Buffer
	enc := hpack.NewEncoder(&hdr)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", addr},
		{":path", "/grpc.health.v1.Health/Watch"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	extra := uint32(1 + 2*grpcserver.MaxConcurrentStreams)
	for id := uint32(1); id <= extra; id += 2 {
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hdr.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The stream past the bound is refused, and no other.
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("no RST_STREAM for stream %d, one past the bound: %v", extra, err)
		}
		rst, ok := f.(*http2.RSTStreamFrame)
		if !ok {
			continue
		}
		if rst.StreamID != extra || rst.ErrCode != http2.ErrCodeRefusedStream {
			t.Fatalf("RST_STREAM %v for stream %d; want only REFUSED_STREAM for stream %d, one past the bound", rst.ErrCode, rst.StreamID, extra)
		}
		return
	}
}
