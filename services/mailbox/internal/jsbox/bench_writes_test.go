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

// BenchmarkDurableWrites is the NATS work of one round trip alone, on the
// box's own stream and bucket, arranged three ways: what the box does for
// a Call whose host reads through its replica (slot and queue message
// sent at once, the capture handed over by purging the slot), the same
// with the slot created once the publish is acknowledged, and the
// "slotless" design docs/bench.md weighs (the queue message alone, handed
// over by a synchronous ack, which is what makes the answer durable).
// delivered-µs is how long after the post's start the delivery reaches
// its consumer: the point the host's work could start.
func BenchmarkDurableWrites(b *testing.B) {
	for _, arr := range []struct {
		name            string
		slot, slotAfter bool
	}{{"as_posted", true, false}, {"slot_after_publish", true, true}, {"slotless_sync_ack", false, false}} {
		b.Run(arr.name, func(b *testing.B) {
			_, nc := oneNodeBox(b, storetest.Defaults)
			w := newWrites(b, nc)
			var delivered time.Duration
			for b.Loop() {
				delivered += w.roundTrip(b, arr.slot, arr.slotAfter)
			}
			b.ReportMetric(float64(delivered.Microseconds())/float64(b.N), "delivered-µs")
		})
	}
}

// writes is a consumer of its own on the box's queue stream, and the
// box's slot bucket.
type writes struct {
	js        jetstream.JetStream
	slots     jetstream.KeyValue
	delivered chan arrival
}

// arrival is a delivery and when it reached the consumer's handler.
type arrival struct {
	msg jetstream.Msg
	at  time.Time
}

const writesSubject = "sb.queue.bench-writes"

func newWrites(b *testing.B, nc *nats.Conn) *writes {
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	slots, err := js.KeyValue(ctx, jsbox.SlotBucket)
	if err != nil {
		b.Fatal(err)
	}
	cons, err := js.CreateConsumer(ctx, jsbox.QueueStream, jetstream.ConsumerConfig{
		Durable: "bench-writes", FilterSubject: writesSubject, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	w := &writes{js: js, slots: slots, delivered: make(chan arrival, 1)}
	cc, err := cons.Consume(func(m jetstream.Msg) { w.delivered <- arrival{m, time.Now()} })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)
	return w
}

// roundTrip posts one invocation, takes its delivery and hands its answer
// over durably; it returns how long the delivery took from the start.
func (w *writes) roundTrip(b *testing.B, slot, slotAfter bool) time.Duration {
	ctx := context.Background()
	id, data := inflight.NewID(), make([]byte, 256)
	start := time.Now()
	pub, err := w.js.PublishMsgAsync(&nats.Msg{Subject: writesSubject, Data: data})
	if err != nil {
		b.Fatal(err)
	}
	acked := func() {
		select {
		case <-pub.Ok():
		case err := <-pub.Err():
			b.Fatal(err)
		}
	}
	if slotAfter {
		acked()
	}
	var rev uint64
	if slot {
		if rev, err = w.slots.Create(ctx, id, data); err != nil {
			b.Fatal(err)
		}
	}
	if !slotAfter {
		acked()
	}
	d := <-w.delivered
	if slot {
		if err := w.slots.Purge(ctx, id, jetstream.LastRevision(rev), jetstream.PurgeTTL(time.Second)); err != nil {
			b.Fatal(err)
		}
		_ = d.msg.Ack()
	} else if err := d.msg.DoubleAck(ctx); err != nil {
		b.Fatal(err)
	}
	return d.at.Sub(start)
}
