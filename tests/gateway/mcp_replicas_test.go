package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// Two gateway replicas behind a front with no stickiness: an MCP client of
// either era lists and calls through both, and an act post is collected
// over REST through the other; one replica stops and the same session goes
// on through the other, taken up under its Mcp-Session-Id (docs/mcp.md,
// "Replicas"), hearing list_changed once its stream is reopened there. The
// stateless SDK client does not reopen subscriptions/listen, so that era's
// list_changed is not awaited after the stop.
func TestAnMCPSessionGoesOnThroughAnyGatewayReplica(t *testing.T) {
	t.Parallel()
	forEachRevision(t, func(t *testing.T, rev string) {
		s := newSuite(t, options{laptop: true})
		front := testkit.NewFront(t, s.URL, serveGatewayReplica(t, s.Addr))
		goesOn(t, rev, front, "stopped", func() {
			if err := s.stopGateway(); err != nil {
				t.Fatal(err)
			}
		}, func() {
			s.advertise(t, "box", &registryv1.Tool{Name: "new", Description: "new", InputSchema: `{"type":"object"}`})
			s.join(t, "default", "box")
		})
	})
}

// The same with every part its own process, and the first gateway killed
// with SIGKILL mid-session.
func TestAnMCPSessionGoesOnWhenAGatewayProcessIsKilled(t *testing.T) {
	t.Parallel()
	forEachRevision(t, func(t *testing.T, rev string) {
		p := startReplicaProcs(t)
		front := testkit.NewFront(t, p.urls...)
		goesOn(t, rev, front, "killed", p.gateways[0].Kill, func() {
			if _, err := p.reg.Advertise(testkit.As("box", identity.Host), &registryv1.AdvertiseRequest{
				Tools: []*registryv1.Tool{{Name: "new", Description: "new", InputSchema: `{"type":"object"}`}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := p.reg.RegisterClient(opsCtx, &registryv1.RegisterClientRequest{Workspace: "default", Client: "box"}); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// goesOn opens an MCP session in revision rev through front, whose first
// replica stop (a verb for the log) ends; change changes the workspace's
// tools.
func goesOn(t *testing.T, rev string, front *testkit.Front, verb string, stop, change func()) {
	t.Helper()
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL + "/mcp",
		HTTPClient: testkit.HeaderClient(as("alice", identity.Driver))},
		&mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	use := func(when string, calls int) {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) == 0 {
			t.Fatalf("tools/list %s: %v, %v", when, res, err)
		}
		for i := range calls {
			text := fmt.Sprintf("%s, call %d", when, i)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "laptop_cat", Arguments: map[string]any{"text": text}})
			if err != nil || res.IsError || len(texts(res)) != 1 || texts(res)[0] != `{"text":"`+text+`"}` {
				t.Fatalf("tools/call %d %s: %v, %v", i, when, res, err)
			}
		}
	}
	use("with both replicas", 6)
	actThrough(t, front.URL, "posted on one replica, collected on the other")
	if front.Served[0].Load() == 0 || front.Served[1].Load() == 0 {
		t.Fatalf("the front sent %d requests to the first replica and %d to the second; want both used", front.Served[0].Load(), front.Served[1].Load())
	}

	stop()
	// As a balancer's health check would, the front sends nothing more to
	// the stopped replica: its port is free now, and another test's
	// listener may take it.
	front.Down[0].Store(true)
	before, streamsBefore := front.Served[1].Load(), front.Streams[1].Load()
	stopped := time.Now()
	use("after the first replica "+verb, 6)
	actThrough(t, front.URL, "after the first replica "+verb)
	t.Logf("protocol %s, session %q: the session went on through the second replica (%d requests there, first answered %v after the first was %s)",
		rev, cs.ID(), front.Served[1].Load()-before, time.Since(stopped).Round(time.Millisecond), verb)

	if rev >= "2026-07-28" {
		return
	}
	testkit.Eventually(t, "the client to reopen its notification stream on the second replica", 20*time.Second,
		func() bool { return front.Streams[1].Load() > streamsBefore })
	reopened := time.Since(stopped)
	change()
	testkit.Receive(t, changed, 20*time.Second, "notifications/tools/list_changed through the second replica")
	t.Logf("protocol %s: the notification stream was open on the second replica %v after the first was %s", rev, reopened.Round(time.Millisecond), verb)
}

// replicaProcs are the suite's processes with two gateways: a registry, a
// mailbox, the laptop tool host, and the gateways, on one NATS.
type replicaProcs struct {
	urls     []string
	gateways []*testkit.Proc
	reg      registryv1.RegistryServiceClient
}

func startReplicaProcs(t *testing.T) *replicaProcs {
	t.Helper()
	sp := procs.NewSplit(t, procs.Options{})
	p := &replicaProcs{reg: sp.Reg}
	sp.Host("laptop", laptopTools, 0)
	if _, err := p.reg.RegisterClient(opsCtx, &registryv1.RegisterClientRequest{Workspace: "default", Client: "laptop"}); err != nil {
		t.Fatal(err)
	}
	sp.WaitPresent("laptop", true, procs.StartTimeout)
	for range 2 {
		url, proc := startGateway(t, sp)
		p.urls, p.gateways = append(p.urls, url), append(p.gateways, proc)
	}
	return p
}

// actThrough posts a call with /v1/act and collects its capture over REST,
// two requests the front sends to different replicas while both serve.
func actThrough(t *testing.T, url, text string) {
	t.Helper()
	h := as("alice", identity.Driver)
	posted := do(t, testkit.HTTP, http.MethodPost, url+"/v1/act", h,
		[]byte(`{"op":"invoke","client":"laptop","tool":"cat","input":{"text":"`+text+`"}}`))
	var inv struct{ Invocation string }
	if posted.Status != http.StatusOK || json.Unmarshal(posted.Body, &inv) != nil || inv.Invocation == "" {
		t.Fatalf("/v1/act invoke %s: %d %s", text, posted.Status, posted.Body)
	}
	got := do(t, testkit.HTTP, http.MethodGet, url+"/v1/invocations/"+inv.Invocation+"/capture?wait=20s", h, nil)
	if got.Status != http.StatusOK || !bytes.Contains(got.Body, []byte(text)) {
		t.Fatalf("collecting %s (%s) over REST: %d %s", inv.Invocation, text, got.Status, got.Body)
	}
}

// serveGatewayReplica serves another gateway over the backends at addr
// until the test ends, and returns its URL.
func serveGatewayReplica(t *testing.T, addr string) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{Listen: lis.Addr().String(), Flags: process.Flags{Security: process.Security{Dev: true}}}
	cc, err := grpcclient.Dial(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Backends{Registry: cc, Mailbox: cc, Bridge: cc, Self: cfg.Security.Self("gateway")}, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the second gateway's Serve: %v", err)
		}
		cc.Close()
	})
	return "http://" + lis.Addr().String()
}
