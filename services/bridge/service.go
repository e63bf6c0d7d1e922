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
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
	"github.com/switchboard-run/switchboard/services/bridge/internal/mcpconfig"
	"github.com/switchboard-run/switchboard/services/bridge/internal/mountstore"
)

// Service is the bridge: every stored mount this replica runs, and the
// BridgeService API.
type Service struct {
	bridgev1.UnimplementedBridgeServiceServer

	cfg      Config
	timing   timing
	peers    peers
	log      *slog.Logger
	instance string // names this process's follow sessions
	replica  string // names this replica in the store and in ListServers
	metrics  *metrics
	store    *mountstore.Store
	catalog  *catalogHub        // WatchCatalog's watchers
	view     *registryview.View // memberships and grants: who sees which server (visibility.go)
	audit    *audit.Writer      // mounts and unmounts, for the audit trail
	life     context.Context    // ends at Close

	stop        context.CancelFunc // ends the watch and the announcer
	synced      chan struct{}      // closed when the watch first held the store's mounts
	syncOnce    sync.Once
	announceNow chan struct{}
	announced   chan struct{} // closed when the announcer has withdrawn its record

	opMu sync.Mutex // one change applied, or close, at a time: a replacement is atomic

	mu      sync.Mutex
	entries map[string]*entry
	change  chan struct{} // closed (and replaced) at each change of entries
	closed  bool
}

// New returns a bridge that keeps its mounts in the NATS nc reaches,
// advertises through reg and serves through mb. It runs every mount
// stored there, and each one stored later, until Close.
func New(ctx context.Context, cfg Config, nc *nats.Conn, reg registryv1.RegistryServiceClient, mb mailboxv1.MailboxServiceClient, log *slog.Logger) (*Service, error) {
	if reg == nil || mb == nil || nc == nil {
		return nil, errors.New("the bridge needs a registry client, a mailbox client and a NATS connection")
	}
	if log == nil {
		log = slog.Default()
	}
	replica, err := replicaName(cfg.Replica)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	store, err := mountstore.Open(ctx, js, cfg.NATS.Replicas)
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	s := &Service{
		cfg: cfg, timing: cfg.timing.withDefaults(), peers: peers{reg: reg, mb: mb},
		log: log, instance: hex.EncodeToString(b[:]), replica: replica, store: store,
		entries: map[string]*entry{}, change: make(chan struct{}),
		synced: make(chan struct{}), announceNow: make(chan struct{}, 1), announced: make(chan struct{}),
	}
	s.metrics = newMetrics(cfg.Telemetry, s)
	s.audit = audit.NewWriter(js, "bridge", cfg.Telemetry, log)
	s.view = registryview.New(reg, cfg.Security.Self("bridge"), log)
	run, stop := context.WithCancel(context.Background())
	s.stop, s.life, s.catalog = stop, run, newCatalogHub()
	go s.view.Run(run)
	go s.follow(run)
	go s.announce(run)
	return s, nil
}

// Replica is this replica's name.
func (s *Service) Replica() string { return s.replica }

// Synced is closed once this replica has applied the mounts stored when it
// started.
func (s *Service) Synced() <-chan struct{} { return s.synced }

// Register registers the service on srv, marks it SERVING, and stops every
// server when srv drains.
func (s *Service) Register(srv *grpcserver.Server) {
	bridgev1.RegisterBridgeServiceServer(srv, s)
	srv.Serving(bridgev1.BridgeService_ServiceDesc.ServiceName)
	srv.OnDrain(s.Close)
}

// Close stops every server this replica runs. The mounts stay stored and
// their advertisements stay: a bridge that comes back (or another replica)
// serves them again; the exclusive ones' leases are given up, so another
// replica takes them over at once. Safe to call more than once.
func (s *Service) Close() {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	entries := s.entries
	s.entries = map[string]*entry{}
	close(s.change)
	s.change = make(chan struct{})
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Go(func() { e.stop(false) })
	}
	wg.Wait()
	s.stop()
	<-s.announced
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.audit.Close(ctx)
}

// MountConfig stores every server of an mcpServers file as a mount. A
// file that does not parse mounts nothing.
func (s *Service) MountConfig(ctx context.Context, path string) error {
	servers, err := mcpconfig.Load(path)
	if err != nil {
		return err
	}
	return s.MountServers(ctx, path, servers)
}

// MountServers stores servers as mounts, each under its client name, as
// read from the file at path (named in errors), and waits for their first
// start here; it fails with every mount that failed. A server stored
// already with the same config is left as it is, so replicas started with
// the same file do not restart each other's servers.
func (s *Service) MountServers(ctx context.Context, path string, servers map[string]*bridgev1.ServerConfig) error {
	clients := make([]string, 0, len(servers))
	for c := range servers {
		clients = append(clients, c)
	}
	slices.Sort(clients)
	var errs []error
	for _, c := range clients {
		if _, err := s.mount(ctx, c, servers[c], true); err != nil {
			errs = append(errs, fmt.Errorf("mounting %q from %s: %w", c, path, err))
		}
	}
	return errors.Join(errs...)
}

var errClosed = errors.New("the bridge is shutting down")

