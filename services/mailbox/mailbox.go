// Package mailbox is the mailbox service (docs/design.md §3): invocations
// in flight, a queue per client and a slot per invocation. Drivers post and
// collect; hosts read (long poll or stream) and complete. Delivery is
// at-least-once with leases; the invocation id is the idempotency key.
//
// The invocations live in package box: in a replica's memory while both
// ends are connected, in NATS JetStream where a promise needs it, shared by
// any number of mailbox replicas (docs/architecture.md, "Where state lives").
package mailbox

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prometheus/client_golang/prometheus"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/box"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/idempotency"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/watch"
)

// Service implements mailboxv1.MailboxServiceServer.
type Service struct {
	mailboxv1.UnimplementedMailboxServiceServer

	bounds  Bounds
	box     inflight.Store
	held    *held
	watch   *watch.Tracker
	reads   prometheus.Gauge // the reads held open
	view    *registryview.View
	log     *slog.Logger
	metrics *metrics
	tel     *telemetry.Telemetry // a Serve stream's complete spans
	audit   *audit.Writer        // the audit trail (audit.go)
	keys    *idempotency.Keys    // the drivers' idempotency keys (once.go)
}

// New returns the mailbox: its store within cfg's bounds on nc, and a view
// of reg's tools that Start follows, calling as self.
func New(ctx context.Context, cfg Config, nc *nats.Conn, reg registryv1.RegistryServiceClient, self identity.Self, log *slog.Logger) (*Service, error) {
	cfg.Bounds = cfg.Bounds.withDefaults()
	if err := cfg.Bounds.check(); err != nil {
		return nil, err
	}
	if err := fitsNATS(nc, cfg.Bounds); err != nil {
		return nil, err
	}
	tel := cfg.Telemetry
	if tel == nil {
		tel = telemetry.NewMetrics()
	}
	s := &Service{bounds: cfg.Bounds, view: registryview.New(reg, self, log), log: log, metrics: newMetrics(tel), tel: tel}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	s.audit = audit.NewWriter(js, "mailbox", tel, log)
	b, err := box.New(ctx, nc, box.Config{TTL: cfg.TTL, MaxQueued: cfg.MaxQueued, MaxSlots: cfg.MaxSlots, MaxQueueBytes: cfg.MaxQueueBytes,
		MaxCaptureBytes: cfg.MaxCaptureBytes, Replicas: cfg.NATS.Replicas, PresenceTTL: cfg.PresenceTTL, Answered: s.answered, Asking: s.asking}, log)
	if err != nil {
		return nil, err
	}
	s.box = b
	if s.keys, err = idempotency.New(ctx, js, idempotency.Config{TTL: cfg.TTL, MaxPerPoster: cfg.MaxIdempotencyKeys,
		MaxValueBytes: int32(cfg.MaxCaptureBytes + natsHeadroom), Replicas: cfg.NATS.Replicas}); err != nil {
		s.box.Close()
		return nil, err
	}
	h, err := newHeld(nc, cfg.Bounds, log)
	if err != nil {
		s.box.Close()
		return nil, fmt.Errorf("listening for the other replicas' budget announcements: %w", err)
	}
	s.held = h
	if s.watch, err = watch.New(nc, cfg.TTL, b.Others, log); err != nil {
		s.box.Close()
		s.held.close()
		return nil, fmt.Errorf("listening for the other replicas' invocation changes: %w", err)
	}
	tel.Registry.MustRegister(newDepthCollector(b))
	s.reads = s.metrics.reads
	return s, nil
}

// DurableStreams names the JetStream streams that hold the durable
// invocations, one per partition.
func DurableStreams() []string {
	out := make([]string, box.Partitions)
	for k := range out {
		out[k] = box.StreamPrefix + strconv.Itoa(k)
	}
	return out
}

// natsHeadroom is what a stored record adds to the input or capture it
// carries: headers, ids, names.
const natsHeadroom = 64 << 10

// fitsNATS refuses bounds the NATS servers could not store: a capture or
// input at its bound must fit one message (max_payload).
func fitsNATS(nc *nats.Conn, b Bounds) error {
	need := int64(max(b.MaxCaptureBytes, b.MaxInputBytes)) + natsHeadroom
	if got := nc.MaxPayload(); got < need {
		return fmt.Errorf("NATS at %s takes messages of at most %d bytes (max_payload), but the mailbox stores captures of up to %d and inputs of up to %d bytes: raise max_payload to %d or more, or lower --max-capture-bytes and --max-input-bytes",
			nc.ConnectedUrlRedacted(), got, b.MaxCaptureBytes, b.MaxInputBytes, need)
	}
	return nil
}

// Start follows the registry's watch stream until ctx ends.
func (s *Service) Start(ctx context.Context) {
	go s.view.Run(ctx)
}

// Synced is closed once the local view of the registry holds a snapshot.
func (s *Service) Synced() <-chan struct{} { return s.view.Synced() }

// Register serves the mailbox on srv; shutting srv down ends every read.
func (s *Service) Register(srv *grpcserver.Server) {
	mailboxv1.RegisterMailboxServiceServer(srv, s)
	srv.Serving(mailboxv1.MailboxService_ServiceDesc.ServiceName)
	srv.OnDrain(func() {
		s.box.Close()
		s.held.close()
		s.watch.Close()
		ctx, cancel := context.WithTimeout(context.Background(), auditDrain)
		defer cancel()
		s.audit.Close(ctx)
	})
}
