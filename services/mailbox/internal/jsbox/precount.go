package jsbox

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/streams"
)

// A Call whose client's host reads through this replica creates its slot
// with the first hand-off already counted (precounted), and its queue
// message says so. When the invocation is then delivered here for the first
// time while the Call still waits, the read hands it to the host without
// writing the slot: the count is stored, before the hand-off as the rule
// asks, and nothing can have changed the slot meanwhile, because until the
// Call returns nobody else knows the invocation's id (no cancel, no
// collection) and the mailbox's own answers (the driver's timeout, the
// hand-off cap) are decided here, on this delivery. That is one NATS
// exchange less on a round trip's path, of four.
//
// A precount no hand-off used is set back, so the count stays exact:
//   - by the Call, when its wait ends unanswered (unprecount), at the
//     revision it posted, so a hand-off made meanwhile wins;
//   - by the read, when it gives back a first delivery it never handed
//     (giveBack), and when the host never got one it handed (uncount, as
//     for every hand-off).
//
// What stays uncertain is what was always uncertain: a replica that dies
// between receiving a delivery and handing it out leaves the count one
// high, which errs on the side the in-doubt sentence states (it may have
// run). A precounted slot still at its posted revision on a later delivery
// is therefore counted again from what the slot says.

// isPrecounted reports whether a queue message's slot was created with its
// first hand-off counted.
func isPrecounted(h nats.Header) bool { return h.Get(headerPrecounted) != "" }

// firstDelivery reports whether m is its invocation's first delivery from
// the queue; an unreadable delivery count is taken as a later one.
func firstDelivery(m jetstream.Msg) bool {
	md, err := m.Metadata()
	return err == nil && md.NumDelivered == 1
}

// precountHere reports whether a Call to client should precount its
// hand-off: only when this replica holds the client's read, so the first
// delivery most likely reaches the Call's own replica.
func (b *Box) precountHere(client string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reads[client] != nil && !b.closed
}

// handToCall marks the waiting Call of id as handed its invocation through
// its precount, when it still waits on this replica.
func (b *Box) handToCall(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiters[id] {
		if w.own && !w.gone && !w.handed {
			w.handed = true
			return true
		}
	}
	return false
}

// unprecount sets back the precounted hand-off of a Call whose wait ended
// before it was handed out: a write at the revision the Call posted, which
// loses to any write since (a hand-off elsewhere, an answer) as it should.
// If NATS cannot be asked, the count stays one high: the safe side.
func (b *Box) unprecount(ctx context.Context, id string, rec record, rev uint64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.Lease/3)
	defer cancel()
	rec.Handoffs = 0
	if _, err := b.slots.Update(ctx, id, rec.encode(), rev); err != nil && !streams.Conflict(err) {
		b.log.Debug("a Call's precounted hand-off was not set back", "id", id, "err", err)
	}
}

// giveBack returns a delivery this read never handed out to the queue. A
// precounted first delivery has its count set back first: nothing handed
// it out, and the next delivery counts from the slot.
func (r *Read) giveBack(m jetstream.Msg) {
	if isPrecounted(m.Headers()) && firstDelivery(m) {
		if id := m.Headers().Get(headerID); id != "" {
			r.uncount(id, 1)
		}
	}
	_ = m.Nak()
}
