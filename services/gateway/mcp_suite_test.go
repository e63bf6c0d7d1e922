package gateway_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/capture"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/bridge"
	"github.com/switchboard-run/switchboard/services/gateway"
	"github.com/switchboard-run/switchboard/services/host"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// laptopTools is the tools file the suite's real tool host serves as
// "laptop": argv tools, spawned per invocation.
const laptopTools = `[
 {"name": "cat", "description": "Prints its input.", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}, "command": ["cat"]},
 {"name": "fail", "description": "Prints, complains and exits 3.", "input_schema": {}, "command": ["sh", "-c", "echo out; echo bad >&2; exit 3"]},
 {"name": "stats", "description": "Prints a JSON object.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "command": ["echo", "{\"files\": 3}"]}
]`

// mcpSuite is the real registry, mailbox and bridge served on one loopback
// gRPC listener (as `switchboard dev` serves them), the gateway's real HTTP
// server on another, and a real tool host serving laptopTools as "laptop",
// registered in the default workspace. Everything runs in this process, so
// the race detector sees the whole path.
type mcpSuite struct {
	url    string // the gateway, http://127.0.0.1:port
	reg    registryv1.RegistryServiceClient
	mb     mailboxv1.MailboxServiceClient
	bridge bridgev1.BridgeServiceClient
	// stopGateway shuts the gateway down gracefully and returns Serve's
	// error once it has returned.
	stopGateway func() error
}

var (
	opsCtx   = identity.As(context.Background(), identity.Identity{Name: "ops", Grade: identity.Operator})
	aliceCtx = identity.As(context.Background(), identity.Identity{Name: "alice", Grade: identity.Operator})
)

func hostCtx(name string) context.Context {
	return identity.As(context.Background(), identity.Identity{Name: name, Grade: identity.Host})
}

func newMCPSuite(t testing.TB, configure func(*gateway.Config)) *mcpSuite {
	t.Helper()
	log := logging.Discard()
	sec := process.Security{Dev: true}
	var brSvc *bridge.Service
	core := mailboxtest.New(t, mailboxtest.Options{Policy: bridge.Policy, Register: func(srv *grpcserver.Server, conn *grpc.ClientConn) {
		var err error
		brSvc, err = bridge.New(bridge.Config{Flags: process.Flags{Security: sec}},
			registryv1.NewRegistryServiceClient(conn), mailboxv1.NewMailboxServiceClient(conn), log)
		if err != nil {
			t.Fatal(err)
		}
		brSvc.Register(srv)
	}})
	t.Cleanup(func() { brSvc.Close() })
	conn, reg, mb := core.Conn, core.Registry, core.Mailbox

	httpLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{Listen: httpLis.Addr().String(), Flags: process.Flags{Security: sec}}
	if configure != nil {
		configure(&cfg)
	}
	gw, err := gateway.New(cfg, gateway.Backends{Registry: conn, Mailbox: conn, Bridge: conn, Self: sec.Self("gateway")}, log)
	if err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(tools, []byte(laptopTools), 0o600); err != nil {
		t.Fatal(err)
	}
	laptop, err := host.Local(tools, "laptop", reg, mb, log)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	gwCtx, gwCancel := context.WithCancel(ctx)
	done, gwDone := make(chan error, 1), make(chan error, 1)
	go func() { gwDone <- gw.Serve(gwCtx, httpLis) }()
	go func() { done <- laptop.Run(ctx) }()
	var gwErr error
	stopGateway := sync.OnceValue(func() error {
		gwCancel()
		gwErr = <-gwDone
		return gwErr
	})
	t.Cleanup(func() {
		if err := stopGateway(); err != nil {
			t.Errorf("the gateway's Serve: %v", err)
		}
		cancel()
		<-done
	})
	select {
	case <-laptop.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the tool host never became ready")
	}
	s := &mcpSuite{url: "http://" + httpLis.Addr().String(), reg: reg, mb: mb, bridge: bridgev1.NewBridgeServiceClient(conn),
		stopGateway: stopGateway}
	s.join(t, "default", "laptop")
	return s
}

// join registers client in workspace, as an operator.
func (s *mcpSuite) join(t testing.TB, workspace, client string) {
	t.Helper()
	if _, err := s.reg.RegisterClient(opsCtx, &registryv1.RegisterClientRequest{Workspace: workspace, Client: client}); err != nil {
		t.Fatalf("RegisterClient(%s, %s): %v", workspace, client, err)
	}
}

