package slots

import (
	"context"
	"time"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Read is a client's claim on its queue: one per client identity at a
// time. It is held by a Follow stream for as long as the stream lives, or
// by an Invocations long poll for the length of one hold.
type Read struct {
	box    *Box
	q      *queue
	wake   chan struct{} // capacity 1: a post between Take and the wait is never lost
	ended  <-chan struct{}
	cancel []string // cancellations to tell the host, in order
	done   bool

	// requeued counts the invocations the opening put back on the queue.
	requeued int
}

// OpenRead claims client's queue. Lease, not latch: every invocation handed
// to client that has no capture goes back on the queue, first, under the
// same id — except one handed out HandoffCap times already, which the
// mailbox answers itself, in doubt.
func (b *Box) OpenRead(_ context.Context, client string) (inflight.Read, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, inflight.ErrShuttingDown
	}
	q := b.queueOf(client)
	if q.reader != nil {
		return nil, inflight.SecondReader(client)
	}
	r := &Read{box: b, q: q, wake: make(chan struct{}, 1), ended: b.closing}
	requeue := list{at: queueLinks}
	for s := q.handed.popFront(); s != nil; s = q.handed.popFront() {
		if s.handoffs >= inflight.HandoffCap {
			b.answerInDoubt(s)
			continue
		}
		s.state = queued
		requeue.pushBack(s)
	}
	r.requeued = requeue.n
	q.pending.prepend(&requeue)
	q.reader = r
	return r, nil
}

// answerInDoubt writes the capture of an invocation that reached the
// hand-off cap. The slot is already off its queue's lists.
func (b *Box) answerInDoubt(s *slot) {
	c := inflight.InDoubt(s.client, s.handoffs)
	b.answerWith(s, &c, inflight.ByCap)
}

// answerWith writes the mailbox's own capture of s, which is already off
// its queue's lists, and wakes whoever waits for it.
func (b *Box) answerWith(s *slot, c *Capture, by inflight.Answer) {
	s.state = answered
	s.capture = c
	if b.cfg.Answered != nil {
		b.cfg.Answered(s.id, s.client, b.posted(s), *c, by)
	}
	s.wake(false)
}

// Requeued counts the invocations the opening put back on the queue.
func (r *Read) Requeued() int { return r.requeued }

// Backlogged is always false: Take hands out the whole queue at once.
func (r *Read) Backlogged() bool { return false }

// Wake is signalled when there may be something to Take.
func (r *Read) Wake() <-chan struct{} { return r.wake }

// Ended is closed when the mailbox shuts down; the read should end.
func (r *Read) Ended() <-chan struct{} { return r.ended }

// Take hands out the queued invocations, oldest first, as many as fit
// room, and returns the cancellations to tell the host (dropped when
// withCancels is false: a unary read has no way to say them).
func (r *Read) Take(withCancels bool, room *inflight.Room) ([]inflight.Invocation, []string) {
	b := r.box
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.done {
		return nil, nil
	}
	var out []inflight.Invocation
	now := b.cfg.Clock.Now()
	for s := r.q.pending.head; s != nil; s = r.q.pending.head {
		// Never run, its driver's timeout ran out in the queue. (One handed
		// before is handed again: its host stops it at the deadline.)
		if s.handoffs == 0 && inflight.Past(s.deadline, now) {
			r.q.pending.popFront()
			c := inflight.TimedOut(s.id, s.client, s.deadline)
			b.answerWith(s, &c, inflight.ByTimeout)
			continue
		}
		inv := inflight.Invocation{ID: s.id, Tool: s.tool, Input: s.input, Cwd: s.cwd, Delivery: s.handoffs + 1, Trace: s.trace,
			Timeout: s.timeout, Deadline: s.deadline, Expires: time.Unix(0, s.expires)}
		if !room.Fits(inv.Size()) {
			break
		}
		room.Add(inv.Size())
		r.q.pending.popFront()
		s.handoffs++
		s.state = handed
		r.q.handed.pushBack(s)
		out = append(out, inv)
	}
	if r.q.pending.n > 0 {
		r.signal() // more waits: the next Take hands it out
	}
	cancels := r.cancel
	r.cancel = nil
	if !withCancels {
		cancels = nil
	}
	return out, cancels
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
		if s == nil || s.client != r.q.client || s.state != handed {
			continue // answered, cancelled or expired meanwhile
		}
		r.q.handed.remove(s)
		s.handoffs--
		s.state = queued
		back.pushBack(s)
	}
	r.q.pending.prepend(&back)
	if r.q.pending.n > 0 {
		r.signal()
	}
}

// Close releases the claim; the client is absent until its next read.
// Invocations handed during the read stay leased until that next read.
func (r *Read) Close() {
	b := r.box
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	q := r.q
	if q.reader == r {
		q.reader = nil
		if q.pending.n == 0 && q.handed.n == 0 {
			delete(b.queues, q.client)
		}
	}
}

// signal wakes the reader without blocking. Called with the box locked.
func (r *Read) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// cancelled queues a cancellation for the host. Called with the box locked.
func (r *Read) cancelled(id string) {
	r.cancel = append(r.cancel, id)
	r.signal()
}
