package registry_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/services/registry"
)

// view is what a watcher knows after applying the events it was sent.
type view struct {
	tools   map[string]string // client → its set, as comparable text
	members map[string]bool   // "workspace/client"
	present map[string]bool
	syncing bool // inside a snapshot: between its start and synced
	resyncs int
}

func newView() *view {
	return &view{tools: map[string]string{}, members: map[string]bool{}, present: map[string]bool{}, syncing: true}
}

func setText(ts []*registryv1.Tool) string {
	var b strings.Builder
	for _, t := range ts {
		m, _ := proto.MarshalOptions{Deterministic: true}.Marshal(t)
		fmt.Fprintf(&b, "%x;", m)
	}
	return b.String()
}

// apply applies one event; it reports whether the event was the marker
// registration that ends the test, seen outside a snapshot.
func (v *view) apply(ev *registryv1.WatchToolsResponse, marker string) bool {
	switch c := ev.Change.(type) {
	case *registryv1.WatchToolsResponse_Resync:
		*v = view{tools: map[string]string{}, members: map[string]bool{}, present: map[string]bool{}, syncing: true, resyncs: v.resyncs + 1}
	case *registryv1.WatchToolsResponse_Synced:
		v.syncing = false
		return v.members[marker]
	case *registryv1.WatchToolsResponse_Advertised:
		if len(c.Advertised.Tools) == 0 {
			delete(v.tools, c.Advertised.Client)
		} else {
			v.tools[c.Advertised.Client] = setText(c.Advertised.Tools)
		}
	case *registryv1.WatchToolsResponse_Registered:
		key := c.Registered.Workspace + "/" + c.Registered.Client
		v.members[key] = true
		return key == marker && !v.syncing
	case *registryv1.WatchToolsResponse_Unregistered:
		delete(v.members, c.Unregistered.Workspace+"/"+c.Unregistered.Client)
	case *registryv1.WatchToolsResponse_Presence:
		if c.Presence.Present {
			v.present[c.Presence.Client] = true
		} else {
			delete(v.present, c.Presence.Client)
		}
	}
	return false
}

// forget drops a client a workspace watcher no longer follows.
func (v *view) forget(client string) {
	delete(v.tools, client)
	delete(v.present, client)
}

// follow reads a stream into a view until the marker; a workspace watcher
// forgets clients that leave its workspace.
func follow(stream grpc.ServerStreamingClient[registryv1.WatchToolsResponse], ws, marker string) (*view, error) {
	v := newView()
	for {
		ev, err := stream.Recv()
		if err != nil {
			return v, err
		}
		if u := ev.GetUnregistered(); u != nil && ws != "" {
			v.forget(u.Client)
		}
		if v.apply(ev, marker) {
			return v, nil
		}
	}
}

