package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/bridge"
	"github.com/switchboard-run/switchboard/services/gateway"
	"github.com/switchboard-run/switchboard/services/host"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
	"github.com/switchboard-run/switchboard/tests/internal/scripted"
)

// suite is the in-process harness: the real gateway's HTTP server on a
// loopback port, in front of backends on one gRPC listener. The backends
// are the real registry, mailbox and bridge, served as `switchboard dev`
// serves them, so the race detector sees the whole path; a test that
// needs a backend to do what the real ones never do on cue (hold a read
// until released, record the metadata a call carried) puts scripted
// backends there instead. The gateway is wired from its Config as Main
// wires it. (procSuite runs the same parts as separate processes.)
type suite struct {
	// URL is the gateway, http://127.0.0.1:port; Client reaches it.
	URL     string
	Client  *http.Client
	gateway *gateway.Gateway
	// Suite is the real registry and mailbox (nil over scripted backends);
	// bridge reaches the real bridge.
	*mailboxtest.Suite
	bridge bridgev1.BridgeServiceClient
	// drain shuts the backends' server down as its process would on
	// SIGTERM: the mailbox ends every held read with what it holds.
	drain func()
	// shutdown starts the gateway's graceful shutdown; served is closed
	// once Serve has returned, with its error in serveErr.
	shutdown context.CancelFunc
	served   chan struct{}
	serveErr error
	// inv is the first handle the test posted with invoke.
	inv string
	// waited hears each invocation the gateway asks the mailbox about with
	// a wait (Capture, Status), as the request leaves.
	waited chan string
}

// noteWaits is the gateway's interceptor toward the mailbox that tells
// waited of each request carrying a wait.
func (s *suite) noteWaits(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if w, ok := req.(interface {
		GetInvocation() string
		GetWait() *durationpb.Duration
	}); ok && w.GetWait().AsDuration() > 0 {
		select {
		case s.waited <- w.GetInvocation():
		default:
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// options shape a suite.
type options struct {
	// configure adjusts the gateway's Config, dev mode by default.
	configure func(*gateway.Config)
	// scripted serves these backends in place of the real services.
	scripted *scripted.Options
	// laptop runs a real tool host serving laptopTools as "laptop", a
	// member of the default workspace.
	laptop bool
}

// laptopTools is the tools file the laptop tool host serves: argv tools,
// spawned per invocation.
const laptopTools = `[
 {"name": "cat", "description": "Prints its input.", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}, "command": ["cat"]},
 {"name": "fail", "description": "Prints, complains and exits 3.", "input_schema": {}, "command": ["sh", "-c", "echo out; echo bad >&2; exit 3"]},
 {"name": "stats", "description": "Prints a JSON object.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "command": ["echo", "{\"files\": 3}"]}
]`

// newSuite serves a suite until the test ends.
func newSuite(t testing.TB, o options) *suite {
	t.Helper()
	s := &suite{}
	var addr string
	if o.scripted != nil {
		addr = scripted.Serve(t, *o.scripted)
	} else {
		s.serveServices(t)
		addr = s.Addr
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{Listen: lis.Addr().String(), Flags: process.Flags{Security: process.Security{Dev: true}}}
	if o.configure != nil {
		o.configure(&cfg)
	}
	clientTLS, err := cfg.Security.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	s.waited = make(chan string, 64)
	cc, err := grpcclient.Dial(addr, clientTLS, grpc.WithChainUnaryInterceptor(s.noteWaits))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	g, err := gateway.New(cfg, gateway.Backends{Registry: cc, Mailbox: cc, Bridge: cc, Self: cfg.Security.Self("gateway")}, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	s.URL, s.Client, s.gateway = "http://"+lis.Addr().String(), &http.Client{}, g
	var ctx context.Context
	ctx, s.shutdown = context.WithCancel(context.Background())
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		s.serveErr = g.Serve(ctx, lis)
	}()
	t.Cleanup(func() {
		if err := s.stopGateway(); err != nil {
			t.Errorf("the gateway's Serve: %v", err)
		}
	})
	if o.laptop {
		s.serveLaptop(t)
		s.join(t, "default", "laptop")
	}
	return s
}

// serveServices serves the real registry, mailbox and bridge.
func (s *suite) serveServices(t testing.TB) {
	t.Helper()
	var srv *grpcserver.Server
	var br *bridge.Service
	s.Suite = mailboxtest.New(t, mailboxtest.Options{Policy: bridge.Policy, Register: func(g *grpcserver.Server, conn *grpc.ClientConn, nc *nats.Conn) {
		var err error
		br, err = bridge.New(context.Background(), bridge.Config{Flags: process.Flags{Security: process.Security{Dev: true}}}, nc,
			registryv1.NewRegistryServiceClient(conn), mailboxv1.NewMailboxServiceClient(conn), logging.Discard())
		if err != nil {
			t.Fatal(err)
		}
		br.Register(g)
		srv = g
	}})
	t.Cleanup(br.Close)
	s.bridge, s.drain = bridgev1.NewBridgeServiceClient(s.Conn), srv.Shutdown
}

// serveLaptop runs the real tool host serving laptopTools as "laptop"
// until the test ends.
func (s *suite) serveLaptop(t testing.TB) {
	t.Helper()
	s.serveLocalHost(t, "laptop", laptopTools)
}

// serveLocalHost runs the real tool host serving the tools file tools as
// client until the test ends.
func (s *suite) serveLocalHost(t testing.TB, client, tools string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(file, []byte(tools), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := host.Local(file, client, s.Registry, s.Mailbox, nil, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testkit.Receive(t, h.Ready(), 10*time.Second, "the tool host to be ready")
}

// stopGateway shuts the gateway down gracefully and returns Serve's error
// once it has returned.
func (s *suite) stopGateway() error {
	s.shutdown()
	<-s.served
	return s.serveErr
}

// as is the dev-mode header naming a caller.
func as(name string, grade identity.Grade) http.Header {
	return http.Header{"Switchboard-Identity": {name}, "Switchboard-Grade": {string(grade)}}
}

// bearer is the header presenting a token.
func bearer(secret string) http.Header {
	return http.Header{"Authorization": {"Bearer " + secret}}
}

// reply is one HTTP answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends one request and reads the whole answer.
func do(t testing.TB, c *http.Client, method, url string, header http.Header, body []byte) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return reply{Status: res.StatusCode, Header: res.Header, Body: b}
}
