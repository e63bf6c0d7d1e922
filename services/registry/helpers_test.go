package registry_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/natsserver"
	kitpresence "github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
)

// env is a registry served in-process, in dev mode, on a real loopback
// listener, with a client connection to it, keeping its state in a real
// NATS server.
type env struct {
	t    testing.TB
	nats *natsserver.Server
	nc   *nats.Conn
	reg  registryv1.RegistryServiceClient
	cc   *grpc.ClientConn
	svc  *registry.Service
	addr string
	pki  *testkit.PKI // production mode's material; nil in dev mode

	stop func()
}

// startNATS runs a NATS server with JetStream for the test, listening on a
// loopback port (the registry binary dials it) and in process.
func startNATS(t testing.TB) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.Start(natsserver.Options{Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

// serve starts a registry on ns (a fresh NATS server when nil) in dev
// mode; tune edits its configuration first. It stops when the test ends.
func serve(t testing.TB, ns *natsserver.Server, tune ...func(*registry.Config)) *env {
	t.Helper()
	return start(t, ns, nil, tune...)
}

// serveTLS starts a registry in production mode: mutual TLS with the
// certificates of a fresh PKI, every caller identified by its certificate.
// The env's client calls as "ops", an admin certificate.
func serveTLS(t testing.TB, tune ...func(*registry.Config)) *env {
	t.Helper()
	return start(t, nil, testkit.NewPKI(t), tune...)
}

// dialAs returns a client calling with a certificate named name with OU
// grade ("" for none); production mode only.
func (e *env) dialAs(name, grade string) registryv1.RegistryServiceClient {
	e.t.Helper()
	cc, err := grpcclient.Dial(e.addr, e.pki.ClientTLS(e.t, name, grade))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cc.Close() })
	return registryv1.NewRegistryServiceClient(cc)
}

func start(t testing.TB, ns *natsserver.Server, pki *testkit.PKI, tune ...func(*registry.Config)) *env {
	t.Helper()
	if ns == nil {
		ns = startNATS(t)
	}
	dev := pki == nil
	cfg := registry.Config{WatchBuffer: registry.DefaultWatchBuffer, MaxTools: registry.DefaultMaxTools, MaxTokenTTL: registry.DefaultMaxTokenTTL}
	cfg.NATS.Replicas = 1
	cfg.Security.Dev = dev
	for _, f := range tune {
		f(&cfg)
	}
	nc, err := nats.Connect("", ns.InProcess())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := registry.New(context.Background(), cfg, nc, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	opts := grpcserver.Options{
		Logger: logging.Discard(),
		Guard:  identity.Guard{Auth: identity.Authenticator{Dev: dev}, Policy: registry.Policy},
	}
	var clientTLS *tls.Config
	if !dev {
		opts.TLS = pki.ServerTLS(t, "registry", "service")
		clientTLS = pki.ClientTLS(t, "ops", "admin")
	}
	srv := grpcserver.New(opts)
	svc.Register(srv)
	lis, err := listen.TCP("127.0.0.1:0", dev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	cc, err := grpcclient.Dial(lis.Addr().String(), clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, nats: ns, nc: nc, reg: registryv1.NewRegistryServiceClient(cc), cc: cc, svc: svc, addr: lis.Addr().String(), pki: pki}
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			cc.Close()
			if err := svc.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			nc.Close()
		})
	}
	t.Cleanup(e.stop)
	return e
}

var (
	admin = testkit.As("ops", identity.Admin)
	svc   = testkit.As("mailbox", identity.Service)
)

func host(name string) context.Context { return testkit.As(name, identity.Host) }

// tool is a tool with a trivial object schema.
func tool(name string) *registryv1.Tool {
	return &registryv1.Tool{Name: name, Description: "does " + name, InputSchema: `{"type":"object"}`}
}

func tools(names ...string) []*registryv1.Tool {
	out := make([]*registryv1.Tool, len(names))
	for i, n := range names {
		out[i] = tool(n)
	}
	return out
}

// advertise advertises as client (host grade) and fails the test on error.
func (e *env) advertise(client string, set ...*registryv1.Tool) bool {
	e.t.Helper()
	res, err := e.reg.Advertise(host(client), &registryv1.AdvertiseRequest{Tools: set})
	if err != nil {
		e.t.Fatalf("advertise as %s: %v", client, err)
	}
	return res.Wrote
}

func (e *env) register(ws, client string) bool {
	e.t.Helper()
	res, err := e.reg.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: ws, Client: client})
	if err != nil {
		e.t.Fatalf("register %s in %s: %v", client, ws, err)
	}
	return res.Wrote
}

