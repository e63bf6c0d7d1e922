package box

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Read is a client's hold on its queue here: one per client across every
// replica (its presence key), held by a Follow or Serve stream for as long
// as it lives, or by an Invocations long poll for one hold.
type Read struct {
	box     *Box
	q       *queue
	session string
	wake    chan struct{} // capacity 1: a post between Take and the wait is never lost
	ended   chan struct{}
	why     string // set before ended closes
	endOnce sync.Once
	cancels []string              // cancellations to tell the host, in order
	answers []*mailboxv1.Answered // posters' answers to tell the host, in order
	done    bool
	// requeued counts the invocations the opening put back on the queue.
	requeued int
}

// OpenRead claims client's queue for session and makes this replica its
// home. Lease, not latch: every invocation handed to client that has no
// capture goes back on the queue first, under the same id — except one
// handed out HandoffCap times already, which the mailbox answers itself.
func (b *Box) OpenRead(ctx context.Context, client, session string) (inflight.Read, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, inflight.ErrShuttingDown
	}
	if q := b.queues[client]; q != nil && q.reader != nil {
		if session == "" || q.reader.session != session {
			b.mu.Unlock()
			return nil, inflight.SecondReader(client)
		}
		q.reader.end(endAgain)
		q.reader = nil
	}
	b.mu.Unlock()
	lease, bump, err := b.acquire(ctx, client, session)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	q := b.queueOf(client)
	if q.reader != nil || b.closed {
		b.mu.Unlock()
		_ = lease.Release(ctx)
		return nil, inflight.SecondReader(client)
	}
	r := &Read{box: b, q: q, session: session, wake: make(chan struct{}, 1), ended: make(chan struct{})}
	q.reader, q.lease = r, lease
	if bump {
		q.bump = b.cfg.Clock.Now()
	}
	var capped []*slot
	back := list{at: queueLinks}
	for s := q.handed.head; s != nil; s = q.handed.head {
		q.handed.remove(s)
		if s.handoffs >= inflight.HandoffCap {
			capped = append(capped, s)
			continue
		}
		back.pushBack(s)
	}
	r.requeued = back.n
	q.pending.prepend(&back)
	for _, rec := range slices.SortedFunc(maps.Values(b.backlog[client]), func(a, b *rec) int { return cmp.Compare(a.rev, b.rev) }) {
		if b.slots[rec.id] == nil {
			b.addStub(q, rec)
		}
	}
	if q.pending.n > 0 {
		r.signal()
	}
	b.mu.Unlock()
	// The server knows this replica is home before the read is open, so a
	// call posted once the host is present comes here, not to the backlog
	// (on one NATS node; a cluster's other nodes hear of it a moment later).
	_ = b.nc.FlushTimeout(natsconn.RequestTimeout)
	for _, s := range capped {
		b.giveUp(ctx, s, inflight.InDoubt(s.client, s.handoffs), inflight.ByCap)
	}
	return r, nil
}

// acquire takes client's presence key for this replica. A replica that
// was the client's home gives it up first (refused when its read is of
// another session); one that died is taken from, and the client's records
// count one hand-off more (bump): it may have handed them out unrecorded.
func (b *Box) acquire(ctx context.Context, client, session string) (*presence.Lease, bool, error) {
	bump := false
	lease, err := b.leases.Acquire(ctx, client, session, func(held *presence.Read) (bool, error) {
		_, err := b.request(ctx, hostPrefix+client, &ask{Op: "release", Client: client, Session: session})
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, errNoHome):
			bump = held.Held && !b.alive(ctx, held.Replica)
			return true, nil
		case errors.Is(err, errSilent): // the home went quiet as it was asked
			if held.Held && b.alive(ctx, held.Replica) {
				return false, status.Errorf(codes.Unavailable, "invocations: mailbox replica %s reads %q and did not let it go; read again in a moment", held.Replica, client)
			}
			bump = held.Held
			return true, nil
		case status.Code(err) == codes.FailedPrecondition:
			return false, nil
		}
		return false, err
	})
	switch {
	case err == nil:
		return lease, bump, nil
	case errors.Is(err, presence.ErrHeld):
		return nil, false, inflight.SecondReader(client)
	}
	if _, ok := status.FromError(err); ok {
		return nil, false, err
	}
	return nil, false, status.Errorf(codes.Unavailable, "invocations: the mailbox cannot reach NATS to hold the read of %q (%v); read again in a moment", client, err)
}

// release gives client up, at another replica's asking: its read (of the
// same session) ends, and what it left here goes to its records.
func (b *Box) release(ctx context.Context, client, session string) error {
	b.mu.Lock()
	q := b.queues[client]
	if q == nil {
		b.mu.Unlock()
		return nil
	}
	if r := q.reader; r != nil {
		if session == "" || r.session != session {
			b.mu.Unlock()
			return inflight.SecondReader(client)
		}
		r.end(endMoved)
		q.reader = nil
	}
	b.mu.Unlock()
	return b.spill(ctx, q)
}

