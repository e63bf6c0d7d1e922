package registry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	kitpresence "github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/kit/testkit"
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
		{name: "presence follows the read key with one event per change", run: func(t *testing.T, e *env) {
			w := e.watch(nil)
			w.expect("synced")
			a := e.presence()
			a.send("box", true, "s1")
			w.expect("presence box true")
			a.send("m1", true, "")
			w.expect("presence m1 true")
			a.send("box", false, "")
			w.expect("presence box false")
		}},
		{name: "a read another replica holds is taken only when the acquire may take it", run: func(t *testing.T, e *env) {
			a, b := e.presence(), e.presence()
			a.send("box", true, "s1")
			refuse := func(*kitpresence.Read) (bool, error) { return false, nil }
			if _, err := b.leases.Acquire(context.Background(), "box", "s2", refuse); !errors.Is(err, kitpresence.ErrHeld) {
				t.Fatalf("a read held by another replica: %v, want ErrHeld", err)
			}
			l, err := b.leases.Acquire(context.Background(), "box", "s1", anyone)
			if err != nil {
				t.Fatalf("the same session on another replica: %v", err)
			}
			defer func() { _ = l.Release(context.Background()) }()
			waitPresent(e, "box", true)
		}},
		{name: "a read whose replica dies goes absent when its heartbeat lapses", run: func(t *testing.T, e *env) {
			w := e.watch(nil)
			w.expect("synced")
			p := e.presence(time.Second)
			p.send("box", true, "s1")
			p.send("car", true, "")
			w.expect("presence box true", "presence car true")
			p.die() // the mailbox replica crashed: nothing is released
			a, b := describe(w.next()), describe(w.next())
			if !(a == "presence box false" && b == "presence car false" || a == "presence car false" && b == "presence box false") {
				t.Fatalf("after the replica died: %q, %q; want both absent", a, b)
			}
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
			if _, err := e.reg.UnregisterClient(admin, &registryv1.UnregisterClientRequest{Workspace: "team", Client: "box"}); err != nil {
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
			if _, err := e.reg.UnregisterClient(admin, &registryv1.UnregisterClientRequest{Workspace: "team", Client: "car"}); err != nil {
				t.Fatal(err)
			}
			e.advertise("car", tool("z"))
			e.register("team", "zz")
			w.expect("unregistered team/car", "registered team/zz")
		}},
		{name: "draining the server ends watch streams", run: func(t *testing.T, e *env) {
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
				testkit.Refused(t, err, codes.Unavailable, "the registry is shutting down; reconnect to another replica or the restarted registry")
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
			tt.run(t, serve(t, nil))
		})
	}
}
