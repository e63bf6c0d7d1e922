// Package registry is the registry service (DESIGN §1–§4): which clients
// exist, the tool set each advertises and the names a model sees them
// under, workspace membership, presence as the mailbox reports it, a watch
// stream of every change, and API tokens. It is the bottom of the service
// graph and calls nobody.
package registry

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/services/registry/internal/store"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// OpenTimeout bounds the wait for the store's file lock: a second registry
// on the same data directory fails with a sentence instead of hanging.
const OpenTimeout = time.Second

// Service implements registryv1.RegistryServiceServer.
type Service struct {
	registryv1.UnimplementedRegistryServiceServer

	cfg   Config
	log   *slog.Logger
	store *store.Store
	hub   *watch.Hub
	st    *state

	draining  chan struct{} // closed when the server drains: long streams end
	drainOnce sync.Once
	closeOnce sync.Once
	closeErr  error
}

// New opens the store in cfg.DataDir and loads the registry's state.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	st, err := store.Open(cfg.DataDir, OpenTimeout)
	if err != nil {
		return nil, err
	}
	hub := watch.NewHub(cfg.WatchBuffer)
	autoJoin := ""
	if cfg.Security.Dev {
		autoJoin = DefaultWorkspace
	}
	state, err := newState(st, hub, autoJoin)
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	return &Service{cfg: cfg, log: log, store: st, hub: hub, st: state, draining: make(chan struct{})}, nil
}

// Register registers the service on srv, marks it SERVING, and registers
// the drain that ends its long-lived streams.
func (s *Service) Register(srv *grpcserver.Server) {
	registryv1.RegisterRegistryServiceServer(srv.GRPC, s)
	srv.Serving(registryv1.RegistryService_ServiceDesc.ServiceName)
	srv.OnDrain(s.drain)
}

// drain ends every watch and presence stream so the graceful stop does not
// wait out its grace on them.
func (s *Service) drain() {
	s.drainOnce.Do(func() {
		// Watchers first: the presence streams ending below publish their
		// withdrawals, which must not reach a watcher as live news of a
		// registry that is stopping.
		s.hub.Close()
		close(s.draining)
	})
}

// Close stores what is not yet stored (clients' last_seen since their last
// change) and closes the store. Calls that arrive later are refused as
// UNAVAILABLE. Safe to call twice.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.drain()
		s.closeErr = s.st.close()
	})
	return s.closeErr
}
