package box

import (
	"context"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Take hands out the queued invocations, oldest first, as many as fit
// room, and returns the cancellations to tell the host (dropped when
// withCancels is false: a unary read has no way to say them). A durable
// invocation heard of through the view has its input read first.
func (r *Read) Take(withCancels bool, room *inflight.Room) ([]inflight.Invocation, []string) {
	b := r.box
	r.load(room.Rows)
	b.mu.Lock()
	if r.done || r.q.reader != r { // closed, or ended (NATS lost, moved, replaced)
		b.mu.Unlock()
		return nil, nil
	}
	q, now := r.q, b.cfg.Clock.Now()
	var out []inflight.Invocation
	var late, capped []*slot
	for s := q.pending.head; s != nil; {
		next := s.q.next
		switch {
		case s.input == "": // its record could not be read: the next Take tries again
		case s.handoffs >= inflight.HandoffCap:
			q.pending.remove(s)
			capped = append(capped, s)
		case s.handoffs == 0 && inflight.Past(s.deadline, now):
			q.pending.remove(s)
			late = append(late, s)
		default:
			inv := s.invocation()
			if !room.Fits(inv.Size()) {
				next = nil
				break
			}
			room.Add(inv.Size())
			q.pending.remove(s)
			s.handoffs++
			q.handed.pushBack(s)
			out = append(out, inv)
		}
		s = next
	}
	if q.pending.n > 0 {
		r.signal() // more waits: the next Take hands it out
	}
	cancels := r.cancels
	r.cancels = nil
	if !withCancels {
		cancels = nil
	}
	b.mu.Unlock()
	ctx := context.Background()
	for _, s := range late {
		b.giveUp(ctx, s, inflight.TimedOut(s.id, s.client, s.deadline), inflight.ByTimeout)
	}
	for _, s := range capped {
		b.giveUp(ctx, s, inflight.InDoubt(s.client, s.handoffs), inflight.ByCap)
	}
	return out, cancels
}

// load reads the records of up to n queued invocations heard of through
// the view, outside the lock.
func (r *Read) load(n int) {
	b := r.box
	b.mu.Lock()
	var stubs []*slot
	for s := r.q.pending.head; s != nil && len(stubs) < n; s = s.q.next {
		if s.input == "" {
			stubs = append(stubs, s)
		}
	}
	b.mu.Unlock()
	for _, s := range stubs {
		_ = b.fill(context.Background(), s)
	}
}

// fill reads a stub's record into it (a durable invocation heard of through
// the view); a stub whose record is answered or gone goes.
func (b *Box) fill(ctx context.Context, s *slot) error {
	full, err := b.recs.get(ctx, s.client, s.id)
	if err != nil {
		return refused(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.slots[s.id] != s || s.input != "":
	case full == nil || full.state != stQueued:
		b.remove(s)
		return inflight.Absent(s.id)
	default:
		got := slotOf(full, b.cfg.TTL)
		s.tool, s.input, s.cwd, s.mcpParams, s.trace = got.tool, got.input, got.cwd, got.mcpParams, got.trace
		s.timeout, s.deadline, s.front = got.timeout, got.deadline, got.front
		s.posted, s.expires, s.notes, s.rev, s.recorded = got.posted, got.expires, got.notes, full.rev, got.handoffs
		bump := int32(0)
		if q := b.queues[s.client]; q != nil {
			bump = q.bumped(got.posted)
		}
		s.handoffs = got.handoffs + bump
	}
	return nil
}

// Unsent puts invocations Take handed out back at the front of the queue,
// in their order, uncounted: they never reached the host.
func (r *Read) Unsent(invs []inflight.Invocation) {
	b := r.box
	b.mu.Lock()
	defer b.mu.Unlock()
	back := list{at: queueLinks}
	for i := range invs {
		s := b.slots[invs[i].ID]
		if s == nil || !r.q.handed.has(s) {
			continue // answered, cancelled or expired meanwhile
		}
		r.q.handed.remove(s)
		s.handoffs--
		back.pushBack(s)
	}
	r.q.pending.prepend(&back)
	if r.q.pending.n > 0 {
		r.signal()
	}
}