// mount stores cfg under client, replacing what was there (unless keep and
// the same config is stored), and waits until this replica has applied it
// and its first start here has an outcome.
func (s *Service) mount(ctx context.Context, client string, cfg *bridgev1.ServerConfig, keep bool) (*entry, error) {
	if err := names.CheckClient(client); err != nil {
		return nil, err
	}
	if err := mcpconfig.Check(cfg); err != nil {
		return nil, err
	}
	if err := s.checkDocument(ctx, cfg); err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	var rev uint64
	if keep {
		stored, at, err := s.store.Get(ctx, client)
		if err != nil {
			return nil, storeError("reading the stored mount of "+strconv.Quote(client), err)
		}
		if stored != nil && proto.Equal(stored, cfg) {
			rev = at
		}
	}
	if rev == 0 {
		var err error
		if rev, err = s.store.Put(ctx, client, proto.CloneOf(cfg)); err != nil {
			return nil, storeError("storing the mount of "+strconv.Quote(client), err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, s.timing.firstStart) // a watch that is down does not hold the call forever
	defer cancel()
	e, err := s.awaitEntry(wctx, client, rev)
	if err != nil {
		return nil, err
	}
	e.awaitSettled(ctx)
	return e, nil
}

// errStore marks a refusal because NATS could not be reached.
var errStore = errors.New("NATS")

func storeError(doing string, err error) error {
	return fmt.Errorf("%s in NATS failed (%v); try again in a moment: %w", doing, err, errStore)
}

// Mount stores a mount and waits for it to start here
// (BridgeService.Mount).
func (s *Service) Mount(ctx context.Context, req *bridgev1.MountRequest) (*bridgev1.MountResponse, error) {
	e, err := s.mount(ctx, req.GetClient(), req.GetConfig(), false)
	switch {
	case errors.Is(err, errClosed):
		return nil, status.Errorf(codes.FailedPrecondition, "mount %q: %v", req.GetClient(), err)
	case errors.Is(err, errStore), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return nil, status.Errorf(codes.Unavailable, "mount %q: %v", req.GetClient(), err)
	case err != nil:
		return nil, status.Errorf(codes.InvalidArgument, "mount %q: %v", req.GetClient(), err)
	}
	s.act(ctx, "mount", req.GetClient(), describe(req.GetConfig()))
	return &bridgev1.MountResponse{Server: s.withRunners(ctx, []*bridgev1.ServerStatus{e.status()})[0]}, nil
}

// Unmount removes a mount from the store and waits until this replica has
// stopped it (BridgeService.Unmount); every other replica stops it as it
// hears of it.
func (s *Service) Unmount(ctx context.Context, req *bridgev1.UnmountRequest) (*bridgev1.UnmountResponse, error) {
	client := req.GetClient()
	s.mu.Lock()
	before := s.entries[client]
	s.mu.Unlock()
	existed, err := s.store.Delete(ctx, client)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "unmount %q: %v", client, storeError("removing the stored mount", err))
	}
	if !existed {
		return nil, absent(client)
	}
	wctx, cancel := context.WithTimeout(ctx, s.timing.firstStart)
	defer cancel()
	if _, err := s.awaitEntry(wctx, client, 0); err != nil && !errors.Is(err, errClosed) {
		return nil, status.Errorf(codes.Unavailable, "unmount %q: %v", client, err)
	}
	s.act(ctx, "unmount", client, "")
	if before == nil {
		return &bridgev1.UnmountResponse{Server: &bridgev1.ServerStatus{Client: client, State: bridgev1.State_STATE_STOPPED, Replica: s.replica}}, nil
	}
	return &bridgev1.UnmountResponse{Server: before.status()}, nil
}

// ListServers shows every stored mount the caller may see (visibility.go)
// as this replica sees it, with the replicas running it, sorted by client
// (BridgeService.ListServers).
func (s *Service) ListServers(ctx context.Context, _ *bridgev1.ListServersRequest) (*bridgev1.ListServersResponse, error) {
	sees, err := s.sees(ctx)
	if err != nil {
		return nil, err
	}
	entries, err := s.visibleEntries(ctx, sees)
	if err != nil {
		return nil, err
	}
	rows := make([]*bridgev1.ServerStatus, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, e.status())
	}
	return &bridgev1.ListServersResponse{Servers: s.withRunners(ctx, rows)}, nil
}

// withRunners fills each row's running_on: an exclusive mount's lease
// holder, and for the rest the replicas announcing they run it. This
// replica counts from what it knows itself; what the store cannot say now
// is left out rather than refusing the listing.
func (s *Service) withRunners(ctx context.Context, rows []*bridgev1.ServerStatus) []*bridgev1.ServerStatus {
	var announced map[string][]string
	for _, r := range rows {
		var on []string
		if r.GetState() != bridgev1.State_STATE_STANDBY {
			on = append(on, s.replica)
		}
		if r.GetExclusive() {
			if h, err := s.store.Holder(ctx, r.GetClient()); err == nil && h != "" {
				on = append(on, h)
			}
		} else {
			if announced == nil {
				var err error
				if announced, err = s.store.RunningOn(ctx); err != nil {
					s.log.Debug("reading which replicas run what", "error", err)
					announced = map[string][]string{}
				}
			}
			on = append(on, announced[r.GetClient()]...)
		}
		slices.Sort(on)
		r.RunningOn = slices.Compact(on)
	}
	return rows
}
