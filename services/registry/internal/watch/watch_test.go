package watch_test

import (
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

func ev(rev uint64) *watch.Event { return &watch.Event{Revision: rev} }

func everyone(*watch.Watcher) bool { return true }

func TestWatcherTakesEventsInOrder(t *testing.T) {
	t.Parallel()
	h := watch.NewHub(10)
	w := h.Subscribe("", watch.Scope{})
	for i := range uint64(3) {
		h.Publish(ev(i+1), everyone)
	}
	select {
	case <-w.Ready():
	default:
		t.Fatal("Ready not signalled after a publish")
	}
	got, lost := w.Take()
	if lost != "" || len(got) != 3 || got[0].Revision != 1 || got[2].Revision != 3 {
		t.Fatalf("Take = %v, %q; want revisions 1..3", got, lost)
	}
	if got, _ := w.Take(); len(got) != 0 {
		t.Fatalf("a second Take returned %d events", len(got))
	}
}

func TestOverflowDropsTheBufferAndSaysSo(t *testing.T) {
	t.Parallel()
	h := watch.NewHub(2)
	w := h.Subscribe("", watch.Scope{})
	for i := range uint64(5) {
		h.Publish(ev(i+1), everyone) // never blocks, however far w lags
	}
	got, lost := w.Take()
	if len(got) != 0 || !strings.Contains(lost, "more than 2 events behind") {
		t.Fatalf("Take after overflow = %v, %q; want no events and the reason", got, lost)
	}
	h.Publish(ev(6), everyone)
	if _, lost := w.Take(); lost == "" {
		t.Fatal("a lost watcher took events again before Reset")
	}
	w.Reset()
	h.Publish(ev(7), everyone)
	if got, lost := w.Take(); lost != "" || len(got) != 1 || got[0].Revision != 7 {
		t.Fatalf("Take after Reset = %v, %q; want revision 7", got, lost)
	}
}

func TestPublishHonoursTheWorkspace(t *testing.T) {
	t.Parallel()
	h := watch.NewHub(10)
	all, ops := h.Subscribe("", watch.Scope{}), h.Subscribe("ops", watch.Scope{})
	h.Publish(ev(1), func(w *watch.Watcher) bool { return w.Workspace == "" || w.Workspace == "ops" })
	h.Publish(ev(2), func(w *watch.Watcher) bool { return w.Workspace == "" })
	if got, _ := all.Take(); len(got) != 2 {
		t.Fatalf("the watcher of everything took %d events, want 2", len(got))
	}
	if got, _ := ops.Take(); len(got) != 1 || got[0].Revision != 1 {
		t.Fatalf("the watcher of ops took %v, want revision 1", got)
	}
}

func TestCloseEndsWatchers(t *testing.T) {
	t.Parallel()
	h := watch.NewHub(10)
	w := h.Subscribe("", watch.Scope{})
	h.Close()
	<-w.Done()
	late := h.Subscribe("", watch.Scope{})
	<-late.Done()
	if h.Len() != 0 {
		t.Fatalf("%d watchers after Close", h.Len())
	}
	h.Close() // twice is fine
}

func TestLoseIfLosesOnlyThoseItNames(t *testing.T) {
	t.Parallel()
	h := watch.NewHub(10)
	alice := h.Subscribe("", watch.Scope{Caller: identity.Identity{Name: "alice", Grade: identity.Driver}})
	bob := h.Subscribe("", watch.Scope{Caller: identity.Identity{Name: "bob", Grade: identity.Driver}})
	h.LoseIf(func(w *watch.Watcher) bool { return w.Scope.Caller.Name == "alice" }, "the grant of alice changed")
	if _, lost := alice.Take(); lost != "the grant of alice changed" {
		t.Fatalf("alice's watcher: lost %q", lost)
	}
	if _, lost := bob.Take(); lost != "" {
		t.Fatalf("bob's watcher was lost too: %q", lost)
	}
}
