package jsbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
)

// TestWhatACallWrites counts the stream writes of a Call answered through
// the replica it waits on: the slot created with its hand-off counted
// (precount.go) and purged as the capture is handed over (two), and the
// queue message (one). Each write is a request the call waits for, and a record the
// server stores (and at R3 replicates), so one more is a cost to notice.
func TestWhatACallWrites(t *testing.T) {
	box, nc := answeringBoxConn(t)
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	last := func(stream string) uint64 {
		st, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	call := func() {
		c, err := box.Call(ctx, ctx, inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`})
		if err != nil || c == nil || c.Stdout != `{}` {
			t.Fatalf("call: %+v %v", c, err)
		}
	}
	call() // the queue's anchor is written with the first post, asynchronously:
	for deadline := time.Now().Add(10 * time.Second); last(jsbox.QueueStream) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the queue's anchor was not written after the first post")
		}
		time.Sleep(5 * time.Millisecond)
	}
	const n = 50
	slots, queue := last("KV_"+jsbox.SlotBucket), last(jsbox.QueueStream)
	for range n {
		call()
	}
	if got := last("KV_"+jsbox.SlotBucket) - slots; got != 2*n {
		t.Errorf("%d calls wrote the slot bucket %d times, want %d", n, got, 2*n)
	}
	if got := last(jsbox.QueueStream) - queue; got != n {
		t.Errorf("%d calls wrote the queue %d times, want %d", n, got, n)
	}
}
