package box

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Complete answers an invocation addressed to caller and returns the
// capture as kept (with the hand-off prefix, when it has one).
func (b *Box) Complete(ctx context.Context, caller, id string, c Capture) (Capture, error) {
	return b.complete(ctx, caller, id, c, false)
}

// complete answers id here when this replica holds it, else through the
// client's home (unless local), else in its record.
func (b *Box) complete(ctx context.Context, caller, id string, c Capture, local bool) (Capture, error) {
	if c.Size() > b.cfg.MaxCaptureBytes {
		return Capture{}, inflight.TooLarge(&c, b.cfg.MaxCaptureBytes)
	}
	for {
		b.mu.Lock()
		s := b.slots[id]
		if s != nil && s.client == caller {
			if ch := s.writing; ch != nil {
				b.mu.Unlock()
				<-ch
				continue
			}
			if s.state == answered {
				b.mu.Unlock()
				return Capture{}, inflight.Absent(id)
			}
			if s.input == "" && s.rev != 0 { // a stub: its record first
				b.mu.Unlock()
				if err := b.fill(ctx, s); err != nil {
					return Capture{}, err
				}
				continue
			}
			c = inflight.Rehanded(c, s.client, s.handoffs)
			if s.rev == 0 {
				b.unlist(s)
				b.answer(s, c, inflight.ByHost)
				b.mu.Unlock()
				return c, nil
			}
			b.writing(s)
			purge := s.collectors > 0 && s.keyed == 0 // a retry key needs the record
			b.mu.Unlock()
			return c, b.settle(ctx, s, c, inflight.ByHost, purge)
		}
		home := b.queues[caller] != nil
		r := b.view[id]
		b.mu.Unlock()
		if !local && !home {
			rep, err := b.request(ctx, hostPrefix+caller, &ask{Op: "complete", Caller: caller, ID: id, Capture: &c})
			if err == nil {
				return *rep.Capture, nil
			}
			if !errors.Is(err, errNoHome) {
				return Capture{}, err
			}
			// No home: one that lost NATS may still hold it, orphaned.
			if holder := b.locate(ctx, id); holder != "" {
				rep, err := b.request(ctx, mbxPrefix+holder, &ask{Op: "complete", Caller: caller, ID: id, Capture: &c})
				if err == nil {
					return *rep.Capture, nil
				}
				if st, ok := status.FromError(err); !ok || st.Code() != codes.NotFound {
					return Capture{}, err
				}
			}
		}
		if r == nil {
			found, err := b.lookup(ctx, id)
			if err != nil {
				return Capture{}, err
			}
			if !found {
				return Capture{}, inflight.Absent(id)
			}
			continue
		}
		if r.client != caller || r.state != stQueued {
			return Capture{}, inflight.Absent(id)
		}
		got, err := b.answerRecord(ctx, r, func(body *mailboxv1.StoredInvocation) Capture {
			return inflight.Rehanded(c, caller, body.GetHandoffs())
		}, inflight.ByHost)
		if err != errConflict {
			return got, err
		}
	}
}

// writing marks s as being written, off its queue's lists. Called locked.
func (b *Box) writing(s *slot) {
	b.unlist(s)
	s.writing = make(chan struct{})
}

