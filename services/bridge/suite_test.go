package bridge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// suite is the real registry, the real mailbox and the bridge served on one
// loopback listener in dev mode, as `switchboard dev` serves them, with the
// peers reaching each other through gRPC clients dialed to that listener.
type suite struct {
	addr   string
	nats   string // the NATS URL a bridge process is given
	conn   *grpc.ClientConn
	svc    *Service
	reg    registryv1.RegistryServiceClient
	mb     mailboxv1.MailboxServiceClient
	bridge bridgev1.BridgeServiceClient
}

// fast is the supervision timing the fault tests use: the real doubling
// backoff, scaled down so a crash limit is reached in well under a second.
var fast = timing{backoff: 10 * time.Millisecond, maxBackoff: 40 * time.Millisecond}

func newSuite(t testing.TB, tm timing) *suite {
	t.Helper()
	var svc *Service
	core := mailboxtest.New(t, mailboxtest.Options{Policy: Policy, Register: func(srv *grpcserver.Server, conn *grpc.ClientConn, nc *nats.Conn) {
		var err error
		svc, err = New(context.Background(), Config{Flags: process.Flags{Security: process.Security{Dev: true}}, timing: tm}, nc,
			registryv1.NewRegistryServiceClient(conn), mailboxv1.NewMailboxServiceClient(conn), logging.Discard())
		if err != nil {
			t.Fatal(err)
		}
		svc.Register(srv)
	}})
	t.Cleanup(func() { svc.Close() })
	return &suite{addr: core.Addr, nats: core.NATS.ClientURL(), conn: core.Conn, svc: svc, reg: core.Registry, mb: core.Mailbox,
		bridge: bridgev1.NewBridgeServiceClient(core.Conn)}
}

var (
	admin  = testkit.As("ops", identity.Admin)
	driver = testkit.As("agent", identity.Driver)
)

func stdioServer(bin string, args ...string) *bridgev1.ServerConfig {
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: bin, Args: args}}}
}

func httpServer(url string) *bridgev1.ServerConfig {
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: url}}}
}

// mount mounts cfg under client through the gRPC API, as an admin.
func (s *suite) mount(t testing.TB, client string, cfg *bridgev1.ServerConfig) *bridgev1.ServerStatus {
	t.Helper()
	res, err := s.bridge.Mount(admin, &bridgev1.MountRequest{Client: client, Config: cfg})
	if err != nil {
		t.Fatalf("Mount(%q): %v", client, err)
	}
	return res.GetServer()
}

// row is client's ListServers row, or nil.
func (s *suite) row(t testing.TB, client string) *bridgev1.ServerStatus {
	t.Helper()
	res, err := s.bridge.ListServers(admin, &bridgev1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.GetServers() {
		if r.GetClient() == client {
			return r
		}
	}
	return nil
}

func (s *suite) awaitState(t testing.TB, client string, want bridgev1.State) *bridgev1.ServerStatus {
	t.Helper()
	var last *bridgev1.ServerStatus
	testkit.Eventually(t, client+" "+want.String(), 20*time.Second, func() bool {
		last = s.row(t, client)
		return last != nil && last.GetState() == want
	})
	return last
}

// call runs tool on client through the mailbox as a driver and returns the
// capture.
func (s *suite) call(t testing.TB, client, tool, input string) *mailboxv1.Capture {
	t.Helper()
	ctx, cancel := context.WithTimeout(driver, 20*time.Second)
	defer cancel()
	res, err := s.mb.Call(ctx, &mailboxv1.CallRequest{Client: client, Tool: tool, Input: input})
	if err != nil {
		t.Fatalf("Call(%s, %q): %v", client, tool, err)
	}
	if res.GetCapture() == nil {
		t.Fatalf("Call(%s, %q): no capture before the deadline", client, tool)
	}
	return res.GetCapture()
}

// advertised is client's tool names as the registry holds them.
func (s *suite) advertised(t testing.TB, client string) map[string]bool {
	t.Helper()
	res, err := s.reg.GetClient(admin, &registryv1.GetClientRequest{Client: client})
	if status.Code(err) == codes.NotFound {
		return map[string]bool{}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, tool := range res.GetRow().GetTools() {
		out[tool.GetName()] = true
	}
	return out
}

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
