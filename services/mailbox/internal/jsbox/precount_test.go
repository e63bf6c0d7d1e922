package jsbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/natsserver"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// A Call to a client whose host reads through the same replica counts its
// first hand-off as it posts (precount.go). These tests hold the count
// exact on the paths where that precount goes unused, and one high only
// where a replica died holding the delivery.

// precountReplicas starts a NATS server and returns a function making
// replicas on it (each a box and its connection) with the given lease.
func precountReplicas(t *testing.T, lease time.Duration) func() (*jsbox.Box, *nats.Conn) {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return func() (*jsbox.Box, *nats.Conn) {
		nc, err := nats.Connect("", s.InProcess())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		cfg := config(storetest.Bounds{TTL: time.Hour, MaxQueued: 100, MaxCaptureBytes: 1 << 20}, 1)
		cfg.Lease = lease
		cfg.PrecountHold = time.Minute // an Invoke's hold never runs out under a test's feet
		box, err := jsbox.New(context.Background(), nc, cfg, logging.Discard())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(box.Close)
		return box, nc
	}
}

// reading is a replica on a server of its own with a read of "laptop"
// open (closed when the test ends, if the test has not).
func reading(t *testing.T) (*jsbox.Box, inflight.Read) {
	t.Helper()
	box, _ := precountReplicas(t, 30*time.Second)()
	read, err := box.OpenRead(context.Background(), "laptop")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(read.Close)
	return box, read
}

// delivered waits until read has a delivery it has not handed out.
func delivered(t *testing.T, read inflight.Read) {
	t.Helper()
	select {
	case <-read.Wake():
	case <-time.After(10 * time.Second):
		t.Fatal("the Call's invocation was not delivered to the read")
	}
}

// calling starts a Call of a fresh id on box and returns the id, the
// function ending its wait, and the channel its outcome arrives on.
func calling(box *jsbox.Box) (string, context.CancelFunc, <-chan callOutcome) {
	id := inflight.NewID()
	wait, stop := context.WithCancel(context.Background())
	out := make(chan callOutcome, 1)
	go func() {
		c, err := box.Call(context.Background(), wait, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: "{}"})
		out <- callOutcome{c, err}
	}()
	return id, stop, out
}

type callOutcome struct {
	c   *inflight.Capture
	err error
}

// handed waits until read hands out id and returns it as handed.
func handed(t *testing.T, read inflight.Read, id string, within time.Duration) inflight.Invocation {
	t.Helper()
	inv, err := handedWithin(read, id, within)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// handedWithin is handed for any goroutine: it says what went wrong.
func handedWithin(read inflight.Read, id string, within time.Duration) (inflight.Invocation, error) {
	deadline := time.After(within)
	for {
		invs, _ := read.Take(false, storetest.Roomy())
		for _, inv := range invs {
			if inv.ID == id {
				return inv, nil
			}
		}
		select {
		case <-read.Wake():
		case <-read.Ended():
			return inflight.Invocation{}, fmt.Errorf("the read ended before it handed out %s", id)
		case <-deadline:
			return inflight.Invocation{}, fmt.Errorf("the read handed out nothing of %s within %v", id, within)
		}
	}
}

func TestACallHandedWhileItWaitsIsHandedOnce(t *testing.T) {
	t.Parallel()
	box, read := reading(t)
	id, stop, out := calling(box)
	defer stop()
	if inv := handed(t, read, id, 10*time.Second); inv.Delivery != 1 {
		t.Fatalf("the first hand-off of a waiting Call counts %d, want 1", inv.Delivery)
	}
	if _, err := box.Complete(context.Background(), "laptop", id, inflight.Capture{Stdout: "ok"}); err != nil {
		t.Fatal(err)
	}
	if o := <-out; o.err != nil || o.c == nil || o.c.Stdout != "ok" || o.c.Stderr != "" {
		t.Fatalf("the Call got %+v, %v; want the capture as completed", o.c, o.err)
	}
}

// The Call's wait ends before its host took the invocation: the Call sets
// its precount back, and the hand-off after it counts one, not two.
func TestACallWhoseWaitEndedUnhandedIsCountedOnceWhenHanded(t *testing.T) {
	t.Parallel()
	box, read := reading(t)
	ctx := context.Background()
	id, stop, out := calling(box)
	stop()
	if o := <-out; o.err != nil || o.c != nil {
		t.Fatalf("a Call whose wait ended unanswered returned %+v, %v; want no capture and no error", o.c, o.err)
	}
	// Its driver now has the id, and asks: not handed out yet.
	if st, err := box.Status(ctx, "driver", id, 0, 0); err != nil || st.Handoffs != 0 {
		t.Fatalf("the status of a Call returned unhanded: %+v, %v; want no hand-off counted", st, err)
	}
	if inv := handed(t, read, id, 10*time.Second); inv.Delivery != 1 {
		t.Fatalf("the first hand-off after the Call's wait ended counts %d, want 1", inv.Delivery)
	}
	stored, err := box.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "ok"})
	if err != nil || stored.Stderr != "" {
		t.Fatalf("completing: %+v, %v; want the capture with no hand-off sentence", stored, err)
	}
}

