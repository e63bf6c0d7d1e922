// Package mailbox is the mailbox service: invocations in flight, a queue per
// client and a slot per invocation, in RAM (DESIGN §3). Drivers post and
// collect; hosts read (long poll or stream) and complete. Delivery is
// at-least-once with leases; the invocation id is the idempotency key.
package mailbox

import (
	"context"
	"log/slog"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/presence"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/slots"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/view"
)

// Service implements mailboxv1.MailboxServiceServer.
type Service struct {
	mailboxv1.UnimplementedMailboxServiceServer

	box      *slots.Box
	view     *view.View
	presence *presence.Reporter
	log      *slog.Logger
}

// New returns a mailbox within cfg's bounds that checks invocations against
// reg's tools and reports presence to it, calling as self. Start runs those
// two streams.
func New(cfg Config, reg registryv1.RegistryServiceClient, self identity.Self, log *slog.Logger) *Service {
	p := presence.New(reg, self, log)
	return &Service{
		box: slots.New(slots.Config{TTL: cfg.TTL, MaxQueued: cfg.MaxQueued, MaxSlots: cfg.MaxSlots,
			MaxCaptureBytes: cfg.MaxCaptureBytes, Presence: p}),
		view:     view.New(reg, self, log),
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
	srv.Serving(mailboxv1.MailboxService_ServiceDesc.ServiceName)
	srv.OnDrain(s.box.Close)
}

// Len is the number of invocations held (queued, running or answered).
func (s *Service) Len() int { return s.box.Len() }
