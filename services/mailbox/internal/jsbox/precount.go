package jsbox

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/natsconn"
	"github.com/switchboard-run/switchboard/kit/streams"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// A Call whose client's host reads through this replica creates its slot
// with the first hand-off already counted (precounted), and publishes its
// queue message, marked so, at the same time rather than after: two NATS
// exchanges in parallel where a post makes two in a row. When the
// invocation is then delivered here for the first time while the Call
// still waits, the read waits for the Call's post to be stored and hands
// it to the host without writing the slot: the count is stored before the
// hand-off as the rule asks. Nothing but a cancel can have changed the
// slot meanwhile: the mailbox's own answers (the driver's timeout) are
// decided here, and only the poster knows the id (from the Call's header)
// before the Call returns. A cancel marks the waiting Call (spoilCall) —
// at once when it is made through this replica, else when its
// announcement to the client's read reaches this replica, which holds the
// read — and a marked Call's delivery is checked against the slot as any
// other. A cancel whose announcement is lost is not told to the host, as
// for any invocation already handed out. Together, two NATS exchanges
// less on a round trip's path, of four.
//
// A precount no hand-off used is set back, so the count stays exact:
//   - by the Call, when its wait ends unanswered (unprecount), at the
//     revision it posted, so a hand-off made meanwhile wins;
//   - by the read, when it gives back a first delivery it never handed
//     (giveBack), and when the host never got one it handed (uncount, as
//     for every hand-off).
//
// Every other delivery of a precounted invocation counts from the slot. A
// slot still at its posted revision on a later delivery may have been
// handed out on the precount by a replica that died, so it counts again;
// only a replica that dies between receiving a delivery and handing it out
// leaves the count one high, the side the in-doubt sentence states. A
// delivery that finds no slot while its post may still be storing it (the
// host's read moved to another replica meanwhile) waits for it rather than
// being dropped.

// An Invoke is posted precounted too when its client's host reads through
// this replica and keeps up (nothing delivered there waits for a Take):
// its first delivery then reaches the read while its post is still being
// stored, as a Call's does (in process, 6–9 µs before the post is over on
// average), so the hand-off writes nothing: an Invoke answered to its
// waiting Capture writes its slot twice, not three times. The Invoke
// returns at once, so its precount is held by a waiter of its own that
// waits for no answer (holds), until the first delivery hands it out, or
// the hold's time passes and it is set back as a Call's is when its wait
// ends. From the Invoke's reply on the poster knows the id, as a Call's
// poster does from its header, and a cancel made through another replica
// reaches the hold as it reaches a Call: by its announcement to the read
// (spoilCall).
//
// precountHold is how long an Invoke's precount waits for its first
// delivery (at most a third of a lease) unless Config.PrecountHold says.
// A read that keeps up delivers in well under a millisecond; one that fell
// behind meanwhile costs one write more, to set it back.
const precountHold = time.Second

// holdFor is how long this box holds an Invoke's precount.
func (b *Box) holdFor() time.Duration {
	if b.cfg.PrecountHold > 0 {
		return b.cfg.PrecountHold
	}
	return min(precountHold, b.cfg.Lease/3)
}

