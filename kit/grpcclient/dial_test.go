package grpcclient_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// replica serves the health service on a loopback port, answering SERVING
// for its own name only, so a caller can tell which replica answered.
func replica(t *testing.T, name string) (addr string, srv *grpc.Server) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv = grpc.NewServer()
	h := health.NewServer()
	h.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, h)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), srv
}

// whoAnswers returns the name of the replica that answered one call, or ""
// when the call failed.
func whoAnswers(ctx context.Context, c healthpb.HealthClient) string {
	// Each Check is a pick of its own, so a name asked may land on the
	// other replica and fail: the caller asks again.
	for _, name := range []string{"a", "b"} {
		res, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		if err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return name
		}
	}
	return ""
}

// A list of replicas is dialed as one client that spreads calls over both;
// when one is stopped hard, calls go on through the other.
func TestAListOfReplicasGoesOnThroughTheSurvivor(t *testing.T) {
	t.Parallel()
	a, srvA := replica(t, "a")
	b, _ := replica(t, "b")
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
		return answered["a"] && answered["b"]
	})

	srvA.Stop()
	testkit.Eventually(t, "calls to go to b alone", 10*time.Second, func() bool {
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: "b"})
		return err == nil
	})
	for i := range 20 {
		if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: "b"}); err != nil {
			t.Fatalf("call %d after a stopped: %v; want every call answered by b", i, err)
		}
	}
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
