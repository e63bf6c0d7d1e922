package grpcserver_test

import (
	"context"
	"crypto/tls"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

var policy = identity.Policy{whoamiMethod: identity.Any}

// serve starts a kit server on a real loopback port.
func serve(t *testing.T, dev bool, tlsCfg *tls.Config) string {
	t.Helper()
	srv := grpcserver.New(grpcserver.Options{
		Logger: logging.Discard(),
		Guard:  identity.Guard{Auth: identity.Authenticator{Dev: dev}, Policy: policy},
		TLS:    tlsCfg,
	})
	srv.RegisterService(&whoamiDesc, struct{}{})
	srv.Serving("test.Whoami")
	return serveServer(t, srv, dev)
}

func dial(t *testing.T, addr string, tlsCfg *tls.Config) *grpc.ClientConn {
	t.Helper()
	cc, err := grpcclient.Dial(addr, tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestMutualTLSIdentity(t *testing.T) {
	t.Parallel()
	p := testkit.NewPKI(t)
	addr := serve(t, false, p.ServerTLS(t, "registry", "service"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	clientTLS := func(name, grade string) *tls.Config { return p.ClientTLS(t, name, grade) }

	tests := []struct {
		name    string
		tls     *tls.Config
		assert  *identity.Identity
		want    string
		wantErr codes.Code
	}{
		{name: "a host leaf is its CN with grade host", tls: clientTLS("laptop", "host"), want: "laptop (host)"},
		{name: "a driver leaf is a driver", tls: clientTLS("alice", "driver"), want: "alice (driver)"},
		{name: "a leaf with another OU is refused", tls: clientTLS("alice", "people"), wantErr: codes.Unauthenticated},
		{name: "a leaf without an OU is refused", tls: clientTLS("nobody", ""), wantErr: codes.Unauthenticated},
		{name: "a service leaf is a service", tls: clientTLS("gateway", "service"), want: "gateway (service)"},
		{name: "the gateway may act on behalf of a driver", tls: clientTLS("gateway", "service"),
			assert: &identity.Identity{Name: "bob", Grade: identity.Driver}, want: "bob (driver)"},
		{name: "the bridge may act on behalf of a host", tls: clientTLS("bridge", "service"),
			assert: &identity.Identity{Name: "mounted", Grade: identity.Host}, want: "mounted (host)"},
		{name: "the bridge may not act on behalf of a driver", tls: clientTLS("bridge", "service"),
			assert: &identity.Identity{Name: "bob", Grade: identity.Driver}, wantErr: codes.PermissionDenied},
		{name: "no service may assert a service", tls: clientTLS("gateway", "service"),
			assert: &identity.Identity{Name: "registry", Grade: identity.Service}, wantErr: codes.PermissionDenied},
		{name: "the mailbox may act on behalf of nobody", tls: clientTLS("mailbox", "service"),
			assert: &identity.Identity{Name: "laptop", Grade: identity.Host}, wantErr: codes.PermissionDenied},
		{name: "a host may not act on behalf of anyone", tls: clientTLS("laptop", "host"),
			assert: &identity.Identity{Name: "bob", Grade: identity.Driver}, wantErr: codes.PermissionDenied},
		{name: "an admin may not act on behalf of anyone", tls: clientTLS("alice", "admin"),
			assert: &identity.Identity{Name: "alice", Grade: identity.Driver}, wantErr: codes.PermissionDenied},
		{name: "no client certificate is unauthenticated", tls: &tls.Config{RootCAs: clientTLS("x", "host").RootCAs, MinVersion: tls.VersionTLS13},
			wantErr: codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := dial(t, addr, tt.tls)
			c := ctx
			if tt.assert != nil {
				c = identity.As(ctx, *tt.assert)
			}
			got, err := who(c, cc, "")
			if status.Code(err) != tt.wantErr {
				t.Fatalf("code = %v (%v), want %v", status.Code(err), err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("identity = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCertificateFromAnotherCAIsRefused(t *testing.T) {
	t.Parallel()
	p := testkit.NewPKI(t)
	serverTLS := p.ServerTLS(t, "registry", "service")
	addr := serve(t, false, serverTLS)

	other := testkit.NewPKI(t)
	foreign := other.ClientTLS(t, "mallory", "service")
	foreign.RootCAs = serverTLS.ClientCAs // trusts our server, presents a foreign leaf
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := who(ctx, dial(t, addr, foreign), "")
	if err == nil {
		t.Fatal("a certificate from another CA was accepted")
	}
	if c := status.Code(err); c != codes.Unavailable {
		t.Fatalf("code = %v (%v), want the handshake to fail (Unavailable)", c, err)
	}
}

func TestDevModeIdentityFromMetadata(t *testing.T) {
	t.Parallel()
	addr := serve(t, true, nil)
	cc := dial(t, addr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	got, err := who(identity.As(ctx, identity.Identity{Name: "me", Grade: identity.Host}), cc, "")
	if err != nil || got != "me (host)" {
		t.Fatalf("who = %q, %v; want me (host)", got, err)
	}
	_, err = who(ctx, cc, "")
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "switchboard-identity") {
		t.Fatalf("no identity: got %v, want UNAUTHENTICATED naming the metadata key", err)
	}
	// Health answers without an identity, so probes need none.
	res, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "test.Whoami"})
	if err != nil || res.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", res, err)
	}
}

func TestPolicyRefusesAGradeAndUnlistedMethods(t *testing.T) {
	t.Parallel()
	policy := identity.Policy{whoamiMethod: {identity.Admin}}
	srv := grpcserver.New(grpcserver.Options{Logger: logging.Discard(),
		Guard: identity.Guard{Auth: identity.Authenticator{Dev: true}, Policy: policy}})
	srv.RegisterService(&whoamiDesc, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go srv.Serve(ctx, lis)
	cc := dial(t, lis.Addr().String(), nil)

	_, err = who(identity.As(ctx, identity.Identity{Name: "laptop", Grade: identity.Host}), cc, "")
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `"laptop" is a host and may not call Whoami.Who`) {
		t.Fatalf("host calling an admin method: %v", err)
	}

	closed := grpcserver.New(grpcserver.Options{Logger: logging.Discard(),
		Guard: identity.Guard{Auth: identity.Authenticator{Dev: true}, Policy: identity.Policy{}}})
	closed.RegisterService(&whoamiDesc, struct{}{})
	lis2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go closed.Serve(ctx, lis2)
	_, err = who(identity.As(ctx, identity.Identity{Name: "me", Grade: identity.Admin}), dial(t, lis2.Addr().String(), nil), "")
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "Whoami.Who is not open to any caller") {
		t.Fatalf("a method missing from the policy: %v, want PERMISSION_DENIED", err)
	}
}

func TestPanicIsRecoveredAsInternal(t *testing.T) {
	t.Parallel()
	addr := serve(t, true, nil)
	cc := dial(t, addr, nil)
	ctx := identity.As(context.Background(), identity.Identity{Name: "me", Grade: identity.Admin})
	_, err := who(ctx, cc, "panic")
	if status.Code(err) != codes.Internal {
		t.Fatalf("panic: %v, want INTERNAL", err)
	}
	if got, err := who(ctx, cc, ""); err != nil || got != "me (admin)" {
		t.Fatalf("after a panic the server should still answer: %q %v", got, err)
	}
}

func TestGrpcurlListsHealthAndReflection(t *testing.T) {
	t.Parallel()
	grpcurl := testkit.Tool(t, "grpcurl")
	addr := serve(t, true, nil)
	out := testkit.Run(t, grpcurl, "-plaintext", "-H", "switchboard-identity: me", addr, "list")
	for _, want := range []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "test.Whoami"} {
		if !strings.Contains(out, want) {
			t.Errorf("grpcurl list lacks %s:\n%s", want, out)
		}
	}
	// Health needs no identity; the reflection grpcurl looks its
	// descriptor up with does.
	out = testkit.Run(t, grpcurl, "-plaintext", "-reflect-header", "switchboard-identity: me",
		"-d", `{"service":"test.Whoami"}`, addr, "grpc.health.v1.Health/Check")
	if !strings.Contains(out, `"SERVING"`) {
		t.Errorf("health check: %s", out)
	}
	bare, err := exec.Command(grpcurl, "-plaintext", addr, "list").CombinedOutput()
	if err == nil || !strings.Contains(string(bare), "no identity") {
		t.Errorf("grpcurl list with no identity: %v\n%s\nwant a refusal saying there is no identity", err, bare)
	}
}

func TestShutdownRunsDrainsAndEndsStreams(t *testing.T) {
	t.Parallel()
	srv := grpcserver.New(grpcserver.Options{Logger: logging.Discard(), ShutdownGrace: 200 * time.Millisecond,
		Guard: identity.Guard{Auth: identity.Authenticator{Dev: true}, Policy: policy}})
	drained := make(chan struct{})
	srv.OnDrain(func() { close(drained) })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	cc := dial(t, lis.Addr().String(), nil)
	// A health watch is a stream that never ends by itself: the hard stop
	// after the grace must end it.
	w, err := healthpb.NewHealthClient(cc).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	select {
	case <-drained:
	default:
		t.Fatal("the drain did not run")
	}
}