// spill writes every invocation of q to its record (a call's is written
// now, a durable one's hand-offs when they moved) and stops being q's
// client's home: its host reads elsewhere now, or this replica lost NATS.
// Each slot is marked writing meanwhile, so an act on it (a complete, a
// collection) waits and then finds the record; one whose write failed goes
// back on the client's queue here, for the next try.
func (b *Box) spill(ctx context.Context, q *queue) error {
	b.mu.Lock()
	if q.reader != nil { // a read opened here meanwhile: the client stays
		b.mu.Unlock()
		return nil
	}
	var moving []*slot
	for _, l := range []*list{&q.handed, &q.pending} {
		for s := l.head; s != nil; s = l.head {
			l.remove(s)
			s.writing = make(chan struct{})
			moving = append(moving, s)
		}
	}
	if q.sub != nil {
		_ = q.sub.Unsubscribe()
		q.sub = nil
	}
	if b.queues[q.client] == q {
		delete(b.queues, q.client)
	}
	b.mu.Unlock()
	var errs []error
	for _, s := range moving {
		rev, err := b.store(ctx, s)
		b.mu.Lock()
		close(s.writing)
		s.writing = nil
		switch {
		case b.slots[s.id] != s: // expired or taken meanwhile
		case err != nil:
			errs = append(errs, err)
			b.requeue(q, s)
		default:
			b.remove(s)
			b.hear(&rec{client: s.client, id: s.id, poster: s.poster, state: stQueued, size: s.size, rev: rev})
		}
		b.mu.Unlock()
	}
	if len(errs) > 0 {
		return status.Errorf(codes.Unavailable, "the mailbox could not hand %q's invocations over (%v); read again in a moment", q.client, errors.Join(errs...))
	}
	return nil
}

// requeue puts back a slot a spill could not write, on its client's queue
// here (q again when no other was made meanwhile, still without a
// subscription), so that a read here or the next hand-over takes it.
// Called locked.
func (b *Box) requeue(q *queue, s *slot) {
	home := b.queues[s.client]
	if home == nil {
		home = q
		b.queues[s.client] = q
	}
	home.pending.pushBack(s)
	if home.reader != nil {
		home.reader.signal()
	}
}

// store writes s to its record for the replica that takes its client:
// created for a call, rewritten for a durable one whose hand-offs moved.
func (b *Box) store(ctx context.Context, s *slot) (uint64, error) {
	b.mu.Lock() // a view that hears the record moves s.rev on
	rev, same, stub := s.rev, s.handoffs == s.recorded, s.input == ""
	body := s.stored()
	b.mu.Unlock()
	if rev != 0 && same {
		return rev, nil
	}
	if rev != 0 && stub { // a stub: its input is in the record
		full, err := b.recs.get(ctx, s.client, s.id)
		if err != nil || full == nil {
			return 0, errors.Join(err, errConflict)
		}
		body.Input = full.body.GetInput()
	}
	return b.recs.put(ctx, s.client, s.id, stQueued, body, rev, b.cfg.TTL)
}

// giveUp answers s, taken off its lists, with the mailbox's own capture
// (the hand-off cap, a timeout run out in the queue).
func (b *Box) giveUp(ctx context.Context, s *slot, c Capture, by inflight.Answer) {
	b.mu.Lock()
	if s.rev == 0 {
		b.answer(s, c, by)
		b.mu.Unlock()
		return
	}
	s.writing = make(chan struct{})
	b.mu.Unlock()
	if err := b.settle(ctx, s, c, by, false); err != nil {
		b.log.Warn("the mailbox's own answer was not stored", "invocation", s.id, "err", err)
	}
}

// Requeued counts the invocations the opening put back on the queue.
func (r *Read) Requeued() int { return r.requeued }

// Backlogged reports whether records of the client are still being read
// into the queue: a unary read waits for them.
func (r *Read) Backlogged() bool {
	r.box.mu.Lock()
	defer r.box.mu.Unlock()
	for s := r.q.pending.head; s != nil; s = s.q.next {
		if s.input == "" {
			return true
		}
	}
	return false
}

// Wake is signalled when there may be something to Take.
func (r *Read) Wake() <-chan struct{} { return r.wake }

// Ended is closed when the read can go on no longer: the mailbox shuts
// down or lost NATS, or the client's read moved to another replica.
func (r *Read) Ended() <-chan struct{} { return r.ended }

// Why says why the read ended; read it once Ended is closed.
func (r *Read) Why() string { return r.why }

// end ends the read for the reason why, told to its host.
func (r *Read) end(why string) {
	r.endOnce.Do(func() {
		r.why = why
		close(r.ended)
	})
}

// Why a read ends, as its host hears it.
const (
	endDrain   = "the mailbox replica is shutting down; follow again through another replica or once it is back"
	endNATS    = "the mailbox replica lost NATS and let the read go; follow again in a moment"
	endMoved   = "this host's read moved to another mailbox replica; follow again"
	endAgain   = "this host opened another read; this one is over"
	endByClose = "the read was closed"
)

// signal wakes the reader without blocking. Called locked.
func (r *Read) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// cancelled queues a cancellation for the host. Called locked.
func (r *Read) cancelled(id string) {
	r.cancels = append(r.cancels, id)
	r.signal()
}

// answered queues a poster's answer for the host. Called locked.
func (r *Read) answered(a *mailboxv1.Answered) {
	r.answers = append(r.answers, a)
	r.signal()
}

// Answers returns the answers to tell the host, in order, once each.
func (r *Read) Answers() []*mailboxv1.Answered {
	r.box.mu.Lock()
	defer r.box.mu.Unlock()
	out := r.answers
	r.answers = nil
	return out
}

// Close ends the read; what it handed out without an answer stays leased
// here until the client's next read, here or (given up then) elsewhere.
func (r *Read) Close() {
	b := r.box
	b.mu.Lock()
	if r.done {
		b.mu.Unlock()
		return
	}
	r.done = true
	r.end(endByClose)
	mine := r.q.reader == r
	if mine {
		r.q.reader = nil
		b.dropQueue(r.q)
	}
	lease := r.q.lease
	b.mu.Unlock()
	if mine {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = lease.Release(ctx)
	}
}
