package jsbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/natsserver"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// BenchmarkRoundTrip is one invocation through the JetStream box alone —
// post, hand-off to a parked read, complete, await — with no gRPC in the
// way: what the store costs a call.
func BenchmarkRoundTrip(b *testing.B) {
	s, err := natsserver.Start(natsserver.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := nats.Connect("", s.InProcess())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	box, err := jsbox.New(ctx, nc, config(storetest.Defaults, 1), logging.Discard())
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close()
	r, err := box.OpenRead(ctx, "laptop")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	go func() {
		for {
			select {
			case <-r.Wake():
			case <-r.Ended():
				return
			}
			invs, _ := r.Take(true, storetest.Roomy())
			for _, inv := range invs {
				if _, err := box.Complete(ctx, "laptop", inv.ID, inflight.Capture{Stdout: inv.Input}); err != nil {
					b.Error(err)
				}
			}
		}
	}()
	for b.Loop() {
		id := inflight.NewID()
		if err := box.Post(ctx, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: `{"n":1}`}); err != nil {
			b.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := box.Await(wctx, "driver", id)
		cancel()
		if err != nil || c == nil {
			b.Fatal(c, err)
		}
	}
}
