package watch_test

import (
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

func ev(rev uint64) *watch.Event { return &watch.Event{Revision: rev} }

func everyone(string) bool { return true }

func TestWatcherTakesEventsInOrder(t *testing.T) {
	t.Parallel()
	h := watch.NewHub(10)
	w := h.Subscribe("")
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
	w := h.Subscribe("")
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
	all, ops := h.Subscribe(""), h.Subscribe("ops")
	h.Publish(ev(1), func(ws string) bool { return ws == "" || ws == "ops" })
	h.Publish(ev(2), func(ws string) bool { return ws == "" })
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
	w := h.Subscribe("")
	h.Close()
	<-w.Done()
	late := h.Subscribe("")
	<-late.Done()
	if h.Len() != 0 {
		t.Fatalf("%d watchers after Close", h.Len())
	}
	h.Close() // twice is fine
}
