package jsbox

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/natsconn"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Post queues one invocation. The slot is written first, so a delivered
// invocation always finds its slot; the queue refuses a client or a box
// at its bound, and the slot is then taken back. When the client's host
// reads through this replica and keeps up, it is posted precounted
// instead, and its precount held until its first delivery (holdPrecount).
func (b *Box) Post(ctx context.Context, p inflight.Post) error {
	if b.keepsUp(p.Client) {
		return b.holdPrecount(ctx, p)
	}
	_, _, err := b.post(ctx, p, false)
	return err
}

// post is Post, with the first hand-off counted in the slot when precount
// is set; it returns the slot as created, and its revision.
func (b *Box) post(ctx context.Context, p inflight.Post, precount bool) (record, uint64, error) {
	if b.isClosed() {
		return record{}, 0, inflight.ErrShuttingDown
	}
	rec := record{Client: p.Client, Poster: p.Poster, Tool: p.Tool, Posted: time.Now(), Timeout: p.Timeout, Deadline: p.Deadline}
	if precount {
		return b.postPrecounted(ctx, p, rec)
	}
	rev, err := b.slots.Create(ctx, p.ID, rec.encode())
	if err != nil {
		return record{}, 0, unavailable("storing the invocation", err)
	}
	if _, err = b.publish(ctx, p, rev, rec.Posted); err != nil {
		b.takeBack(ctx, p.ID, rev)
		return record{}, 0, b.refusePost(p.Client, err)
	}
	return rec, rev, nil
}

// postPrecounted writes a precounted Call's slot and queue message at the
// same time (precount.go): its first delivery waits here for the slot, and
// any other finds the slot or comes back for it. What one write stored
// while the other failed is taken back.
//
// The queue message goes out without waiting for its ack, which comes back
// on the connection's reply handler while this goroutine writes the slot:
// both writes are in flight at once with no goroutine started for either.
// (A goroutine per Call cost more than its work: a fresh one grows its
// stack through the client library's calls every time.)
func (b *Box) postPrecounted(ctx context.Context, p inflight.Post, rec record) (record, uint64, error) {
	rec.Handoffs = 1
	pub, perr := b.js.PublishMsgAsync(queueMessage(queuePrefix+p.Client, p, 0, rec.Posted, b.name))
	var rev uint64
	// Bounded as the publish is: a delivery elsewhere that finds no slot
	// waits for it this long (awaitSlot).
	cerr := natsconn.Request(ctx, func(ctx context.Context) (err error) {
		rev, err = b.slots.Create(ctx, p.ID, rec.encode())
		return err
	})
	var seq uint64
	if perr == nil {
		seq, perr = b.acked(ctx, pub)
	}
	switch {
	case cerr == nil && perr == nil:
		return rec, rev, nil
	case cerr == nil:
		b.takeBack(ctx, p.ID, rev)
		return record{}, 0, b.refusePost(p.Client, perr)
	case perr == nil:
		// Never handed out: its first delivery waits for this post and
		// drops it, and one elsewhere finds no slot.
		if err := b.queue.DeleteMsg(context.WithoutCancel(ctx), seq); err != nil {
			b.log.Debug("a queue message whose slot was not stored was left to its delivery", "id", p.ID, "err", err)
		}
	}
	return record{}, 0, unavailable("storing the invocation", cerr)
}

// acked waits for an asynchronous publish's ack; it returns the message's
// sequence in the stream. The future resolves once, with the ack or an
// error: it is bounded as a request is, from when it was sent (the box's
// JetStream context sets the async timeout to natsconn.RequestTimeout).
func (b *Box) acked(ctx context.Context, pub jetstream.PubAckFuture) (uint64, error) {
	select {
	case ack := <-pub.Ok():
		b.queued()
		return ack.Sequence, nil
	case err := <-pub.Err():
		if errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
			return 0, natsconn.ErrNoAnswer
		}
		return 0, err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// publish queues p's message; it returns its sequence in the stream.
func (b *Box) publish(ctx context.Context, p inflight.Post, rev uint64, posted time.Time) (uint64, error) {
	var seq uint64
	err := natsconn.Request(ctx, func(ctx context.Context) error {
		ack, err := b.js.PublishMsg(ctx, queueMessage(queuePrefix+p.Client, p, rev, posted, ""))
		if err == nil {
			seq = ack.Sequence
		}
		return err
	})
	if err == nil {
		b.queued()
	}
	return seq, err
}

// queued counts a stored queue message, and writes the anchor every
// anchorEvery of them.
func (b *Box) queued() {
	if b.posts.Add(1)%anchorEvery == 1 {
		b.anchor()
	}
}

// takeBack removes the slot of a post the queue refused.
func (b *Box) takeBack(ctx context.Context, id string, rev uint64) {
	_ = b.slots.Purge(context.WithoutCancel(ctx), id, jetstream.LastRevision(rev), jetstream.PurgeTTL(time.Second))
}

// anchor keeps one message in the queue stream's newest file block. A
// work-queue stream deletes each invocation once answered, and when that
// empties its newest block, JetStream's file store removes the block's file
// and creates another: a few file operations for every answer of a queue
// that drains as fast as it fills, which is most of the store's cost at
// low depth. An anchor in the block keeps it from emptying. It is written
// again every anchorEvery posts, rolling up the one before, so a new block
// soon has one too.
func (b *Box) anchor() {
	m := nats.NewMsg(anchorSubject)
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if _, err := b.js.PublishMsgAsync(m); err != nil {
		b.log.Debug("the queue's anchor was not written", "err", err)
	}
}

// refusePost turns the queue's refusal into the bound's sentence.
func (b *Box) refusePost(client string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "maximum messages per subject exceeded"):
		return inflight.QueueFull(client, b.cfg.MaxQueued)
	case strings.Contains(msg, "maximum messages exceeded"):
		return inflight.BoxFull(b.cfg.MaxSlots)
	case strings.Contains(msg, "maximum bytes exceeded"):
		return status.Errorf(codes.ResourceExhausted,
			"the mailbox's queue holds %d bytes, the most it may; wait for hosts to take their invocations", b.cfg.MaxQueueBytes)
	}
	return unavailable("queueing the invocation", err)
}
