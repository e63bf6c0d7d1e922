package jsbox

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/streams"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// A hand-off counts only once its invocation is handed to the host: the
// slot's hand-off count is written when Take hands it out (or, for a
// waiting Call, when it posted: precount.go), and set back when it is
// given back unsent. JetStream's own delivery count is no
// measure: it counts every delivery to the replica, also those a read's
// full batch left waiting, given back when the read ended, and those in
// flight to a read that ended (redelivered a lease later).

// Take hands out the invocations delivered since the last Take, oldest
// first, as many as fit room, and returns the cancellations to tell the
// host (dropped when withCancels is false: a unary read has no way to say
// them). What does not fit stays for the next Take. A delivery whose slot
// is gone (cancelled, expired) or answered is dropped; one past the
// hand-off cap is answered in doubt.
func (r *Read) Take(withCancels bool, room *inflight.Room) ([]inflight.Invocation, []string) {
	var out []inflight.Invocation
	for {
		batch, more := r.pick(room)
		if len(batch) == 0 {
			break
		}
		for _, p := range r.handOffAll(batch) {
			if p.ok { // one dropped takes no room
				room.Add(p.inv.Size())
				out = append(out, p.inv)
			}
		}
		if !more {
			break
		}
	}
	r.mu.Lock()
	done := r.done
	cancels := r.cancels
	r.cancels = nil
	r.mu.Unlock()
	if done {
		return out, nil
	}
	if !withCancels {
		cancels = nil
	}
	return out, cancels
}

// picked is one delivery Take hands out, and how its hand-off went.
type picked struct {
	msg jetstream.Msg
	inv inflight.Invocation
	ok  bool
}

// pick takes from the deliveries what fits room if every one of them is
// handed out; more reports that some are left, which may fit once the
// hand-offs show what was dropped.
func (r *Read) pick(room *inflight.Room) (batch []picked, more bool) {
	trial := *room
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.done && len(r.incoming) > 0 {
		m := r.incoming[0]
		inv, err := invocation(m.Headers(), m.Data(), 0)
		if err == nil && !trial.Fits(inv.Size()) {
			if !room.Fits(inv.Size()) {
				r.signal() // it waits for the next Take
				return batch, false
			}
			return batch, true
		}
		r.incoming = r.incoming[1:]
		r.backlog--
		if err != nil {
			r.box.log.Warn("a queue message is not an invocation; dropped", "client", r.client, "err", err)
			_ = m.Term()
			continue
		}
		trial.Add(inv.Size())
		batch = append(batch, picked{msg: m, inv: inv})
	}
	return batch, false
}

// handOffAll hands out a batch: its slot writes go to NATS together, not
// one after another, so a busy queue's batch costs about one write's time.
func (r *Read) handOffAll(batch []picked) []picked {
	if len(batch) == 1 {
		batch[0].inv, batch[0].ok = r.handOff(batch[0].msg, batch[0].inv)
		return batch
	}
	var wg sync.WaitGroup
	for i := range batch {
		wg.Go(func() { batch[i].inv, batch[i].ok = r.handOff(batch[i].msg, batch[i].inv) })
	}
	wg.Wait()
	return batch
}

// Unsent gives back invocations Take handed out that never reached the
// host: their hand-off is uncounted at once, and JetStream delivers them
// again when the read ends (after it unpinned its consumer, so they reach
// the next read).
func (r *Read) Unsent(invs []inflight.Invocation) {
	for _, inv := range invs {
		r.mu.Lock()
		h := r.held[inv.ID]
		if h != nil {
			delete(r.held, inv.ID)
			r.unsent = append(r.unsent, h.msg)
		}
		r.mu.Unlock()
		if h != nil {
			r.uncount(inv.ID, inv.Delivery)
		}
	}
}

// uncount sets id's hand-off count back from handedAs: that hand-off never
// reached the host. If NATS cannot be asked, it stays counted: the safe
// side, as the in-doubt sentence says a hand-off may have run it.
func (r *Read) uncount(id string, handedAs int32) {
	b := r.box
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Lease/3)
	defer cancel()
	for range 3 {
		rec, rev, err := b.read(ctx, id)
		if err != nil || rec.Capture != nil || rec.Handoffs != handedAs {
			return // gone, answered, or handed again meanwhile
		}
		rec.Handoffs--
		if _, err = b.slots.Update(ctx, id, rec.encode(), rev); !streams.Conflict(err) {
			return
		}
	}
}

