package jsbox

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// A hand-off counts only once its invocation reached the host. JetStream
// counts a delivery when it sends to the replica, which is earlier: a
// read's batch may be full, or its stream's send may fail. Such a delivery
// is given back with the slot's unsent count raised, and the hand-offs are
// JetStream's delivery count less the unsent ones. A replica that dies
// before it could say so leaves its deliveries counted: the safe side, as
// one of them may have reached the host.

// Take hands out the invocations delivered since the last Take, oldest
// first, as many as fit room, and returns the cancellations to tell the
// host (dropped when withCancels is false: a unary read has no way to say
// them). What does not fit stays for the next Take. A delivery whose slot
// is gone (cancelled, expired) or answered is dropped; one past the
// hand-off cap is answered in doubt.
func (r *Read) Take(withCancels bool, room *inflight.Room) ([]inflight.Invocation, []string) {
	var out []inflight.Invocation
	for {
		r.mu.Lock()
		if r.done {
			r.mu.Unlock()
			return out, nil
		}
		if len(r.incoming) == 0 {
			r.mu.Unlock()
			break
		}
		m := r.incoming[0]
		inv, err := invocation(m.Headers(), m.Data(), 0)
		if err == nil && !room.Fit(inv.Size()) {
			r.mu.Unlock()
			r.signal() // it waits for the next Take
			break
		}
		r.incoming = r.incoming[1:]
		r.backlog--
		r.mu.Unlock()
		if err != nil {
			r.box.log.Warn("a queue message is not an invocation; dropped", "client", r.client, "err", err)
			_ = m.Term()
			continue
		}
		if inv, ok := r.handOff(m, inv); ok {
			out = append(out, inv)
		}
	}
	r.mu.Lock()
	cancels := r.cancels
	r.cancels = nil
	r.mu.Unlock()
	if !withCancels {
		cancels = nil
	}
	return out, cancels
}

// Unsent gives back invocations Take handed out that never reached the
// host: their deliveries are counted unsent, and JetStream delivers them
// again first.
func (r *Read) Unsent(invs []inflight.Invocation) {
	for _, inv := range invs {
		r.mu.Lock()
		h := r.held[inv.ID]
		delete(r.held, inv.ID)
		r.mu.Unlock()
		if h != nil {
			r.giveBack(h.msg, inv.Delivery)
		}
	}
}

// giveBack counts a delivery that never reached the host as unsent, and
// gives it back to JetStream. handedAs is the hand-off it was taken as (0
// when Take never took it): from the second on, the slot says it, and is
// set back.
func (r *Read) giveBack(m jetstream.Msg, handedAs int32) {
	b := r.box
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Lease/3)
	defer cancel()
	id := m.Headers().Get(headerID)
	for range 3 {
		rec, rev, err := b.read(ctx, id)
		if err != nil || rec.Capture != nil {
			break // gone or answered: nothing to count; NATS lost: counted handed, the safe side
		}
		rec.Unsent++
		if handedAs >= 2 {
			rec.Handoffs = handedAs - 1
		}
		if _, err = b.slots.Update(ctx, id, rec.encode(), rev); !errors.Is(err, jetstream.ErrKeyExists) {
			break
		}
	}
	_ = m.Nak()
}

// handoffs is an invocation's hand-off count at a delivery: JetStream's
// delivery count less the deliveries given back unsent.
func handoffs(delivered uint64, unsent int32) int32 {
	n := int64(delivered) - int64(unsent)
	return int32(min(max(n, 1), inflight.HandoffCap+1))
}

// handOff checks one delivery against its slot and holds it.
func (r *Read) handOff(m jetstream.Msg, inv inflight.Invocation) (inflight.Invocation, bool) {
	b := r.box
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Lease/3)
	defer cancel()
	md, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return inflight.Invocation{}, false
	}
	rec, rev, err := b.read(ctx, inv.ID)
	switch {
	case err != nil && isAbsent(err):
		_ = m.Ack() // cancelled or expired before it reached a host
		return inflight.Invocation{}, false
	case err != nil:
		_ = m.Nak() // NATS did not answer: let it come back
		return inflight.Invocation{}, false
	case rec.Capture != nil:
		_ = m.Ack() // answered by an earlier hand-off
		return inflight.Invocation{}, false
	}
	inv.Delivery = handoffs(md.NumDelivered, rec.Unsent)
	switch {
	case inv.Delivery > inflight.HandoffCap:
		r.answerInDoubt(ctx, inv.ID, rec, rev)
		_ = m.Term()
		return inflight.Invocation{}, false
	case inv.Delivery >= 2:
		rec.Handoffs = inv.Delivery
		if rev, err = b.slots.Update(ctx, inv.ID, rec.encode(), rev); err != nil {
			_ = m.Nak() // changed meanwhile (answered, cancelled): the next delivery sees how
			return inflight.Invocation{}, false
		}
	}
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		r.giveBack(m, inv.Delivery)
		return inflight.Invocation{}, false
	}
	r.held[inv.ID] = &held{msg: m, rec: rec, rev: rev}
	r.mu.Unlock()
	return inv, true
}

// answerInDoubt writes the capture of an invocation handed out HandoffCap
// times without an answer.
func (r *Read) answerInDoubt(ctx context.Context, id string, rec record, rev uint64) {
	c := inflight.InDoubt(r.client, inflight.HandoffCap)
	rec.Capture = &c
	newRev, err := r.box.slots.Update(ctx, id, rec.encode(), rev)
	if err != nil {
		return // answered or gone meanwhile
	}
	r.box.announceAnswer(id, newRev, c)
}
