package bridge

import (
	"testing"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// A watcher that falls behind is never waited for: what does not fit its
// buffer is lost and marked, so its stream sends one RESYNC.
func TestASlowCatalogWatcherIsToldToListAgain(t *testing.T) {
	t.Parallel()
	h := newCatalogHub()
	sub, cancel := h.subscribe()
	defer cancel()
	for range watchBuffer + 5 {
		h.publish(bridgev1.CatalogChange_CATALOG_CHANGE_RESOURCES, "conf")
	}
	if len(sub.events) != watchBuffer || !sub.lost.Load() || len(sub.wake) != 1 {
		t.Fatalf("buffered %d, lost %v, woken %d; want %d, true, 1", len(sub.events), sub.lost.Load(), len(sub.wake), watchBuffer)
	}
	cancel()
	h.publish(bridgev1.CatalogChange_CATALOG_CHANGE_PROMPTS, "conf")
	if len(sub.events) != watchBuffer {
		t.Fatal("a closed watcher was still sent events")
	}
}
