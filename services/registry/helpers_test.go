package registry_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/listen"
	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
)

// env is a registry served in-process, in dev mode, on a real loopback
// listener, with a client connection to it.
type env struct {
	t   testing.TB
	dir string
	reg registryv1.RegistryServiceClient
	cc  *grpc.ClientConn
	svc *registry.Service

	stop func()
}

// serve starts a registry on dir (a fresh temp dir when empty); tune edits
// its configuration first. It stops when the test ends.
func serve(t testing.TB, dir string, tune ...func(*registry.Config)) *env {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cfg := registry.Config{DataDir: dir, WatchBuffer: registry.DefaultWatchBuffer, MaxTools: registry.DefaultMaxTools}
	cfg.Security.Dev = true
	for _, f := range tune {
		f(&cfg)
	}
	svc, err := registry.New(cfg, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	srv := grpcserver.New(grpcserver.Options{
		Logger: logging.Discard(),
		Guard:  identity.Guard{Auth: identity.Authenticator{Dev: true}, Policy: registry.Policy},
	})
	svc.Register(srv)
	lis, err := listen.TCP("127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	cc, err := grpcclient.Dial(lis.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, reg: registryv1.NewRegistryServiceClient(cc), cc: cc, svc: svc}
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
		})
	}
	t.Cleanup(e.stop)
	return e
}

var (
	op  = testkit.As("ops", identity.Operator)
	svc = testkit.As("mailbox", identity.Service)
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
	res, err := e.reg.RegisterClient(op, &registryv1.RegisterClientRequest{Workspace: ws, Client: client})
	if err != nil {
		e.t.Fatalf("register %s in %s: %v", client, ws, err)
	}
	return res.Wrote
}

// presence is an open ReportPresence stream.
type presence struct {
	t      testing.TB
	stream grpc.ClientStreamingClient[registryv1.ReportPresenceRequest, registryv1.ReportPresenceResponse]
	cancel context.CancelFunc
}

func (e *env) presence() *presence {
	e.t.Helper()
	ctx, cancel := context.WithCancel(svc)
	stream, err := e.reg.ReportPresence(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cancel)
	return &presence{t: e.t, stream: stream, cancel: cancel}
}

func (p *presence) send(client string, open bool, session string) {
	p.t.Helper()
	m := &registryv1.ReportPresenceRequest{Client: client, Open: open}
	if session != "" {
		m.Session = proto.String(session)
	}
	if err := p.stream.Send(m); err != nil {
		p.t.Fatal(err)
	}
}

// watcher is an open WatchTools stream.
type watcher struct {
	t      testing.TB
	stream grpc.ServerStreamingClient[registryv1.WatchToolsResponse]
}

func (e *env) watch(workspace *string) *watcher {
	e.t.Helper()
	ctx, cancel := context.WithCancel(op)
	e.t.Cleanup(cancel)
	stream, err := e.reg.WatchTools(ctx, &registryv1.WatchToolsRequest{Workspace: workspace})
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