// mountConformance mounts the Go SDK's conformance server (stdio) on the
// bridge as "conf" and registers it in the default workspace.
func (s *mcpSuite) mountConformance(t testing.TB) {
	t.Helper()
	cfg := &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: testkit.Tool(t, "everything-server")}}}
	st, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "conf", Config: cfg})
	if err != nil || st.GetServer().GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("Mount(conf) = %v, %v", st, err)
	}
	s.join(t, "default", "conf")
}

// headers adds fixed headers to every request: how an MCP client configured
// with a bearer token (or, in dev mode, a name) reaches the gateway.
type headers struct {
	h    http.Header
	base http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.h {
		r.Header[k] = vs
	}
	return h.base.RoundTrip(r)
}

func devCaller(name string) http.Header {
	return http.Header{"Switchboard-Identity": {name}}
}

func bearer(secret string) http.Header {
	return http.Header{"Authorization": {"Bearer " + secret}}
}

// revisions are the two eras of MCP over HTTP the endpoint serves: the
// stateless one (no initialize, no session; list_changed on
// subscriptions/listen) and the one with sessions (list_changed on the
// session's GET stream). The SDK's client speaks the newest unless told.
var revisions = []string{"2026-07-28", "2025-11-25"}

// forEachRevision runs f once per revision, in parallel.
func forEachRevision(t *testing.T, f func(t *testing.T, rev string)) {
	for _, rev := range revisions {
		t.Run("protocol "+rev, func(t *testing.T) {
			t.Parallel()
			f(t, rev)
		})
	}
}

// connect opens an MCP session with the Go SDK's client over Streamable
// HTTP at path (/mcp or /mcp/<workspace>), in the newest revision.
func (s *mcpSuite) connect(t testing.TB, path string, h http.Header, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return s.connectAt(t, "", path, h, opts)
}

// connectAt is connect in revision rev, which the server must agree to.
func (s *mcpSuite) connectAt(t testing.TB, rev, path string, h http.Header, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := s.dial(rev, path, h, opts)
	if err != nil {
		t.Fatalf("connecting to %s: %v", path, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; rev != "" && got != rev {
		t.Fatalf("asked for protocol %s, the server agreed to %s", rev, got)
	}
	return cs
}

func (s *mcpSuite) dial(rev, path string, h http.Header, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url + path,
		HTTPClient: &http.Client{Transport: headers{h: h, base: http.DefaultTransport}}}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
}

// follower is a tool host of the test's own, on the mailbox's Follow
// stream, that never answers: it reports each invocation it is handed and
// each cancellation it is told of.
type follower struct {
	invocations chan *mailboxv1.Invocation
	cancelled   chan string
}

// follow advertises one tool "wait" as client and follows its queue until
// the test ends.
func (s *mcpSuite) follow(t testing.TB, client string) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(hostCtx(client))
	t.Cleanup(cancel)
	if _, err := s.reg.Advertise(ctx, &registryv1.AdvertiseRequest{Tools: []*registryv1.Tool{
		{Name: "wait", Description: "Never answers on its own.", InputSchema: `{"type":"object"}`}}}); err != nil {
		t.Fatal(err)
	}
	stream, err := s.mb.Follow(ctx, &mailboxv1.FollowRequest{Session: proto.String("test")})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := stream.Recv(); err != nil || ev.GetOpened() == nil {
		t.Fatalf("the follow stream opened with %v, %v", ev, err)
	}
	f := &follower{invocations: make(chan *mailboxv1.Invocation, 8), cancelled: make(chan string, 8)}
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			if inv := ev.GetInvocation(); inv != nil {
				f.invocations <- inv
			}
			if c := ev.GetCancelled(); c != nil {
				f.cancelled <- c.GetInvocation()
			}
		}
	}()
	s.join(t, "default", client)
	return f
}

// within waits for one value, failing the test after d.
func within[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
		var zero T
		return zero
	}
}

// texts is a result's text blocks.
func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

func completeRequest(id, stdout string) *mailboxv1.CompleteRequest {
	return &mailboxv1.CompleteRequest{Invocation: id, Capture: capture.New(stdout, "", 0)}
}

func captureRequest(id string) *mailboxv1.CaptureRequest {
	return &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb.New(10 * time.Second)}
}
