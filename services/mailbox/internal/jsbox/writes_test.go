package jsbox_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// TestWhatACallWrites counts the stream writes of a Call answered through
// the replica it waits on: the slot created with its hand-off counted
// (precount.go) and purged as the capture is handed over (two), and the
// queue message (one). Each write is a request the call waits for, and a record the
// server stores (and at R3 replicates), so one more is a cost to notice.
func TestWhatACallWrites(t *testing.T) {
	box, nc := answeringBoxConn(t)
	ctx := context.Background()
	last := func(stream string) uint64 { return lastSeq(t, nc, stream) }
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

// TestWhatAnInvokeAndAWaitingCaptureWrite counts the slot writes of an
// invocation posted to a host reading on the same replica, handed out,
// and answered while its poster's Capture waits there: created with its
// hand-off counted (precount.go), and purged as the capture is handed to
// the waiting Capture (two). A Capture with a retry key has it stored and
// marks it taken, to be asked again (three). Either way the Capture gets
// the capture, read once.
func TestWhatAnInvokeAndAWaitingCaptureWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	box, nc, read := readingOnOneNode(t)
	for _, c := range []struct {
		key    string
		writes uint64
	}{{"", 2}, {"k1", 3}} {
		for i := range 5 {
			before := lastSeq(t, nc, "KV_"+jsbox.SlotBucket)
			id := answerWhileCaptureWaits(t, box, read, c.key)
			if n := lastSeq(t, nc, "KV_"+jsbox.SlotBucket) - before; n != c.writes {
				t.Errorf("call %d (retry key %q) wrote the slot bucket %d times, want %d", i, c.key, n, c.writes)
			}
			if _, err := box.Collect(ctx, "driver", id, 0, ""); status.Code(err) != codes.NotFound {
				t.Errorf("call %d: collected again: %v, want the absent sentence", i, err)
			}
		}
	}
}

// answerWhileCaptureWaits posts an invocation, takes it on read, parks its
// poster's Capture (with retryKey), completes it, and checks the Capture
// got the capture; it returns the invocation's id.
func answerWhileCaptureWaits(tb testing.TB, box *jsbox.Box, read inflight.Read, retryKey string) string {
	tb.Helper()
	ctx := context.Background()
	id := handedOut(tb, box, read)
	got := make(chan *inflight.Capture, 1)
	go func() {
		c, err := box.Collect(ctx, "driver", id, 10*time.Second, retryKey)
		if err != nil {
			tb.Error(err)
		}
		got <- c
	}()
	spin(tb, "the Capture waiting", func() bool { return jsbox.CollectorWaits(box, id) })
	if _, err := box.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "done"}); err != nil {
		tb.Fatal(err)
	}
	if c := <-got; c == nil || c.Stdout != "done" {
		tb.Fatalf("the waiting Capture got %+v, want the capture", c)
	}
	return id
}

// readingOnOneNode is a box on a one-node server of its own, its
// connection, and a read of "laptop" open on it, all ending with the test.
// An Invoke's precount is held a minute, so that a count of writes never
// depends on how soon the test takes the invocation.
func readingOnOneNode(tb testing.TB) (*jsbox.Box, *nats.Conn, inflight.Read) {
	tb.Helper()
	cfg := config(storetest.Defaults, 1)
	cfg.PrecountHold = time.Minute
	return readingWith(tb, cfg)
}

// readingWith is readingOnOneNode with the box configured by cfg.
func readingWith(tb testing.TB, cfg jsbox.Config) (*jsbox.Box, *nats.Conn, inflight.Read) {
	tb.Helper()
	box, nc := oneNodeBoxWith(tb, cfg)
	read, err := box.OpenRead(context.Background(), "laptop")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(read.Close)
	return box, nc, read
}

// handedOut posts an invocation of "driver" to "laptop" and takes it on
// read; it returns its id.
func handedOut(tb testing.TB, box *jsbox.Box, read inflight.Read) string {
	tb.Helper()
	id := postOne(tb, box)
	spin(tb, "the invocation handed out", func() bool {
		got, _ := read.Take(false, storetest.Roomy())
		return len(got) > 0
	})
	return id
}

// spin waits for cond without sleeping (a benchmark times these waits),
// failing after ten seconds.
func spin(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); runtime.Gosched() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s never happened", what)
		}
	}
}

// lastSeq is the sequence of a stream's last write.
func lastSeq(t *testing.T, nc *nats.Conn, stream string) uint64 {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// TestCollectedSlotsLeaveNothingBehind: a slot taken by a Call's hand-over,
// by a collection and by a cancel each leave only a purge marker, which
// JetStream drops a second later: the bucket ends empty instead of holding
// a marker per call for the hour.
func TestCollectedSlotsLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	box, nc, read := readingOnOneNode(t)
	go func() { // the host: answers what it is handed
		for {
			select {
			case <-read.Wake():
			case <-read.Ended():
				return
			}
			invs, _ := read.Take(false, storetest.Roomy())
			for _, inv := range invs {
				_, err := box.Complete(ctx, "laptop", inv.ID, inflight.Capture{Stdout: "done"})
				if err != nil && status.Code(err) != codes.NotFound { // one cancelled first is absent
					t.Error(err)
				}
			}
		}
	}()
	for range 5 {
		if c, err := box.Call(ctx, ctx, inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`}); err != nil || c == nil {
			t.Fatalf("call: %+v %v", c, err)
		}
		if c, err := box.Collect(ctx, "driver", postOne(t, box), 10*time.Second, ""); err != nil || c == nil {
			t.Fatalf("collect: %+v %v", c, err)
		}
		if _, err := box.Cancel(ctx, "driver", postOne(t, box), "", false); err != nil {
			t.Fatalf("cancel: %v", err)
		}
	}
	stream := "KV_" + jsbox.SlotBucket
	if n := lastSeq(t, nc, stream); n < 30 {
		t.Fatalf("the bucket was written %d times, want at least two writes an invocation", n)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the bucket empty", 15*time.Second, func() bool {
		st, err := js.Stream(ctx, stream)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
}

// postOne posts an invocation of "driver" to "laptop"; it returns its id.
func postOne(tb testing.TB, box *jsbox.Box) string {
	tb.Helper()
	id := inflight.NewID()
	if err := box.Post(context.Background(), inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`}); err != nil {
		tb.Fatal(err)
	}
	return id
}