// keepsUp reports whether client's host reads through this replica with
// nothing delivered waiting for it: an Invoke to it is handed out at once.
func (b *Box) keepsUp(client string) bool {
	b.mu.Lock()
	r := b.reads[client]
	closed := b.closed
	b.mu.Unlock()
	if r == nil || closed {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.done && len(r.incoming) == 0
}

// holdPrecount posts an Invoke precounted, and holds its precount until
// its first delivery, or for holdFor.
func (b *Box) holdPrecount(ctx context.Context, p inflight.Post) error {
	w := b.register(p.ID, &waiter{own: true, holds: true})
	rec, rev, err := b.post(ctx, p, true)
	b.mu.Lock()
	if err == nil {
		w.posted, w.rev = rec, rev
		w.release = time.AfterFunc(b.holdFor(), func() { b.releaseHold(p.ID, w) })
	}
	// A delivery that gave up waiting for this post (handPrecounted) let
	// the hold go before it knew the revision to set the count back at.
	released := w.gone
	b.mu.Unlock()
	close(w.postDone)
	if err != nil {
		b.unlisten(p.ID, w)
		return err
	}
	if released {
		b.releaseHold(p.ID, w)
	}
	return nil
}

// releaseHold ends an Invoke's hold on its precount, and sets back a
// precount no hand-off used.
func (b *Box) releaseHold(id string, w *waiter) {
	b.mu.Lock()
	if w.release != nil {
		w.release.Stop()
	}
	b.mu.Unlock()
	if _, unused := b.unlisten(id, w); unused {
		b.unprecount(context.Background(), id, w.posted, w.rev)
	}
}

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

// handPrecounted hands out a precounted delivery on its Call's precount,
// when it is the first delivery and the Call waits on this replica;
// decided is false when the slot must be counted as usual.
func (r *Read) handPrecounted(ctx context.Context, m jetstream.Msg, inv inflight.Invocation) (out inflight.Invocation, ok, decided bool) {
	if !firstDelivery(m) {
		return inflight.Invocation{}, false, false
	}
	w := r.box.callWaiting(inv.ID)
	if w == nil {
		return inflight.Invocation{}, false, false
	}
	if w.holds { // an Invoke's: its work is done once this is decided
		defer r.box.releaseHold(inv.ID, w)
	}
	select {
	case <-w.postDone:
	case <-ctx.Done(): // the post is stuck at NATS: later
		r.box.mu.Lock()
		if !w.gone {
			w.handed = false // so the Call sets its precount back when its wait ends
		}
		r.box.mu.Unlock()
		_ = m.Nak()
		return inflight.Invocation{}, false, true
	}
	rec, rev := w.posted, w.rev
	if rev == 0 { // the post failed: the Call takes the message back
		_ = m.Term()
		return inflight.Invocation{}, false, true
	}
	if inflight.Past(rec.Deadline, time.Now()) {
		// Never run: its driver's timeout ran out in the queue.
		if r.answerWith(ctx, inv.ID, rec, rev, inflight.TimedOut(inv.ID, r.client, rec.Deadline), inflight.ByTimeout) == nil {
			_ = m.Term()
		} else {
			_ = m.Nak()
		}
		return inflight.Invocation{}, false, true
	}
	// Written as the Call posted; the bucket keeps it a TTL from then.
	out, ok = r.hold(m, inv, rec, rev, rec.Posted.Add(r.box.cfg.TTL))
	return out, ok, true
}

// callWaiting returns the Call waiting on this replica for id (or the
// Invoke holding its precount), marked as handed its invocation, unless it
// has been already or its wait is over.
func (b *Box) callWaiting(id string) *waiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiters[id] {
		if w.own && !w.gone && !w.handed && !w.spoiled {
			w.handed = true
			return w
		}
	}
	return nil
}

// spoilCall tells a Call waiting on this replica for id that a cancel may
// have changed its slot, so its delivery is checked against the slot as
// any other is.
func (b *Box) spoilCall(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiters[id] {
		if w.own {
			w.spoiled = true
		}
	}
}

// awaitSlot waits for the slot of a precounted delivery that found none
// while its post may still be storing it, and reports whether it appeared:
// for a post made here, until the post is over; for one made by another
// replica, as long as its writes may take (natsconn.RequestTimeout). It waits
// here rather than giving the delivery back, which would spend the
// delivery count that tells a first hand-off from a later one.
func (r *Read) awaitSlot(ctx context.Context, m jetstream.Msg, id string) bool {
	h := m.Headers()
	if h.Get(headerPrecounted) == r.box.name {
		// Posted here: its Call's post is over once the Call waits no more
		// (the wait outlives the post), and then the slot, if there is one,
		// is stored (a cancel since may have taken it).
		if !r.box.awaitPost(id, r.box.cfg.Lease/3) {
			return false
		}
		_, _, err := r.box.read(ctx, id)
		return !isAbsent(err)
	}
	ms, err := strconv.ParseInt(h.Get(headerPosted), 10, 64)
	if !isPrecounted(h) || err != nil {
		return false
	}
	until := time.UnixMilli(ms).Add(natsconn.RequestTimeout + time.Second)
	for pause := 5 * time.Millisecond; time.Now().Before(until); pause = min(2*pause, 200*time.Millisecond) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pause):
		}
		if _, _, err := r.box.read(ctx, id); err == nil {
			return true
		} else if !isAbsent(err) {
			return true // NATS did not answer: counting reads it again, and says so
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
// precounted first delivery has its count set back first (once its Call's
// post, if still running here, has stored it): nothing handed it out, and
// the next delivery counts from the slot.
func (r *Read) giveBack(m jetstream.Msg) {
	if id := m.Headers().Get(headerID); id != "" && isPrecounted(m.Headers()) && firstDelivery(m) {
		r.box.awaitPost(id, r.box.cfg.Lease/3)
		r.uncount(id, 1)
	}
	_ = m.Nak()
}

// awaitPost waits, at most within, for the post of a Call of id waiting
// on this replica, and reports whether there is one.
func (b *Box) awaitPost(id string, within time.Duration) bool {
	b.mu.Lock()
	var done chan struct{}
	for _, w := range b.waiters[id] {
		if w.own {
			done = w.postDone
		}
	}
	b.mu.Unlock()
	if done == nil {
		return false
	}
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return true
}