// handOff checks one delivery against its slot, counts the hand-off in
// it, and holds it. The first hand-off of an invocation costs one write:
// its slot is still as Post created it, at the revision the queue message
// names, and a write at that revision proves it (one the slot has left
// falls back to reading it). A waiting Call's first costs none
// (precount.go).
func (r *Read) handOff(m jetstream.Msg, inv inflight.Invocation) (inflight.Invocation, bool) {
	b := r.box
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Lease/3)
	defer cancel()
	if isPrecounted(m.Headers()) {
		if out, ok, decided := r.handPrecounted(ctx, m, inv); decided {
			return out, ok
		}
		// Not its waiting Call's first delivery: the slot says how it
		// stands (the queue message names no revision).
	}
	rec, rev, posted := postedSlot(m.Headers(), r.client)
	if posted && inflight.Past(rec.Deadline, time.Now()) {
		// Never run: its driver's timeout ran out in the queue.
		if r.answerWith(ctx, inv.ID, rec, rev, inflight.TimedOut(inv.ID, r.client, rec.Deadline), inflight.ByTimeout) == nil {
			_ = m.Term()
			return inflight.Invocation{}, false
		}
		posted = false // handed, answered or cancelled since: read it
	}
	if posted {
		rec.Handoffs = 1
		newRev, err := b.slots.Update(ctx, inv.ID, rec.encode(), rev)
		switch {
		case err == nil:
			rev = newRev
		case streams.Conflict(err):
			posted = false // handed, answered or cancelled since: read it
		default:
			_ = m.Nak() // NATS did not answer: let it come back
			return inflight.Invocation{}, false
		}
	}
	if !posted {
		var ok bool
		if rec, rev, ok = r.countHandOff(ctx, m, inv.ID); !ok {
			return inflight.Invocation{}, false
		}
	}
	// The slot was written just now, and the bucket keeps it a TTL more.
	return r.hold(m, inv, rec, rev, time.Now().Add(b.cfg.TTL))
}

// hold keeps a delivery handed out with its slot as counted, and returns
// the invocation to send; a read closing meanwhile gives it back.
func (r *Read) hold(m jetstream.Msg, inv inflight.Invocation, rec record, rev uint64, expires time.Time) (inflight.Invocation, bool) {
	inv.Delivery = rec.Handoffs
	inv.Timeout, inv.Deadline, inv.Expires = rec.Timeout, rec.Deadline, expires
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		r.uncount(inv.ID, inv.Delivery)
		_ = m.Nak()
		return inflight.Invocation{}, false
	}
	r.held[inv.ID] = &held{msg: m, rec: rec, rev: rev}
	r.mu.Unlock()
	return inv, true
}

// countHandOff reads the slot of a delivery and counts the hand-off in it;
// a delivery whose slot is gone (cancelled, expired) or answered is
// dropped, and one past the hand-off cap answered in doubt.
func (r *Read) countHandOff(ctx context.Context, m jetstream.Msg, id string) (record, uint64, bool) {
	b := r.box
	// A precounted invocation's first delivery is its first hand-off,
	// whatever the slot says (precounted, or set back).
	first := isPrecounted(m.Headers()) && firstDelivery(m)
	for attempt := 0; ; attempt++ {
		rec, rev, err := b.read(ctx, id)
		switch {
		case err != nil && isAbsent(err) && first && attempt == 0 && r.awaitSlot(ctx, m, id):
			continue // its post stored it meanwhile
		case err != nil && isAbsent(err):
			_ = m.Ack() // cancelled or expired before it reached a host
			return record{}, 0, false
		case err != nil:
			_ = m.Nak() // NATS did not answer: let it come back
			return record{}, 0, false
		case rec.Capture != nil:
			_ = m.Ack() // answered by an earlier hand-off
			return record{}, 0, false
		case rec.Handoffs >= inflight.HandoffCap && !first:
			r.answerInDoubt(ctx, id, rec, rev)
			_ = m.Term()
			return record{}, 0, false
		case (rec.Handoffs == 0 || first) && inflight.Past(rec.Deadline, time.Now()):
			// Never run: its driver's timeout ran out in the queue. (One handed
			// before is stopped by its host at the deadline.)
			_ = r.answerWith(ctx, id, rec, rev, inflight.TimedOut(id, r.client, rec.Deadline), inflight.ByTimeout)
			_ = m.Term()
			return record{}, 0, false
		}
		if first {
			rec.Handoffs = 1
		} else {
			rec.Handoffs++
		}
		newRev, err := b.slots.Update(ctx, id, rec.encode(), rev)
		if err == nil {
			return rec, newRev, true
		}
		if !first || !streams.Conflict(err) || attempt == 2 {
			_ = m.Nak() // changed meanwhile (answered, cancelled): the next delivery sees how
			return record{}, 0, false
		}
		// Its Call set the precount back meanwhile: read it again.
	}
}

// answerInDoubt writes the capture of an invocation handed out HandoffCap
// times without an answer.
func (r *Read) answerInDoubt(ctx context.Context, id string, rec record, rev uint64) {
	_ = r.answerWith(ctx, id, rec, rev, inflight.InDoubt(r.client, inflight.HandoffCap), inflight.ByCap)
}

// answerWith writes the mailbox's own capture of an invocation it does not
// hand out, at the slot's revision rev; an error means the slot changed
// meanwhile (answered, cancelled, handed) or NATS did not answer.
func (r *Read) answerWith(ctx context.Context, id string, rec record, rev uint64, c inflight.Capture, by inflight.Answer) error {
	rec.Capture = &c
	newRev, err := r.box.slots.Update(ctx, id, rec.encode(), rev)
	if err != nil {
		return err
	}
	r.box.announceAnswer(id, newRev, rec.Poster, c)
	if r.box.cfg.Answered != nil {
		r.box.cfg.Answered(id, r.client, rec.Posted, c, by)
	}
	return nil
}