// settle gives a durable slot (marked writing) its capture: written to its
// record first — removed there when purge says a collection here waits for
// it, which then takes it from memory. A record changed meanwhile (a cancel
// elsewhere) wins: the slot goes and the answer is refused.
func (b *Box) settle(ctx context.Context, s *slot, c Capture, by inflight.Answer, purge bool) error {
	b.mu.Lock() // the view may move s.rev on meanwhile (a write of its notes)
	body, at := s.stored(), s.rev
	b.mu.Unlock()
	body.Capture, body.Input, body.McpParams, body.Cancelled = captureProto(&c), "", nil, by == inflight.ByCancel
	state := stAnswered
	if by == inflight.ByCancel {
		state = stCancelled
	}
	rev := uint64(0)
	var err error
	for range 5 { // a write of its notes may have moved the record on: again at the latest
		if purge {
			err = b.recs.remove(ctx, s.client, s.id, s.poster, at)
		} else {
			rev, err = b.recs.put(ctx, s.client, s.id, state, body, at, b.cfg.TTL)
		}
		if err != errConflict {
			break
		}
		full, gerr := b.recs.get(ctx, s.client, s.id)
		if gerr != nil || full == nil || full.state != stQueued {
			break // answered or cancelled elsewhere: that wins
		}
		at = full.rev
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	close(s.writing)
	s.writing = nil
	switch {
	case err == nil && purge:
		s.rev = 0
		b.answer(s, c, by)
		if by == inflight.ByCancel && s.collectors == 0 { // a cancel nobody waits for: gone
			b.remove(s)
		}
	case err == nil:
		b.answered(s, c, by)
		b.remove(s)
		b.hear(&rec{client: s.client, id: s.id, poster: s.poster, state: stAnswered, rev: rev})
	case errors.Is(err, errConflict):
		b.remove(s)
		return inflight.Absent(s.id)
	default: // NATS out of reach: still handed, for the host to answer again
		if q := b.queues[s.client]; q != nil && b.slots[s.id] == s {
			q.handed.pushBack(s)
		}
		return refused(err)
	}
	return nil
}

// answer gives s, off its queue's lists, its capture in memory and wakes
// whoever waits for it. Called locked.
func (b *Box) answer(s *slot, c Capture, by inflight.Answer) {
	c.Notes = s.notes
	s.state, s.capture = answered, &c
	b.answered(s, c, by)
	b.notify(s.id)
	if q := b.queues[s.client]; q != nil {
		b.dropQueue(q)
	}
}

// answered tells the Answered hook. Called locked.
func (b *Box) answered(s *slot, c Capture, by inflight.Answer) {
	if b.cfg.Answered != nil {
		b.cfg.Answered(inflight.Ended{ID: s.id, Client: s.client, Poster: s.poster, Tool: s.tool, Front: s.front, Posted: s.posted,
			Handoffs: s.handoffs, InputBytes: s.size, Input: s.input, Cwd: s.cwd, Capture: c, By: by})
	}
}

// answerRecord answers a durable invocation that no replica holds, in its
// record, with the capture capture makes of it; errConflict when the
// record moved on meanwhile (look again).
func (b *Box) answerRecord(ctx context.Context, r *rec, capture func(*mailboxv1.StoredInvocation) Capture, by inflight.Answer) (Capture, error) {
	full, err := b.recs.get(ctx, r.client, r.id)
	if err != nil {
		return Capture{}, refused(err)
	}
	if full == nil || full.state != stQueued || full.rev != r.rev {
		b.heardAgain(r, full)
		return Capture{}, errConflict
	}
	c := capture(full.body)
	c.Notes = inflight.NotesOf(full.body.GetNotes())
	body := proto.CloneOf(full.body)
	body.Capture, body.Input, body.Cancelled = captureProto(&c), "", by == inflight.ByCancel
	state := stAnswered
	if by == inflight.ByCancel {
		state = stCancelled
	}
	rev, err := b.recs.put(ctx, r.client, r.id, state, body, r.rev, b.cfg.TTL)
	if err != nil {
		if err != errConflict {
			err = refused(err)
		}
		return Capture{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hear(&rec{client: r.client, id: r.id, poster: r.poster, state: state, rev: rev})
	if b.cfg.Answered != nil {
		body, size := full.body, r.size
		if size == 0 {
			size = inflight.PostSize(body.GetInput(), body.GetTool(), body.Cwd, body.McpParams)
		}
		b.cfg.Answered(inflight.Ended{ID: r.id, Client: r.client, Poster: body.GetPoster(), Tool: body.GetTool(), Front: body.GetFront(),
			Posted: postedOf(body), Handoffs: body.GetHandoffs(), InputBytes: size, Input: body.GetInput(), Cwd: body.Cwd, Capture: c, By: by})
	}
	return c, nil
}

// timeoutRecord answers a queued record whose driver's timeout ran out
// before any host took it.
func (b *Box) timeoutRecord(ctx context.Context, r *rec) error {
	_, err := b.answerRecord(ctx, r, func(body *mailboxv1.StoredInvocation) Capture {
		return inflight.TimedOut(r.id, r.client, timeOf(body.GetDeadline()))
	}, inflight.ByTimeout)
	if err == errConflict {
		return nil
	}
	return err
}
