package jsbox_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
)

// TestACollectionAfterItsAnswerSkipsTheRead: the poster's Capture that
// comes after its host answered takes the slot at the announced revision
// without reading it; someone else's is refused as before and leaves the
// answer to its poster; and one whose slot changed since the announcement
// (taken by a cancel here) reads the slot and is told it is gone. Read once
// holds throughout.
func TestACollectionAfterItsAnswerSkipsTheRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	box, nc, read := readingOnOneNode(t)
	reads := countSlotReads(t, nc)
	answered := func() string {
		id := handedOut(t, box, read)
		if _, err := box.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "done"}); err != nil {
			t.Fatal(err)
		}
		spin(t, "the answer kept", func() bool { return jsbox.Recalls(box, id) })
		return id
	}

	id := answered()
	if _, err := box.Collect(ctx, "intruder", id, 0, ""); status.Code(err) != codes.NotFound {
		t.Fatalf("someone else's collection: %v, want the absent sentence", err)
	}
	reads.since(t)
	c, err := box.Collect(ctx, "driver", id, 0, "")
	if err != nil || c == nil || c.Stdout != "done" {
		t.Fatalf("the poster's collection: %+v %v, want the capture", c, err)
	}
	if n := reads.since(t); n != 0 {
		t.Errorf("the poster's collection read the slot %d times, want none", n)
	}
	if _, err := box.Collect(ctx, "driver", id, 0, ""); status.Code(err) != codes.NotFound {
		t.Errorf("collected again: %v, want the absent sentence", err)
	}

	id = answered()
	if got, err := box.Cancel(ctx, "driver", id, "", false); err != nil || got.Stdout != "done" {
		t.Fatalf("cancelling the answered invocation: %+v %v, want its capture", got, err)
	}
	reads.since(t)
	if _, err := box.Collect(ctx, "driver", id, 0, ""); status.Code(err) != codes.NotFound {
		t.Errorf("collected after the cancel took it: %v, want the absent sentence", err)
	}
	if n := reads.since(t); n != 1 {
		t.Errorf("the collection of a slot changed since its answer read it %d times, want once", n)
	}
}

// slotReads counts the requests that read a slot from the bucket (a
// direct get, or the stream's message get at R3) sent on nc, the box's own
// connection: each request's copy reaches the channel before the reply to
// a flush sent after it, so after flush the count is exact.
type slotReads struct {
	nc *nats.Conn
	ch chan *nats.Msg
}

func countSlotReads(t *testing.T, nc *nats.Conn) *slotReads {
	t.Helper()
	r := &slotReads{nc: nc, ch: make(chan *nats.Msg, 1024)}
	for _, subject := range []string{"$JS.API.DIRECT.GET.KV_" + jsbox.SlotBucket + ".>", "$JS.API.STREAM.MSG.GET.KV_" + jsbox.SlotBucket} {
		sub, err := nc.ChanSubscribe(subject, r.ch)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	r.since(t)
	return r
}

// since returns how many reads were sent since it was last asked.
func (r *slotReads) since(t *testing.T) int {
	t.Helper()
	if err := r.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	n := len(r.ch)
	for range n {
		<-r.ch
	}
	return n
}
