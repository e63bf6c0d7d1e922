package jsbox_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// BenchmarkRoundTrip is one invocation through the JetStream box alone —
// post, hand-off to a parked read, complete, await — with no gRPC in the
// way: what the store costs a call.
func BenchmarkRoundTrip(b *testing.B) {
	box := answeringBox(b)
	ctx := context.Background()
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

// BenchmarkCall is the same round trip as the service's Call makes it
// (listening before the post), one call at a time.
func BenchmarkCall(b *testing.B) {
	box := answeringBox(b)
	for b.Loop() {
		call(b, box)
	}
}

// BenchmarkCall64 is Call with 64 callers at once: what the store lets
// through when the machine is busy, as the bench's throughput step asks.
func BenchmarkCall64(b *testing.B) {
	box := answeringBox(b)
	b.SetParallelism(64 / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			call(b, box)
		}
	})
}

// BenchmarkInvokeThenCapture is the act path's round trip through the box
// alone: an Invoke (Post) to a host reading on this replica that answers
// at once, then its poster's waiting Capture, one at a time.
func BenchmarkInvokeThenCapture(b *testing.B) {
	box := answeringBox(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		id := inflight.NewID()
		if err := box.Post(ctx, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: `{"n":1}`}); err != nil {
			b.Fatal(err)
		}
		if c, err := box.Collect(ctx, "driver", id, 10*time.Second, ""); err != nil || c == nil {
			b.Fatal(c, err)
		}
	}
}

// BenchmarkAWaitingCapture is an invocation answered while its poster's
// Capture waits on the same replica: handed over with the slot's purge,
// and (with a retry key, which keeps the slot) stored, then taken.
func BenchmarkAWaitingCapture(b *testing.B) {
	for _, c := range []struct{ name, key string }{{"handed_over", ""}, {"stored_then_taken", "k"}} {
		b.Run(c.name, func(b *testing.B) {
			box, _, read := readingOnOneNode(b)
			for b.Loop() {
				answerWhileCaptureWaits(b, box, read, c.key)
			}
		})
	}
}

func call(b *testing.B, box *jsbox.Box) {
	ctx := context.Background()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := box.Call(ctx, wctx, inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "driver", Tool: "echo", Input: `{"n":1}`})
	if err != nil || c == nil {
		b.Error(c, err)
	}
}

// answeringBox is a box on a NATS server of its own, with a read of
// "laptop" whose host answers each invocation at once with its input.
func answeringBox(b testing.TB) *jsbox.Box {
	box, _ := answeringBoxConn(b)
	return box
}

// answeringBoxConn is answeringBox and its connection to NATS.
func answeringBoxConn(b testing.TB) (*jsbox.Box, *nats.Conn) {
	ctx := context.Background()
	// Acks are processed a little after the calls they end return, and
	// the queue counts what they have not removed yet: room for 64 callers.
	bounds := storetest.Defaults
	bounds.MaxQueued = 1000
	box, nc := oneNodeBox(b, bounds)
	r, err := box.OpenRead(ctx, "laptop")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	go func() {
		for {
			select {
			case <-r.Wake():
			case <-r.Ended():
				return
			}
			invs, _ := r.Take(true, storetest.Roomy())
			for _, inv := range invs {
				go func() {
					if _, err := box.Complete(ctx, "laptop", inv.ID, inflight.Capture{Stdout: inv.Input}); err != nil {
						b.Error(err)
					}
				}()
			}
		}
	}()
	return box, nc
}

// BenchmarkACaptureAfterItsAnswer is an invocation posted, handed out and
// answered, then collected by its poster once the answer was announced:
// the act path whose host answers before the driver asks (recentAnswers).
func BenchmarkACaptureAfterItsAnswer(b *testing.B) {
	ctx := context.Background()
	box, nc, read := readingOnOneNode(b)
	for b.Loop() {
		id := handedOut(b, box, read)
		announced := make(chan *nats.Msg, 1)
		sub, err := nc.ChanSubscribe("sb.done."+id, announced)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := box.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "done"}); err != nil {
			b.Fatal(err)
		}
		<-announced
		_ = sub.Unsubscribe()
		if c, err := box.Collect(ctx, "driver", id, 0, ""); err != nil || c == nil {
			b.Fatal(c, err)
		}
	}
}

// BenchmarkPostWithReadsOpen is Post to one of n clients whose reads are
// open here and take nothing, as hosts busy with earlier calls: each post
// is delivered to another client's consumer. With the consumers' state on
// disk, each such delivery cost JetStream a state file written
// (consumer.go).
func BenchmarkPostWithReadsOpen(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			cfg := config(storetest.Defaults, 1)
			cfg.MaxClients, cfg.MaxQueued, cfg.MaxSlots = n, 1<<20, 1<<20
			box, _ := oneNodeBoxWith(b, cfg)
			for i := range n {
				r, err := box.OpenRead(ctx, fmt.Sprint("host-", i))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(r.Close)
			}
			for i := 0; b.Loop(); i++ {
				p := inflight.Post{ID: inflight.NewID(), Client: fmt.Sprint("host-", i%n), Poster: "driver", Tool: "echo", Input: `{}`}
				if err := box.Post(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
