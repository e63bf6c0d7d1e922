package jsbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// An Invoke to a client whose host reads through the same replica, and
// keeps up, is posted precounted and holds its precount until its first
// delivery (precount.go). These tests hold the count exact when the hold
// is used, when it runs out, and when a cancel elsewhere spoils it.

// invoking posts an invocation of "driver" to "laptop" on box and returns
// its id.
func invoking(t *testing.T, box *jsbox.Box) string {
	t.Helper()
	id := inflight.NewID()
	if err := box.Post(context.Background(), inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: "{}"}); err != nil {
		t.Fatal(err)
	}
	return id
}

// precounted reports whether the last queue message of "laptop" was
// posted with its hand-off counted.
func precounted(t *testing.T, nc *nats.Conn) bool {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(context.Background(), jsbox.QueueStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(context.Background(), jsbox.QueueSubject("laptop"))
	if err != nil {
		t.Fatal(err)
	}
	return m.Header.Get(jsbox.PrecountedHeader) != ""
}

// handoffs is the hand-off count id's slot states.
func handoffs(t *testing.T, box *jsbox.Box, id string) int32 {
	t.Helper()
	st, err := box.Status(context.Background(), "driver", id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return st.Handoffs
}

// invokedPrecounted is a box on a one-node server with a read of "laptop"
// open, its connection, and an invocation posted to "laptop" precounted,
// its precount held for hold.
func invokedPrecounted(t *testing.T, hold time.Duration) (*jsbox.Box, *nats.Conn, inflight.Read, string) {
	t.Helper()
	cfg := config(storetest.Defaults, 1)
	cfg.PrecountHold = hold
	box, nc, read := readingWith(t, cfg)
	id := invoking(t, box)
	if !precounted(t, nc) {
		t.Fatal("an Invoke to a host reading here, with nothing waiting, was not posted precounted")
	}
	return box, nc, read, id
}

func TestAnInvokeHandedOutAtOnceCountsOneAndWritesNothingToHandIt(t *testing.T) {
	t.Parallel()
	box, nc, read, id := invokedPrecounted(t, time.Minute) // never runs out before the Take
	before := lastSeq(t, nc, "KV_"+jsbox.SlotBucket)
	handedOnceAndCompleted(t, box, read, id, func() {
		if n := lastSeq(t, nc, "KV_"+jsbox.SlotBucket) - before; n != 0 {
			t.Errorf("handing out a precounted Invoke wrote the slot bucket %d times, want 0", n)
		}
		if n := handoffs(t, box, id); n != 1 {
			t.Errorf("the slot counts %d hand-offs, want 1", n)
		}
	})
}

// handedOnceAndCompleted takes id on read, checks its hand-off counts one,
// runs check, and completes it: no hand-off sentence.
func handedOnceAndCompleted(t *testing.T, box *jsbox.Box, read inflight.Read, id string, check func()) {
	t.Helper()
	if inv := handed(t, read, id, 10*time.Second); inv.Delivery != 1 {
		t.Fatalf("the Invoke's first hand-off counts %d, want 1", inv.Delivery)
	}
	check()
	stored, err := box.Complete(context.Background(), "laptop", id, inflight.Capture{Stdout: "ok"})
	if err != nil || stored.Stderr != "" {
		t.Fatalf("completing: %+v, %v; want the capture with no hand-off sentence", stored, err)
	}
}

// Nothing takes the invocation within the hold: its precount is set back,
// and the hand-off after counts one, not two.
func TestAnInvokeNotTakenInTimeHasItsPrecountSetBack(t *testing.T) {
	t.Parallel()
	box, _, read, id := invokedPrecounted(t, 50*time.Millisecond)
	delivered(t, read) // not taken
	for deadline := time.Now().Add(20 * time.Second); handoffs(t, box, id) != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("an Invoke's precount no hand-off used was never set back")
		}
	}
	handedOnceAndCompleted(t, box, read, id, func() {})
}

// A host that has deliveries waiting is not keeping up: an Invoke to it is
// posted as before, and counted when it is handed.
func TestAnInvokeToAHostBehindIsNotPrecounted(t *testing.T) {
	t.Parallel()
	box, nc, read := readingOnOneNode(t)
	first := invoking(t, box)
	delivered(t, read) // not taken: the host is behind
	second := invoking(t, box)
	if precounted(t, nc) {
		t.Fatal("an Invoke to a host with a delivery waiting was posted precounted")
	}
	if n := handoffs(t, box, second); n != 0 {
		t.Fatalf("an Invoke not handed out counts %d hand-offs, want 0", n)
	}
	got := map[string]int32{}
	for deadline := time.After(10 * time.Second); len(got) < 2; {
		invs, _ := read.Take(false, storetest.Roomy())
		for _, inv := range invs {
			got[inv.ID] = inv.Delivery
		}
		if len(got) < 2 {
			select {
			case <-read.Wake():
			case <-deadline:
				t.Fatalf("handed out within 10s: %v; want both invocations", got)
			}
		}
	}
	if got[first] != 1 || got[second] != 1 {
		t.Fatalf("first hand-offs count %v, want 1 each", got)
	}
}

// The poster cancels through another replica before the host's read takes
// the invocation: the cancel's announcement reaches the read's replica,
// and the read must not hand it out on the precount.
func TestAnInvokeCancelledElsewhereBeforeItIsHandedIsNotHandedOut(t *testing.T) {
	t.Parallel()
	replica := precountReplicas(t, 30*time.Second)
	box, _ := replica()
	other, _ := replica()
	ctx := context.Background()
	read, err := box.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	id := invoking(t, box)
	delivered(t, read) // not taken
	if _, err := other.Cancel(ctx, "driver", id, "changed my mind", false); err != nil {
		t.Fatal(err)
	}
	spin(t, "the cancel's announcement reaching the read's replica", func() bool { return jsbox.Spoiled(box, id) })
	invs, _ := read.Take(true, storetest.Roomy())
	for _, inv := range invs {
		if inv.ID == id {
			t.Fatalf("an Invoke cancelled while queued was handed out: %+v", inv)
		}
	}
}
