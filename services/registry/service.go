// Package registry is the registry service (docs/design.md §1–§4): which
// clients exist, the tool set each advertises and the names a model sees
// them under, workspace membership, presence as the mailbox records it, a
// watch stream of every change, and API tokens. It is the bottom of the
// service graph and calls nobody. Its state lives in NATS JetStream
// (package records, and the presence bucket of kit/suite/presence): any number
// of registry replicas serve it, each from its own view of the buckets.
package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// maxRecordBytes bounds one stored record: a set at the message limit.
const maxRecordBytes = grpcserver.MaxMessageBytes

// Service implements registryv1.RegistryServiceServer.
type Service struct {
	registryv1.UnimplementedRegistryServiceServer

	cfg    Config
	log    *slog.Logger
	trail  jetstream.Stream // the audit trail, which the registry serves (audit.go)
	hub    *watch.Hub
	st     *state
	cancel context.CancelFunc

	closeOnce sync.Once
}

// New declares the registry's buckets on nc's JetStream and returns the
// service once its view holds what they hold (bounded by ctx).
func New(ctx context.Context, cfg Config, nc *nats.Conn, log *slog.Logger) (*Service, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	rec, err := records.Open(ctx, js, cfg.NATS.Replicas, maxRecordBytes)
	if err != nil {
		return nil, err
	}
	trail, err := audit.Declare(ctx, js, cfg.NATS.Replicas, cmp.Or(cfg.AuditRetention, DefaultAuditRetention), cmp.Or(cfg.AuditMaxBytes, DefaultAuditMaxBytes))
	if err != nil {
		return nil, err
	}
	pres := &presenceBucket{js: js}
	if cfg.Import != "" {
		switch n, err := importBolt(ctx, cfg.Import, rec); {
		case errors.Is(err, errImportedBefore):
			log.Info("the registry.db of an earlier version was imported by an earlier start; nothing to import", "file", cfg.Import)
		case err != nil:
			return nil, err
		default:
			log.Info("imported a registry.db of an earlier version into NATS", "file", cfg.Import, "records", n)
		}
	}
	hub := watch.NewHub(cfg.WatchBuffer)
	autoJoin := ""
	if cfg.Security.Dev {
		autoJoin = DefaultWorkspace
	}
	st := newState(rec, pres, hub, autoJoin, log)
	st.audit = audit.NewWriter(js, "registry", cfg.Telemetry, log)
	followCtx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	go st.follow(followCtx, ready)
	select {
	case <-ready:
	case <-ctx.Done():
		cancel()
		return nil, fmt.Errorf("the registry's view of NATS did not fill: %w", ctx.Err())
	}
	if cfg.Telemetry != nil {
		cfg.Telemetry.Registry.MustRegister(newCollector(st))
	}
	svc := &Service{cfg: cfg, log: log, hub: hub, st: st, cancel: cancel, trail: trail}
	if cfg.Groups != "" {
		if err := svc.setGroupsFile(ctx, cfg.Groups); err != nil {
			_ = svc.Close()
			return nil, err
		}
	}
	return svc, nil
}

// Register registers the service on srv, marks it SERVING, and registers
// the drain that ends its long-lived streams.
func (s *Service) Register(srv *grpcserver.Server) {
	registryv1.RegisterRegistryServiceServer(srv, s)
	registryv1.RegisterAuditServiceServer(srv, auditService{s: s})
	srv.Serving(registryv1.RegistryService_ServiceDesc.ServiceName)
	srv.Serving(registryv1.AuditService_ServiceDesc.ServiceName)
	srv.OnDrain(s.hub.Close)
}

// Close stops following the buckets and refuses later calls as
// UNAVAILABLE. Everything is stored already: nothing is lost. Safe to call
// twice.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.st.close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.st.audit.Close(ctx)
	})
	return nil
}
