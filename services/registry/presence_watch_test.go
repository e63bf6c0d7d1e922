package registry_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
)

// describe is an event in a short form tests compare.
func describe(ev *registryv1.WatchToolsResponse) string {
	switch c := ev.Change.(type) {
	case *registryv1.WatchToolsResponse_Advertised:
		return fmt.Sprintf("advertised %s [%s]", c.Advertised.Client, toolNames(c.Advertised.Tools))
	case *registryv1.WatchToolsResponse_Registered:
		return fmt.Sprintf("registered %s/%s", c.Registered.Workspace, c.Registered.Client)
	case *registryv1.WatchToolsResponse_Unregistered:
		return fmt.Sprintf("unregistered %s/%s", c.Unregistered.Workspace, c.Unregistered.Client)
	case *registryv1.WatchToolsResponse_Presence:
		return fmt.Sprintf("presence %s %v", c.Presence.Client, c.Presence.Present)
	case *registryv1.WatchToolsResponse_Synced:
		return "synced"
	case *registryv1.WatchToolsResponse_Resync:
		return "resync"
	}
	return "?"
}

// expect reads len(want) events and compares them in order, checking that
// revisions never go down.
func (w *watcher) expect(want ...string) {
	w.t.Helper()
	var last uint64
	for i, d := range want {
		ev := w.next()
		if got := describe(ev); got != d {
			w.t.Fatalf("event %d = %q, want %q", i, got, d)
		}
		if ev.Revision < last {
			w.t.Fatalf("event %d (%s) has revision %d after %d", i, d, ev.Revision, last)
		}
		last = ev.Revision
	}
}

