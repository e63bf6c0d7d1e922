package jsbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// TestAReadOpensAgainAfterItsConsumerWasDeleted: a client's consumer that
// vanishes under a running replica — JetStream forgets it after its
// inactivity threshold (the TTL without a read), and a NATS whose every
// node restarted has lost it (its state lives in memory) — is declared
// again by the next read, which then gets what is queued; a read open
// when it vanishes ends, so its host reads again.
func TestAReadOpensAgainAfterItsConsumerWasDeleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	box, nc, read := readingOnOneNode(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	del := func() {
		t.Helper()
		if err := js.DeleteConsumer(ctx, jsbox.QueueStream, "c-laptop"); err != nil {
			t.Fatal(err)
		}
	}
	del()
	select {
	case <-read.Ended():
	case <-time.After(30 * time.Second): // told by the missing heartbeats: seconds
		t.Fatal("the open read did not end when its consumer was deleted")
	}
	read.Close()
	for round := range 2 {
		id := postOne(t, box)
		read, err := box.OpenRead(ctx, "laptop")
		if err != nil {
			t.Fatalf("round %d: opening the read again: %v", round, err)
		}
		handsOut(t, read, id)
		if _, err := box.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "done"}); err != nil {
			t.Fatal(err)
		}
		read.Close()
		del() // closed, then forgotten by JetStream
	}
}

// TestAConsumerKeptOnDiskByAnEarlierVersionIsReadAsItIs: the server changes
// no consumer's storage, so a client's consumer declared on disk (as
// versions before the consumers' state moved to memory did) is read as it
// is, and what it queued is handed out.
func TestAConsumerKeptOnDiskByAnEarlierVersionIsReadAsItIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	box, nc := oneNodeBox(t, storetest.Defaults)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = js.CreateConsumer(ctx, jsbox.QueueStream, jetstream.ConsumerConfig{
		Durable: "c-laptop", FilterSubject: "sb.queue.laptop", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: 30 * time.Second, MaxDeliver: -1, MaxAckPending: storetest.Defaults.MaxQueued,
		InactiveThreshold: storetest.Defaults.TTL, PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{"reader"}, PinnedTTL: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	id := postOne(t, box)
	read, err := box.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatalf("opening the read on the consumer kept on disk: %v", err)
	}
	t.Cleanup(read.Close)
	handsOut(t, read, id)
	c, err := js.Consumer(ctx, jsbox.QueueStream, "c-laptop")
	if err != nil {
		t.Fatal(err)
	}
	if c.CachedInfo().Config.MemoryStorage {
		t.Error("the consumer kept on disk was declared anew in memory")
	}
}

// handsOut checks that read hands out id, the one invocation queued.
func handsOut(t *testing.T, read inflight.Read, id string) {
	t.Helper()
	var got []inflight.Invocation
	spin(t, "the queued invocation handed out", func() bool {
		invs, _ := read.Take(false, storetest.Roomy())
		got = append(got, invs...)
		return len(got) > 0
	})
	if got[0].ID != id {
		t.Errorf("handed %s, want %s", got[0].ID, id)
	}
}

// A consumer outlives a short TTL by a minute at least: JetStream forgets a
// consumer with no pull waiting for its inactivity threshold, and an open
// read's pulls leave gaps of a second or more on a loaded machine — with
// a TTL of a second, the consumer was forgotten under an open read, which
// then delivered nothing (the three-node conformance run's expiry test
// failed so, under make test).
func TestAConsumerOutlivesAShortTTLByAMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bounds := storetest.Defaults
	bounds.TTL = time.Second
	box, nc := oneNodeBox(t, bounds)
	read, err := box.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(read.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.Consumer(ctx, jsbox.QueueStream, "c-laptop")
	if err != nil {
		t.Fatal(err)
	}
	if idle := c.CachedInfo().Config.InactiveThreshold; idle < time.Minute {
		t.Errorf("the consumer of a box with a 1 s TTL is forgotten after %v without a pull; want a minute at least", idle)
	}
}
