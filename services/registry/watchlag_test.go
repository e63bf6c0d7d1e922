package registry_test

import (
	"fmt"
	"strings"
	"testing"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/registry"
)

// TestASlowWatcherIsCutOffAndCatchesUp: a watcher that stops reading is
// not waited for; past its bound it is told to resync, with the sentence
// naming the bound, and the fresh snapshot that follows holds the state.
func TestASlowWatcherIsCutOffAndCatchesUp(t *testing.T) {
	t.Parallel()
	const buffer = 8
	e := serve(t, nil, func(c *registry.Config) { c.WatchBuffer = buffer })
	w := e.watch(nil)
	w.untilSynced()
	// Nothing reads w while big sets are published: gRPC's flow-control
	// window (16 MiB at most) fills, then the watcher's buffer of 8 events.
	pad := strings.Repeat("p", 1<<20)
	const clients = 3 * buffer
	for i := range clients {
		e.advertise(fmt.Sprintf("c%02d", i), &registryv1.Tool{Name: "t", Description: pad, InputSchema: `{"type":"object"}`})
	}
	want := fmt.Sprintf("this watcher fell more than %d events behind; its buffer was dropped", buffer)
	for {
		ev := w.next()
		if r := ev.GetResync(); r != nil {
			if r.Reason != want {
				t.Fatalf("resync reason %q, want %q", r.Reason, want)
			}
			break
		}
	}
	seen := map[string]bool{}
	for _, ev := range w.untilSynced() {
		if a := ev.GetAdvertised(); a != nil {
			seen[a.Client] = true
		}
	}
	if len(seen) != clients {
		t.Fatalf("the snapshot after the resync holds %d clients' sets, want %d", len(seen), clients)
	}
}