// TestPresenceAndWatchRules covers presence reports and the watch stream.
func TestPresenceAndWatchRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{name: "presence is a refcount across streams with one event per 0↔1 change", run: func(t *testing.T, e *env) {
			w := e.watch(nil)
			w.expect("synced")
			a, b := e.presence(), e.presence()
			a.send("box", true, "")
			w.expect("presence box true")
			// Messages of one stream are applied in order, so a marker
			// opened after a message shows that the message was applied.
			b.send("box", true, "")
			b.send("m1", true, "")
			w.expect("presence m1 true")
			a.send("box", false, "")
			a.send("m2", true, "")
			w.expect("presence m2 true") // box stayed present: b holds a read
			b.send("box", false, "")
			w.expect("presence box false")
			// A stream closed cleanly is answered, and still withdraws.
			if _, err := b.stream.CloseAndRecv(); err != nil {
				t.Fatalf("closing the presence stream: %v", err)
			}
			w.expect("presence m1 false")
		}},
		{name: "reports about identities that cannot be clients change nothing", run: func(t *testing.T, e *env) {
			w := e.watch(nil)
			w.expect("synced")
			p := e.presence()
			p.send("Alice Smith", true, "")
			p.send("box", true, "")
			w.expect("presence box true")
		}},
		{name: "opening and closing reads updates last_seen", run: func(t *testing.T, e *env) {
			e.register("team", "box")
			before := time.Now()
			p := e.presence()
			p.send("box", true, "")
			waitPresent(e, "box", true)
			if seen := getClient(t, e, "box").Row.LastSeen.AsTime(); seen.Before(before) {
				t.Fatalf("last_seen %v is before the read opened at %v", seen, before)
			}
		}},
		{name: "a stream that ends withdraws everything it opened", run: func(t *testing.T, e *env) {
			w := e.watch(nil)
			w.expect("synced")
			p := e.presence()
			p.send("box", true, "s1")
			p.send("box", true, "s2")
			p.send("car", true, "")
			w.expect("presence box true", "presence car true")
			p.cancel() // the mailbox crashed
			a, b := describe(w.next()), describe(w.next())
			if !(a == "presence box false" && b == "presence car false" || a == "presence car false" && b == "presence box false") {
				t.Fatalf("after the stream ended: %q, %q; want both absent", a, b)
			}
		}},
		{name: "a close without a matching open from the same stream is ignored", run: func(t *testing.T, e *env) {
			w := e.watch(nil)
			w.expect("synced")
			a, b := e.presence(), e.presence()
			a.send("box", true, "s1")
			w.expect("presence box true")
			b.send("box", false, "s1") // not b's read
			b.send("mb", true, "")
			w.expect("presence mb true")
			a.send("box", false, "s2") // not this session
			a.send("box", false, "")   // nor a read without one
			a.send("ghost", false, "")
			a.send("ma", true, "")
			w.expect("presence ma true")
			a.send("box", false, "s1")
			w.expect("presence box false")
		}},
		{name: "the serving guard lets the set in force and the holding session through", run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"))
			p := e.presence()
			p.send("box", true, "s1")
			waitPresent(e, "box", true)
			if e.advertise("box", tool("grep")) {
				t.Fatal("re-presenting the set in force wrote")
			}
			res, err := e.reg.Advertise(host("box"), &registryv1.AdvertiseRequest{Tools: tools("ls"), Session: proto.String("s1")})
			if err != nil || !res.Wrote {
				t.Fatalf("advertise from the holding session: %v, %v", res, err)
			}
			p.send("box", false, "s1")
			waitPresent(e, "box", false)
			if !e.advertise("box", tool("cat")) {
				t.Fatal("a different set after the read closed did not write")
			}
		}},
		{name: "the watch stream sends a snapshot then every change in order", run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"))
			e.register("team", "box")
			p := e.presence()
			p.send("car", true, "")
			waitPresent(e, "car", true)
			w := e.watch(nil)
			w.expect("advertised box [grep]", "registered default/box", "registered team/box", "presence car true", "synced")
			e.advertise("box", tool("ls"))
			e.advertise("dan", tool("x"))
			if _, err := e.reg.UnregisterClient(op, &registryv1.UnregisterClientRequest{Workspace: "team", Client: "box"}); err != nil {
				t.Fatal(err)
			}
			e.advertise("box")
			p.send("car", false, "")
			w.expect("advertised box [ls]", "advertised dan [x]", "registered default/dan", "unregistered team/box", "advertised box []", "presence car false")
		}},
		{name: "a workspace watcher sees its members only and learns a new member's state", run: func(t *testing.T, e *env) {
			e.advertise("box", tool("grep"))
			e.advertise("car", tool("x"))
			p := e.presence()
			p.send("car", true, "s1")
			waitPresent(e, "car", true)
			w := e.watch(proto.String("team")) // nobody created it yet: fine
			w.expect("synced")
			e.advertise("box", tool("ls")) // not a member: not sent
			e.register("team", "car")
			w.expect("registered team/car", "advertised car [x]", "presence car true")
			if _, err := e.reg.Advertise(host("car"), &registryv1.AdvertiseRequest{Tools: tools("y"), Session: proto.String("s1")}); err != nil {
				t.Fatal(err)
			}
			p.send("car", false, "s1")
			w.expect("advertised car [y]", "presence car false")
			if _, err := e.reg.UnregisterClient(op, &registryv1.UnregisterClientRequest{Workspace: "team", Client: "car"}); err != nil {
				t.Fatal(err)
			}
			e.advertise("car", tool("z"))
			e.register("team", "zz")
			w.expect("unregistered team/car", "registered team/zz")
		}},
		{name: "draining the server ends watch and presence streams", run: func(t *testing.T, e *env) {
			w := e.watch(nil)
			w.expect("synced")
			p := e.presence()
			p.send("box", true, "")
			w.expect("presence box true")
			done := make(chan struct{})
			go func() { e.stop(); close(done) }()
			if _, err := w.stream.Recv(); err == nil {
				t.Fatal("the watch stream outlived the drain")
			} else {
				testkit.Refused(t, err, codes.Unavailable, "the registry is shutting down; reconnect to the restarted registry")
			}
			if _, err := p.stream.CloseAndRecv(); err == nil {
				t.Fatal("the presence stream outlived the drain")
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("shutdown waited on long streams")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, serve(t, "", func(c *registry.Config) {}))
		})
	}
}