// presence writes reads into the presence bucket as one mailbox replica
// does, over a NATS connection of its own with a heartbeat of its own:
// closing that connection is the replica dying.
type presence struct {
	t      testing.TB
	nc     *nats.Conn
	leases *kitpresence.Leases
	held   map[string]*kitpresence.Lease
}

var replicas atomic.Int64

// presence returns a writer whose heartbeat outlives it by ttl
// (kitpresence.DefaultTTL when zero).
func (e *env) presence(ttl ...time.Duration) *presence {
	e.t.Helper()
	nc, err := nats.Connect("", e.nats.InProcess())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	// The mailbox declares the bucket; the registry only reads it.
	kv, err := kitpresence.Declare(context.Background(), js, 1)
	if err != nil {
		e.t.Fatal(err)
	}
	d := kitpresence.DefaultTTL
	if len(ttl) > 0 {
		d = ttl[0]
	}
	name := fmt.Sprintf("test-%d", replicas.Add(1))
	beat, err := kitpresence.Beat(context.Background(), js, kv, name, "a test's replica", d)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if !nc.IsClosed() {
			beat.Stop()
		}
	})
	return &presence{t: e.t, nc: nc, leases: kitpresence.NewLeases(kv, name), held: map[string]*kitpresence.Lease{}}
}

// anyone lets an acquire take a read from whichever replica holds it.
func anyone(*kitpresence.Read) (bool, error) { return true, nil }

// send opens or closes client's read.
func (p *presence) send(client string, open bool, session string) {
	p.t.Helper()
	if !open {
		if l := p.held[client]; l != nil {
			_ = l.Release(context.Background())
			delete(p.held, client)
		}
		return
	}
	l, err := p.leases.Acquire(context.Background(), client, session, anyone)
	if err != nil {
		p.t.Fatalf("opening the read of %s: %v", client, err)
	}
	p.held[client] = l
	p.t.Cleanup(func() {
		if p.held[client] == l && !p.nc.IsClosed() {
			_ = l.Release(context.Background())
		}
	})
}

// die closes the writer's connection without releasing anything: its
// heartbeat times out, and its reads with it.
func (p *presence) die() { p.nc.Close() }

// watcher is an open WatchTools stream.
type watcher struct {
	t      testing.TB
	stream grpc.ServerStreamingClient[registryv1.WatchToolsResponse]
}

func (e *env) watch(workspace *string) *watcher {
	e.t.Helper()
	return e.watchAs(admin, e.reg, workspace)
}

// watchAs opens a watch with reg under ctx (which names the caller in dev
// mode).
func (e *env) watchAs(ctx context.Context, reg registryv1.RegistryServiceClient, workspace *string) *watcher {
	e.t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	e.t.Cleanup(cancel)
	stream, err := reg.WatchTools(ctx, &registryv1.WatchToolsRequest{Workspace: workspace})
	if err != nil {
		e.t.Fatal(err)
	}
	return &watcher{t: e.t, stream: stream}
}

// next returns the next event, failing the test after a generous wait.
func (w *watcher) next() *registryv1.WatchToolsResponse {
	w.t.Helper()
	type result struct {
		ev  *registryv1.WatchToolsResponse
		err error
	}
	c := make(chan result, 1)
	go func() { ev, err := w.stream.Recv(); c <- result{ev, err} }()
	select {
	case r := <-c:
		if r.err != nil {
			w.t.Fatalf("watch: %v", r.err)
		}
		return r.ev
	case <-time.After(10 * time.Second):
		w.t.Fatal("watch: no event within 10s")
		return nil
	}
}

// untilSynced reads the snapshot and returns it without the synced marker.
func (w *watcher) untilSynced() []*registryv1.WatchToolsResponse {
	w.t.Helper()
	var out []*registryv1.WatchToolsResponse
	for {
		ev := w.next()
		if ev.GetSynced() != nil {
			return out
		}
		out = append(out, ev)
	}
}

// isEOF reports whether err ends a stream cleanly.
func isEOF(err error) bool { return errors.Is(err, io.EOF) }

// waitPresent waits until the registry shows client's presence as want,
// watching for it rather than polling.
func waitPresent(e *env, client string, want bool) {
	e.t.Helper()
	w := e.watch(nil)
	present := false
	for _, ev := range w.untilSynced() {
		if p := ev.GetPresence(); p != nil && p.Client == client {
			present = p.Present
		}
	}
	for present != want {
		if p := w.next().GetPresence(); p != nil && p.Client == client {
			present = p.Present
		}
	}
}
