// Package mailbox is the mailbox service: invocations in flight, a queue per
// client and a slot per invocation, in RAM (DESIGN §3). Drivers post and
// collect; hosts read (long poll or stream) and complete. Delivery is
// at-least-once with leases; the invocation id is the idempotency key.
package mailbox

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/listen"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/presence"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/slots"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/view"
)

// ServiceName is the gRPC service name, as health reports it.
const ServiceName = "switchboard.mailbox.v1.MailboxService"

// Config bounds the mailbox.
type Config struct {
	// TTL is how long an uncollected slot lives.
	TTL time.Duration
	// MaxQueued bounds the invocations queued for one client.
	MaxQueued int
	// MaxSlots bounds the invocations held in all.
	MaxSlots int
	// MaxCaptureBytes bounds one capture's stdout and stderr together.
	MaxCaptureBytes int
}

// Register adds the mailbox's flags.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.DurationVar(&c.TTL, "ttl", time.Hour, "how long an uncollected invocation is kept")
	fs.IntVar(&c.MaxQueued, "max-queued", 10_000, "invocations queued for one client before Invoke is refused")
	fs.IntVar(&c.MaxSlots, "max-slots", 1_000_000, "invocations held in all before Invoke is refused")
	fs.IntVar(&c.MaxCaptureBytes, "max-capture-bytes", 4<<20, "bytes of stdout and stderr one capture may hold")
}

// Policy is who may call what: drivers (operators) post, collect and
// cancel; hosts read and complete.
var Policy = identity.Policy{
	"/switchboard.mailbox.v1.MailboxService/Invoke":      {identity.Operator},
	"/switchboard.mailbox.v1.MailboxService/Call":        {identity.Operator},
	"/switchboard.mailbox.v1.MailboxService/Capture":     {identity.Operator},
	"/switchboard.mailbox.v1.MailboxService/Cancel":      {identity.Operator},
	"/switchboard.mailbox.v1.MailboxService/Invocations": {identity.Host, identity.Operator},
	"/switchboard.mailbox.v1.MailboxService/Follow":      {identity.Host, identity.Operator},
	"/switchboard.mailbox.v1.MailboxService/Complete":    {identity.Host, identity.Operator},
}

// Service implements mailboxv1.MailboxServiceServer.
type Service struct {
	mailboxv1.UnimplementedMailboxServiceServer

	box      *slots.Box
	view     *view.View
	presence *presence.Reporter
	log      *slog.Logger
}

// New returns a mailbox that checks invocations against reg's tools and
// reports presence to it, calling as caller. Start runs those two streams.
func New(cfg Config, reg registryv1.RegistryServiceClient, caller identity.Caller, log *slog.Logger) *Service {
	p := presence.New(reg, caller, log)
	return &Service{
		box: slots.New(slots.Config{TTL: cfg.TTL, MaxQueued: cfg.MaxQueued, MaxSlots: cfg.MaxSlots,
			MaxCaptureBytes: cfg.MaxCaptureBytes, Presence: p}),
		view:     view.New(reg, caller, log),
		presence: p,
		log:      log,
	}
}

// Start follows the registry's watch stream and keeps the presence stream
// until ctx ends.
func (s *Service) Start(ctx context.Context) {
	go s.view.Run(ctx)
	go s.presence.Run(ctx)
}

// Synced is closed once the local view of the registry holds a snapshot.
func (s *Service) Synced() <-chan struct{} { return s.view.Synced() }

// Register serves the mailbox on srv; shutting srv down ends every read.
func (s *Service) Register(srv *grpcserver.Server) {
	mailboxv1.RegisterMailboxServiceServer(srv.GRPC, s)
	srv.Serving(ServiceName)
	srv.OnDrain(s.box.Close)
}

// Len is the number of invocations held (queued, running or answered).
func (s *Service) Len() int { return s.box.Len() }

// Main runs the mailbox alone: `switchboard mailbox [flags]`.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	fs := config.NewFlagSet("mailbox", stderr)
	var cfg Config
	cfg.Register(fs)
	var p config.Process
	p.Register(fs)
	addr := fs.String("listen", "127.0.0.1:7732", "gRPC listen address")
	regAddr := fs.String("registry", "127.0.0.1:7731", "the registry's gRPC address")
	log, err := p.Parse(fs, args, stderr)
	if err != nil {
		return err
	}
	sec := &p.Security
	srvTLS, cliTLS, err := sec.TLS()
	if err != nil {
		return fmt.Errorf("mailbox TLS: %w", err)
	}
	conn, err := grpcclient.Dial(*regAddr, cliTLS)
	if err != nil {
		return err
	}
	defer conn.Close()
	lis, err := listen.TCP(*addr, sec.Dev)
	if err != nil {
		return err
	}
	srv := grpcserver.New(grpcserver.Options{Logger: log, TLS: srvTLS,
		Guard: identity.Guard{Auth: sec.Authenticator(), Policy: Policy}})
	svc := New(cfg, registryv1.NewRegistryServiceClient(conn), sec.Caller("mailbox"), log)
	svc.Register(srv)
	svc.Start(ctx)
	log.Info("mailbox listening", "grpc", lis.Addr().String(), "registry", *regAddr, "dev", sec.Dev)
	return srv.Serve(ctx, lis)
}
