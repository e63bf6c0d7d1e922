package jsbox_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
)

// A precounted Call writes its slot and its queue message at the same
// time, so a delivery to a read on another replica (the host moved there
// meanwhile) may find no slot yet. It must come back for it, not be
// dropped, and its first hand-off counts one although the slot says the
// Call counted it already.
func TestAPrecountedDeliveryWhoseSlotIsLateWaitsForIt(t *testing.T) {
	t.Parallel()
	const lease = 30 * time.Second
	box, nc := precountReplicas(t, lease)()
	ctx := context.Background()
	read, err := box.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// Every lookup of a slot is a request a subscriber sees too.
	lookups := make(chan struct{}, 16)
	for _, subject := range []string{"$JS.API.DIRECT.GET.KV_" + jsbox.SlotBucket + ".>", "$JS.API.STREAM.MSG.GET.KV_" + jsbox.SlotBucket} {
		sub, err := nc.Subscribe(subject, func(*nats.Msg) {
			select {
			case lookups <- struct{}{}:
			default:
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	id := inflight.NewID()
	posted := time.Now()
	publishPrecounted(t, js, id, posted)
	type outcome struct {
		inv inflight.Invocation
		err error
	}
	got := make(chan outcome, 1)
	go func() {
		inv, err := handedWithin(read, id, 20*time.Second)
		got <- outcome{inv, err}
	}()
	select { // the hand-off looked for the slot, which is not there yet
	case <-lookups:
	case <-time.After(10 * time.Second):
		t.Fatal("the read never looked up the slot")
	}
	slots, err := js.KeyValue(ctx, jsbox.SlotBucket)
	if err != nil {
		t.Fatal(err)
	}
	slot, _ := proto.Marshal(&mailboxv1.StoredSlot{Client: "laptop", Poster: "driver", Tool: "echo", Handoffs: 1, PostedUnixMs: posted.UnixMilli()})
	if _, err := slots.Create(ctx, id, slot); err != nil {
		t.Fatal(err)
	}
	if o := <-got; o.err != nil || o.inv.Delivery != 1 {
		t.Fatalf("the first hand-off of a precounted invocation: %+v, %v; want it counted 1", o.inv, o.err)
	}
}

// publishPrecounted queues a precounted Call's message for "laptop" as
// the box writes it, without its slot.
func publishPrecounted(t *testing.T, js jetstream.JetStream, id string, posted time.Time) {
	t.Helper()
	m := nats.NewMsg("sb.queue.laptop")
	m.Header.Set("Sb-Invocation", id)
	m.Header.Set("Sb-Tool", "echo")
	m.Header.Set("Sb-Poster", "driver")
	m.Header.Set("Sb-Posted", strconv.FormatInt(posted.UnixMilli(), 10))
	m.Header.Set("Sb-Precounted", "1")
	m.Data = []byte("{}")
	if _, err := js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}