// The read ends with the Call's invocation delivered but not handed out:
// it goes back uncounted, and the next read hands it out as the first.
func TestAReadEndingWithACallUnhandedGivesItBackUncounted(t *testing.T) {
	t.Parallel()
	box, read := reading(t)
	ctx := context.Background()
	id, stop, out := calling(box)
	defer stop()
	delivered(t, read) // not taken
	read.Close()
	again, err := box.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if inv := handed(t, again, id, 10*time.Second); inv.Delivery != 1 {
		t.Fatalf("a delivery given back unhanded, then handed, counts %d, want 1", inv.Delivery)
	}
	if _, err := box.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "ok"}); err != nil {
		t.Fatal(err)
	}
	if o := <-out; o.err != nil || o.c == nil || o.c.Stderr != "" {
		t.Fatalf("the Call got %+v, %v; want the capture with no hand-off sentence", o.c, o.err)
	}
}

// A replica hands a waiting Call's invocation out on its precount and dies
// (its connection drops, nothing is written or given back): the next
// replica's read gets it again after the lease, counted as the second.
func TestACallHandedByAReplicaThatDiedIsCountedTwice(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	replica := precountReplicas(t, lease)
	dying, dyingConn := replica()
	ctx := context.Background()
	read, err := dying.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	id, stop, _ := calling(dying)
	defer stop()
	if inv := handed(t, read, id, 10*time.Second); inv.Delivery != 1 {
		t.Fatalf("the first hand-off counts %d, want 1", inv.Delivery)
	}
	dyingConn.Close()

	survivor, _ := replica()
	again, err := survivor.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if inv := handed(t, again, id, 20*lease); inv.Delivery != 2 {
		t.Fatalf("handed again after its replica died, it counts %d, want 2", inv.Delivery)
	}
	stored, err := survivor.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "ok"})
	if err != nil || !strings.Contains(stored.Stderr, "2 times") {
		t.Fatalf("completing: %+v, %v; want the capture with the handed-2-times sentence", stored, err)
	}
}

// The poster learns a Call's id from its header while it waits, and may
// cancel it before the host's read takes it: the read must not hand it
// out on the Call's precount, as the cancel changed the slot.
func TestACallCancelledBeforeItIsHandedIsNotHandedOut(t *testing.T) {
	t.Parallel()
	box, read := reading(t)
	ctx := context.Background()
	id, stop, out := calling(box)
	defer stop()
	delivered(t, read) // not taken
	// The slot is written alongside the queue message: the poster can
	// cancel once it is stored.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := box.Status(ctx, "driver", id, 0, 0); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the Call's slot was not stored within 10s: %v", err)
		}
	}
	if _, err := box.Cancel(ctx, "driver", id, "changed my mind", false); err != nil {
		t.Fatal(err)
	}
	invs, _ := read.Take(true, storetest.Roomy())
	for _, inv := range invs {
		if inv.ID == id {
			t.Fatalf("a Call cancelled while queued was handed out: %+v", inv)
		}
	}
	stop()
	if o := <-out; o.err == nil && o.c != nil && o.c.ExitCode != 130 {
		t.Fatalf("the cancelled Call got %+v", o.c)
	}
}
