package grpcclient_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// replica serves the health service on a loopback port.
func replica(t *testing.T, opts ...grpc.ServerOption) (addr string, srv *grpc.Server) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv = grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), srv
}

// whoAnswers returns the port of the replica that answered one call, or ""
// when the call failed.
func whoAnswers(ctx context.Context, c healthpb.HealthClient) string {
	var p peer.Peer
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil || p.Addr == nil {
		return ""
	}
	_, port, _ := net.SplitHostPort(p.Addr.String())
	return port
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// A list of replicas is dialed as one client that spreads calls over both;
// when one is stopped hard, calls go on through the other.
func TestAListOfReplicasGoesOnThroughTheSurvivor(t *testing.T) {
	t.Parallel()
	a, srvA := replica(t)
	b, _ := replica(t)
	conn, err := grpcclient.Dial(a+", "+b, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)
	ctx := context.Background()
	answered := map[string]bool{}
	testkit.Eventually(t, "both replicas to answer calls", 10*time.Second, func() bool {
		answered[whoAnswers(ctx, c)] = true
		return answered[port(a)] && answered[port(b)]
	})

	// Until the client sees a's connection closed, round robin still picks
	// a for every other call and that call fails. Two answers by b in a row
	// mean a has left the picker; a refused reconnect keeps it out.
	srvA.Stop()
	testkit.Eventually(t, "calls to go on through b", 10*time.Second, func() bool {
		return whoAnswers(ctx, c) == port(b) && whoAnswers(ctx, c) == port(b)
	})
	for i := range 20 {
		if got := whoAnswers(ctx, c); got != port(b) {
			t.Fatalf("call %d after a stopped was answered by %q; want every call answered by b (port %s)", i, got, port(b))
		}
	}
}

// With TLS, each replica of a list is checked against its own name, as a
// dial of it alone would check it: here one by IP address, one by DNS name.
func TestEachReplicaOfAListIsCheckedUnderItsOwnName(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	a, _ := replica(t, grpc.Creds(credentials.NewTLS(pki.ServerTLS(t, "mailbox", "service"))))
	b, _ := replica(t, grpc.Creds(credentials.NewTLS(pki.ServerTLS(t, "mailbox", "service"))))
	conn, err := grpcclient.Dial(a+",localhost:"+port(b), pki.ClientTLS(t, "host-1", "host"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)
	answered := map[string]bool{}
	testkit.Eventually(t, "both replicas to answer over TLS", 10*time.Second, func() bool {
		answered[whoAnswers(context.Background(), c)] = true
		return answered[port(a)] && answered[port(b)]
	})
}

func TestABadAddressListIsRefusedNamingTheBadEntry(t *testing.T) {
	t.Parallel()
	for list, want := range map[string]string{
		"127.0.0.1:1,nonsense":             `holds "nonsense", which is not host:port`,
		"127.0.0.1:1,127.0.0.1:1":          `names "127.0.0.1:1" twice`,
		"127.0.0.1:1,,127.0.0.1:2":         `holds "", which is not host:port`,
		"127.0.0.1:1," + ":2":              `holds ":2", which is not host:port`,
		strings.Repeat("h:1,", 65) + "h:2": "at most 64 are taken",
	} {
		conn, err := grpcclient.Dial(list, nil)
		if err == nil {
			conn.Close()
			t.Errorf("Dial(%q) was taken; want it refused", list)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Dial(%q): %v; want it to say %s", list, err, want)
		}
	}
}
