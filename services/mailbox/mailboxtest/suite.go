// Package mailboxtest serves the real registry and the real mailbox
// together on one loopback listener in dev mode — as `switchboard dev`
// serves them — for the tests of the mailbox and of the services above it
// (the bridge, the gateway), which add themselves to the same server.
package mailboxtest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/natsserver"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/registry"
)

// Options shape a Suite.
type Options struct {
	// Mailbox bounds the mailbox; zero bounds take Defaults.
	Mailbox mailbox.Bounds
	// Policy is the grade policy of the services Register adds.
	Policy identity.Policy
	// Register adds more services to the server before it serves; conn
	// reaches the server itself, as the services' peers do in dev mode, and
	// nc the suite's NATS (the bridge keeps its mounts there).
	Register func(srv *grpcserver.Server, conn *grpc.ClientConn, nc *nats.Conn)
	// Telemetry, when set, counts the server's calls and holds the
	// registry's and the mailbox's metrics.
	Telemetry *telemetry.Telemetry
}

// Defaults are the mailbox bounds of a suite built with zero bounds.
var Defaults = mailbox.Bounds{TTL: time.Hour, MaxQueued: 10_000, MaxSlots: 100_000, MaxCaptureBytes: 4 << 20}

// Suite is the running registry and mailbox (and whatever Register added).
type Suite struct {
	// NATS is the suite's NATS server, in process.
	NATS     *natsserver.Server
	Addr     string
	Conn     *grpc.ClientConn
	Registry registryv1.RegistryServiceClient
	Mailbox  mailboxv1.MailboxServiceClient
	Service  *mailbox.Service

	bounds mailbox.Bounds
	stop   func()
}

// Stop shuts the suite's server down as SIGTERM does: its drain ends every
// read and every waiting call, then the server stops.
func (s *Suite) Stop() { s.stop() }

// New serves a suite until the test ends, once the mailbox's view of the
// registry has synced.
func New(t testing.TB, o Options) *Suite {
	t.Helper()
	log := logging.Discard()
	sec := process.Security{Dev: true}
	// On a loopback port too: tests start processes (a bridge) against it.
	ns, err := natsserver.Start(natsserver.Options{Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	nc, err := nats.Connect("", ns.InProcess())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	one := natsconn.Config{Replicas: 1}
	regSvc, err := registry.New(context.Background(), registry.Config{WatchBuffer: registry.DefaultWatchBuffer,
		MaxTools: registry.DefaultMaxTools, MaxTokenTTL: registry.DefaultMaxTokenTTL, NATS: one, Flags: process.Flags{Security: sec}, Telemetry: o.Telemetry}, nc, log)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpcclient.Dial(lis.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Suite{NATS: ns, Addr: lis.Addr().String(), Conn: conn, Registry: registryv1.NewRegistryServiceClient(conn),
		Mailbox: mailboxv1.NewMailboxServiceClient(conn)}
	bounds := o.Mailbox
	if bounds == (mailbox.Bounds{}) {
		bounds = Defaults
	}
	s.bounds = bounds
	s.Service, err = mailbox.New(context.Background(), mailbox.Config{Bounds: bounds, NATS: one, Flags: process.Flags{Security: sec}, Telemetry: o.Telemetry},
		nc, s.Registry, sec.Self("mailbox"), log)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpcserver.New(grpcserver.Options{Logger: log, ShutdownGrace: time.Second, Telemetry: o.Telemetry,
		Guard: identity.Guard{Auth: sec.Authenticator(), Policy: identity.Merge(registry.Policy, mailbox.Policy, o.Policy)}})
	regSvc.Register(srv)
	s.Service.Register(srv)
	if o.Register != nil {
		o.Register(srv, conn, nc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.Service.Start(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	s.stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(func() {
		s.stop()
		conn.Close()
		regSvc.Close()
	})
	select {
	case <-s.Service.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("the mailbox's view never synced with the registry")
	}
	return s
}

// Replica serves a second mailbox replica of the suite — the same NATS and
// registry, its own process state and listener, as another machine would —
// until the test ends, and returns a client of it.
func (s *Suite) Replica(t testing.TB) mailboxv1.MailboxServiceClient {
	t.Helper()
	log := logging.Discard()
	sec := process.Security{Dev: true}
	nc, err := nats.Connect("", s.NATS.InProcess())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	svc, err := mailbox.New(context.Background(), mailbox.Config{Bounds: s.bounds, NATS: natsconn.Config{Replicas: 1},
		Flags: process.Flags{Security: sec}}, nc, s.Registry, sec.Self("mailbox"), log)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpcserver.New(grpcserver.Options{Logger: log, ShutdownGrace: time.Second,
		Guard: identity.Guard{Auth: sec.Authenticator(), Policy: mailbox.Policy}})
	svc.Register(srv)
	ctx, cancel := context.WithCancel(context.Background())
	svc.Start(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := grpcclient.Dial(lis.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-done
		conn.Close()
	})
	select {
	case <-svc.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("the replica's view never synced with the registry")
	}
	return mailboxv1.NewMailboxServiceClient(conn)
}
