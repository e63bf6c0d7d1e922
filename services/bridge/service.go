// Package bridge is the MCP bridge (docs/design.md §5): it mounts MCP servers, over
// stdio or Streamable HTTP, and JSON-lines plugin backends (docs/design.md §7) as
// tool hosts. Each mounted server is its own client identity: the bridge
// advertises the server's tools under it, follows its queue on the mailbox,
// runs its invocations upstream and completes them with captures, and
// supervises the server with backoff and a crash limit.
package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/names"
	"github.com/switchboard-run/switchboard/services/bridge/internal/mcpconfig"
)

// Service is the bridge: every mounted server, and the BridgeService API.
type Service struct {
	bridgev1.UnimplementedBridgeServiceServer

	cfg      Config
	timing   timing
	peers    peers
	log      *slog.Logger
	instance string // names this process's follow sessions
	metrics  *metrics

	opMu sync.Mutex // one mount, unmount or close at a time: a replacement is atomic

	mu     sync.Mutex
	mounts map[string]*mount
	closed bool
}

// New returns a bridge that advertises through reg and serves through mb.
// Nothing is mounted yet (see MountConfig and Mount).
func New(cfg Config, reg registryv1.RegistryServiceClient, mb mailboxv1.MailboxServiceClient, log *slog.Logger) (*Service, error) {
	if reg == nil || mb == nil {
		return nil, errors.New("the bridge needs both a registry and a mailbox client")
	}
	if log == nil {
		log = slog.Default()
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	s := &Service{
		cfg: cfg, timing: cfg.timing.withDefaults(), peers: peers{reg: reg, mb: mb},
		log: log, instance: hex.EncodeToString(b[:]), mounts: map[string]*mount{},
	}
	s.metrics = newMetrics(cfg.Telemetry, s)
	return s, nil
}

// Register registers the service on srv, marks it SERVING, and stops every
// server when srv drains.
func (s *Service) Register(srv *grpcserver.Server) {
	bridgev1.RegisterBridgeServiceServer(srv.GRPC, s)
	srv.Serving(bridgev1.BridgeService_ServiceDesc.ServiceName)
	srv.OnDrain(s.Close)
}

// Close stops every mounted server. Their advertisements stay: they are
// durable, and a bridge that comes back serves them again. Safe to call more
// than once.
func (s *Service) Close() {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	s.closed = true
	mounts := s.mounts
	s.mounts = map[string]*mount{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range mounts {
		wg.Go(func() { m.stop(false) })
	}
	wg.Wait()
}

// MountConfig mounts every server of an mcpServers file. A file that does
// not parse mounts nothing.
func (s *Service) MountConfig(ctx context.Context, path string) error {
	servers, err := mcpconfig.Load(path)
	if err != nil {
		return err
	}
	return s.MountServers(ctx, path, servers)
}

// MountServers mounts servers, each under its client name, as read from
// the file at path (named in errors); it fails with every mount that
// failed.
func (s *Service) MountServers(ctx context.Context, path string, servers map[string]*bridgev1.ServerConfig) error {
	clients := make([]string, 0, len(servers))
	for c := range servers {
		clients = append(clients, c)
	}
	slices.Sort(clients)
	var errs []error
	for _, c := range clients {
		if _, err := s.mount(ctx, c, servers[c]); err != nil {
			errs = append(errs, fmt.Errorf("mounting %q from %s: %w", c, path, err))
		}
	}
	return errors.Join(errs...)
}

var errClosed = errors.New("the bridge is shutting down")

// mount starts hosting cfg under client, replacing what was there, and
// waits until its first start has an outcome.
func (s *Service) mount(ctx context.Context, client string, cfg *bridgev1.ServerConfig) (*mount, error) {
	if err := names.CheckClient(client); err != nil {
		return nil, err
	}
	if err := mcpconfig.Check(cfg); err != nil {
		return nil, err
	}
	m, err := s.replace(client, proto.CloneOf(cfg))
	if err != nil {
		return nil, err
	}
	m.awaitSettled(ctx)
	return m, nil
}

func (s *Service) replace(client string, cfg *bridgev1.ServerConfig) (*mount, error) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	closed, old := s.closed, s.mounts[client]
	s.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if old != nil {
		// Its tools stay advertised: the new server re-advertises over them,
		// with no gap in which invocations would be refused.
		old.stop(false)
	}
	m := newMount(s, client, cfg)
	m.begin()
	s.mu.Lock()
	s.mounts[client] = m
	s.mu.Unlock()
	s.log.Info("mounted", "client", client, "transport", transportName(cfg))
	return m, nil
}

// Mount starts hosting a server under a client name (BridgeService.Mount).
func (s *Service) Mount(ctx context.Context, req *bridgev1.MountRequest) (*bridgev1.MountResponse, error) {
	m, err := s.mount(ctx, req.GetClient(), req.GetConfig())
	switch {
	case errors.Is(err, errClosed):
		return nil, status.Errorf(codes.FailedPrecondition, "mount %q: %v", req.GetClient(), err)
	case err != nil:
		return nil, status.Errorf(codes.InvalidArgument, "mount %q: %v", req.GetClient(), err)
	}
	return &bridgev1.MountResponse{Server: m.status()}, nil
}

// Unmount stops hosting a server and withdraws its tools
// (BridgeService.Unmount).
func (s *Service) Unmount(_ context.Context, req *bridgev1.UnmountRequest) (*bridgev1.UnmountResponse, error) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	m, ok := s.mounts[req.GetClient()]
	delete(s.mounts, req.GetClient())
	s.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no MCP server is mounted as %q", req.GetClient())
	}
	m.stop(true)
	s.log.Info("unmounted", "client", m.client)
	return &bridgev1.UnmountResponse{Server: m.status()}, nil
}

// ListServers shows every mounted server, sorted by client
// (BridgeService.ListServers).
func (s *Service) ListServers(context.Context, *bridgev1.ListServersRequest) (*bridgev1.ListServersResponse, error) {
	s.mu.Lock()
	mounts := make([]*mount, 0, len(s.mounts))
	for _, m := range s.mounts {
		mounts = append(mounts, m)
	}
	s.mu.Unlock()
	slices.SortFunc(mounts, func(a, b *mount) int {
		if a.client < b.client {
			return -1
		}
		if a.client > b.client {
			return 1
		}
		return 0
	})
	out := &bridgev1.ListServersResponse{}
	for _, m := range mounts {
		out.Servers = append(out.Servers, m.status())
	}
	return out, nil
}