// TestConcurrentAdvertisersAndWatchers has hundreds of clients changing
// their sets, memberships and presence while watchers stream, one of them
// too slow to keep up. Every watcher's final view must equal the
// registry's final state.
func TestConcurrentAdvertisersAndWatchers(t *testing.T) {
	t.Parallel()
	const clients, rounds = 300, 4
	e := serve(t, nil, func(c *registry.Config) { c.WatchBuffer = 64 })
	client := func(i int) string { return fmt.Sprintf("c%03d", i) }
	session := func(i int) string { return "s-" + client(i) }
	marker := "ws-a/zz-marker"
	e.register("sentinel", "zz-sent-a")
	e.register("sentinel", "zz-sent-b")

	type result struct {
		name string
		v    *view
		err  error
	}
	results := make(chan result, 4)
	watchOn := func(name string, reg registryv1.RegistryServiceClient, ws *string, release <-chan struct{}) {
		// A watcher that never sees the marker (an event lost on the way)
		// fails the test here rather than hanging it.
		ctx, cancel := context.WithTimeout(admin, time.Minute)
		t.Cleanup(cancel)
		stream, err := reg.WatchTools(ctx, &registryv1.WatchToolsRequest{Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		wsName := ""
		if ws != nil {
			wsName = *ws
		}
		go func() {
			<-release
			v, err := follow(stream, wsName, marker)
			results <- result{name, v, err}
		}()
	}
	now := make(chan struct{})
	close(now)
	watchOn("all-1", e.reg, nil, now)
	watchOn("all-2", e.reg, nil, now)
	watchOn("ws-a", e.reg, proto.String("ws-a"), now)
	// The slow watcher reads nothing until the advertisers are done, over
	// a connection whose flow-control windows stay small, so its stream
	// backs up into its bounded buffer and overflows.
	slowConn, err := grpcclient.Dial(e.cc.Target(), nil, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer slowConn.Close()
	release := make(chan struct{})
	watchOn("slow", registryv1.NewRegistryServiceClient(slowConn), nil, release)

	// Presence: replica a opens and closes reads of c000–c049, replica b
	// holds reads of c050–c079 to the end; a dies at the end, and its
	// reads time out.
	pa, pb := e.presence(2*time.Second), e.presence()
	var wg sync.WaitGroup
	errs := make(chan error, clients+2)
	report := func(p *presence, i int, open bool) bool {
		if !open {
			_ = p.held[client(i)].Release(context.Background())
			return true
		}
		l, err := p.leases.Acquire(context.Background(), client(i), session(i), anyone)
		if err != nil {
			errs <- fmt.Errorf("presence of %s: %w", client(i), err)
			return false
		}
		p.held[client(i)] = l
		return true
	}
	wg.Go(func() {
		for i := range 50 {
			if !report(pa, i, true) {
				return
			}
		}
		for i := 0; i < 50; i += 2 {
			if !report(pa, i, false) {
				return
			}
		}
	})
	wg.Go(func() {
		for i := 50; i < 80; i++ {
			if !report(pb, i, true) {
				return
			}
		}
	})
	pad := strings.Repeat("d", 1000) // big events fill the slow stream sooner
	for i := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			ctx := host(client(i))
			for r := range rounds {
				var set []*registryv1.Tool
				for k := range rng.IntN(4) {
					set = append(set, &registryv1.Tool{Name: fmt.Sprintf("t%d-%d", r, k), Description: pad, InputSchema: `{"type":"object"}`})
				}
				req := &registryv1.AdvertiseRequest{Tools: set}
				if i < 80 {
					req.Session = proto.String(session(i))
				}
				if err := retryUnavailable(func() error { _, err := e.reg.Advertise(ctx, req); return err }); err != nil {
					errs <- fmt.Errorf("advertise as %s: %w", client(i), err)
					return
				}
				ws := []string{"ws-a", "ws-b"}[rng.IntN(2)]
				var err error
				if rng.IntN(3) == 0 {
					err = retryUnavailable(func() error {
						_, err := e.reg.UnregisterClient(admin, &registryv1.UnregisterClientRequest{Workspace: ws, Client: client(i)})
						return err
					})
				} else {
					err = retryUnavailable(func() error {
						_, err := e.reg.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: ws, Client: client(i)})
						return err
					})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Replica a dies (its reads time out); b stays. Sentinels show that
	// each replica's reads reached the registry before the marker.
	pb.send("zz-sent-b", true, "")
	pa.send("zz-sent-a", true, "")
	waitPresent(e, "zz-sent-b", true)
	waitPresent(e, "zz-sent-a", true)
	pa.die()
	waitPresent(e, "zz-sent-a", false)
	for i := 1; i < 50; i += 2 {
		waitPresent(e, client(i), false)
	}
	e.register("ws-a", "zz-marker")
	close(release)

	all, wsA := finalState(t, e, clients, client)
	for range 4 {
		r := <-results
		if r.err != nil {
			t.Fatalf("watcher %s: %v", r.name, r.err)
		}
		want := all
		if r.name == "ws-a" {
			want = wsA
		}
		if !maps.Equal(r.v.tools, want.tools) || !maps.Equal(r.v.members, want.members) || !maps.Equal(r.v.present, want.present) {
			t.Errorf("watcher %s's view differs from the registry: tools %d vs %d, members %d vs %d, present %d vs %d",
				r.name, len(r.v.tools), len(want.tools), len(r.v.members), len(want.members), len(r.v.present), len(want.present))
		}
		if r.name == "slow" && r.v.resyncs == 0 {
			t.Errorf("the slow watcher was never told to resync")
		}
		t.Logf("watcher %s: %d clients with sets, %d memberships, %d present, %d resyncs", r.name, len(r.v.tools), len(r.v.members), len(r.v.present), r.v.resyncs)
	}
}

// finalState reads the registry's state back through its read RPCs: every
// client for the watchers of everything, and workspace ws-a.
func finalState(t *testing.T, e *env, clients int, client func(int) string) (all, wsA *view) {
	all, wsA = newView(), newView()
	names := []string{"zz-marker", "zz-sent-a", "zz-sent-b"}
	for i := range clients {
		names = append(names, client(i))
	}
	for _, c := range names {
		res, err := e.reg.GetClient(admin, &registryv1.GetClientRequest{Client: c})
		if status.Code(err) == codes.NotFound {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Row.Tools) > 0 {
			all.tools[c] = setText(res.Row.Tools)
		}
		for _, ws := range res.Workspaces {
			all.members[ws+"/"+c] = true
		}
		if res.Row.Present {
			all.present[c] = true
		}
	}
	for _, row := range listClients(t, e, "ws-a") {
		wsA.members["ws-a/"+row.Client] = true
		if len(row.Tools) > 0 {
			wsA.tools[row.Client] = setText(row.Tools)
		}
		if row.Present {
			wsA.present[row.Client] = true
		}
	}
	return all, wsA
}

// retryUnavailable does what the registry's Unavailable refusal asks of a
// caller: try again. A starved machine (the race detector, two packages'
// tests at once) can leave a NATS write unanswered past the registry's
// bound; the test is about what concurrent writers and watchers see, so a
// write is retried, a few times, as any client would.
func retryUnavailable(f func() error) error {
	var err error
	for range 5 {
		if err = f(); status.Code(err) != codes.Unavailable {
			return err
		}
	}
	return err
}
