package box

import (
	"context"
	"errors"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Cancel answers an invocation posted by caller as cancelled (exit code
// 130), tells the host reading it, and returns the capture, removing the
// invocation unless keep. One answered already returns its capture.
func (b *Box) Cancel(ctx context.Context, caller, id, reason string, keep bool) (Capture, error) {
	return b.cancel(ctx, caller, id, reason, keep, false)
}

func (b *Box) cancel(ctx context.Context, caller, id, reason string, keep, local bool) (Capture, error) {
	for {
		b.mu.Lock()
		s := b.slots[id]
		if s != nil && s.poster == caller {
			if ch := s.writing; ch != nil {
				b.mu.Unlock()
				<-ch
				continue
			}
			if s.state == answered {
				c := *s.capture
				if !keep {
					b.remove(s)
				}
				b.mu.Unlock()
				return c, nil
			}
			if s.input == "" && s.rev != 0 && keep { // a stub: its record first
				b.mu.Unlock()
				if err := b.fill(ctx, s); err != nil {
					return Capture{}, err
				}
				continue
			}
			c := inflight.Cancelled(id, reason)
			if q := b.queues[s.client]; q != nil && q.handed.has(s) && q.reader != nil {
				q.reader.cancelled(id)
			}
			s.cancelled = true
			if s.rev == 0 {
				b.unlist(s)
				b.answer(s, c, inflight.ByCancel)
				if !keep && s.collectors == 0 && !s.awaited { // a waiting call takes it
					b.remove(s)
				}
				b.mu.Unlock()
				return c, nil
			}
			b.writing(s)
			purge := !keep && s.keyed == 0 // a retry key needs the record
			b.mu.Unlock()
			return c, b.settle(ctx, s, c, inflight.ByCancel, purge)
		}
		r := b.view[id]
		b.mu.Unlock()
		if r == nil {
			if found, err := b.lookup(ctx, id); err != nil || found {
				if err != nil {
					return Capture{}, err
				}
				continue
			}
			if home := b.elsewhere(ctx, id, local); home != "" {
				rep, err := b.request(ctx, mbxPrefix+home, &ask{Op: "cancel", Caller: caller, ID: id, Reason: reason, Keep: keep})
				if err != nil {
					return Capture{}, err
				}
				return *rep.Capture, nil
			}
			return Capture{}, inflight.Absent(id)
		}
		if r.poster != caller {
			return Capture{}, inflight.Absent(id)
		}
		c, err := b.cancelRecord(ctx, r, reason, keep, local)
		if err != errConflict {
			return c, err
		}
	}
}

// cancelRecord cancels a durable invocation this replica does not hold:
// through its client's home, which may have handed it to its host, else in
// the record.
func (b *Box) cancelRecord(ctx context.Context, r *rec, reason string, keep, local bool) (Capture, error) {
	if r.state == stQueued {
		if !local {
			rep, err := b.request(ctx, hostPrefix+r.client, &ask{Op: "cancel", Caller: r.poster, ID: r.id, Reason: reason, Keep: keep})
			if err == nil {
				return *rep.Capture, nil
			}
			if !errors.Is(err, errNoHome) {
				return Capture{}, err
			}
		}
		c, err := b.answerRecord(ctx, r, func(*mailboxv1.StoredInvocation) Capture { return inflight.Cancelled(r.id, reason) }, inflight.ByCancel)
		if err != nil || keep {
			return c, err
		}
		b.mu.Lock()
		r = b.view[r.id]
		b.mu.Unlock()
		if r == nil {
			return c, nil
		}
		return c, b.recs.remove(ctx, r.client, r.id, r.poster, r.rev)
	}
	full, err := b.recs.get(ctx, r.client, r.id)
	if err != nil || full == nil || full.rev != r.rev {
		if err != nil {
			return Capture{}, refused(err)
		}
		b.heardAgain(r, full)
		return Capture{}, errConflict
	}
	c := *captureOf(full.body)
	if !keep {
		if err := b.recs.remove(ctx, r.client, r.id, r.poster, r.rev); err != nil {
			return Capture{}, err
		}
	}
	return c, nil
}

// Report keeps a progress note on an invocation addressed to caller and
// wakes its poster's Status waits; it returns the note's seq and what the
// notes hold now.
func (b *Box) Report(ctx context.Context, caller, id string, n inflight.Note) (int64, int, error) {
	return b.report(ctx, caller, id, n, false)
}

func (b *Box) report(ctx context.Context, caller, id string, n inflight.Note, local bool) (int64, int, error) {
	b.mu.Lock()
	s := b.slots[id]
	if s != nil && s.client == caller {
		defer b.mu.Unlock()
		if s.state == answered || s.writing != nil {
			return 0, 0, inflight.NotRunning(id)
		}
		n = askedBy(n, s.handoffs)
		if err := questionFits(s.notes, id, n); err != nil {
			return 0, 0, err
		}
		if n.Question != nil && b.waiting(s.client) >= contract.MaxWaitingPerClient {
			return 0, 0, inflight.TooManyWaiting(id, s.client)
		}
		return b.addNote(s, n), inflight.NotesBytes(s.notes), nil
	}
	home := b.queues[caller] != nil
	b.mu.Unlock()
	if !local && !home {
		rep, err := b.request(ctx, hostPrefix+caller, &ask{Op: "report", Caller: caller, ID: id, Note: &n})
		if !errors.Is(err, errNoHome) {
			if err != nil {
				return 0, 0, err
			}
			return rep.Seq, rep.Bytes, nil
		}
	}
	return b.reportRecord(ctx, caller, id, n)
}

// addNote keeps n on s (under b.mu), wakes its poster's Status waits, and
// returns n's seq.
func (b *Box) addNote(s *slot, n inflight.Note) int64 {
	var seq int64
	s.notes, seq = inflight.AddNote(s.notes, n)
	b.notify(s.id)
	if (n.Question != nil || n.Answered != "") && b.cfg.Asking != nil {
		b.cfg.Asking(s.id, s.client, inflight.Waiting(s.notes, s.handoffs))
	}
	if s.rev != 0 && s.input != "" { // a durable one's notes outlive the replicas (a Task's status)
		body, rev := s.stored(), s.rev
		go b.keepNotes(s, body, rev)
	}
	return seq
}

// keepNotes writes a durable slot's notes to its record; a write that loses
// to an answer or a cancel is dropped (the record says more than the notes).
func (b *Box) keepNotes(s *slot, body *mailboxv1.StoredInvocation, rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), natsconn.RequestTimeout)
	defer cancel()
	newRev, err := b.recs.put(ctx, s.client, s.id, stQueued, body, rev, b.cfg.TTL)
	for tries := 0; err == errConflict && tries < 3; tries++ { // another note's write came first
		full, gerr := b.recs.get(ctx, s.client, s.id)
		if gerr != nil || full == nil || full.state != stQueued || len(full.body.GetNotes()) > len(body.GetNotes()) {
			return
		}
		newRev, err = b.recs.put(ctx, s.client, s.id, stQueued, body, full.rev, b.cfg.TTL)
	}
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.rev < newRev {
		s.rev, s.recorded = newRev, body.GetHandoffs()
	}
	b.hear(&rec{client: s.client, id: s.id, poster: s.poster, state: stQueued, size: s.size, rev: newRev})
}

// reportRecord keeps a note in the record of an invocation no replica
// holds (its host answers after its read and its home are gone).
func (b *Box) reportRecord(ctx context.Context, caller, id string, n inflight.Note) (int64, int, error) {
	r, err := b.recs.find(ctx, id)
	if err != nil {
		return 0, 0, refused(err)
	}
	if r == nil || r.client != caller {
		return 0, 0, inflight.Absent(id)
	}
	if r.state != stQueued {
		return 0, 0, inflight.NotRunning(id)
	}
	n = askedBy(n, r.body.GetHandoffs())
	if err := questionFits(inflight.NotesOf(r.body.GetNotes()), id, n); err != nil {
		return 0, 0, err
	}
	notes, seq := inflight.AddNote(inflight.NotesOf(r.body.GetNotes()), n)
	body := proto.CloneOf(r.body)
	body.Notes = inflight.NotesProto(notes)
	if _, err := b.recs.put(ctx, r.client, id, stQueued, body, r.rev, b.cfg.TTL); err != nil {
		if err == errConflict {
			return 0, 0, inflight.NotRunning(id)
		}
		return 0, 0, refused(err)
	}
	return seq, inflight.NotesBytes(notes), nil
}

// Status reads an invocation posted by caller without taking it, waiting
// up to wait (bounded by ctx) for a note after `after` or the answer.
func (b *Box) Status(ctx context.Context, caller, id string, after int64, wait time.Duration) (inflight.State, error) {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	return b.status(ctx, caller, id, after, wait, false)
}

func (b *Box) status(ctx context.Context, caller, id string, after int64, wait time.Duration, local bool) (inflight.State, error) {
	waiting := wait > 0
	for {
		b.mu.Lock()
		s := b.slots[id]
		if s != nil && s.poster == caller && s.tool == "" && s.rev != 0 {
			// A stub: what the post said (its time, its tool) is in its
			// record, read first.
			b.mu.Unlock()
			if err := b.fill(ctx, s); err != nil && status.Code(err) != codes.NotFound {
				return inflight.State{}, err
			}
			continue
		}
		if s != nil && s.poster == caller {
			st := stateOf(s, after)
			if !waiting || st.News() {
				b.mu.Unlock()
				return st, nil
			}
			ch := b.news(id)
			b.mu.Unlock()
			waiting = b.wait(ctx, ch)
			continue
		}
		r := b.view[id]
		home := r != nil && b.queues[r.client] != nil
		b.mu.Unlock()
		if r == nil {
			if found, err := b.lookup(ctx, id); err != nil || found {
				if err != nil {
					return inflight.State{}, err
				}
				continue
			}
			if h := b.elsewhere(ctx, id, local); h != "" {
				return b.statusAt(ctx, mbxPrefix+h, caller, id, after, wait)
			}
			return inflight.State{}, inflight.Absent(id)
		}
		if r.poster != caller {
			return inflight.State{}, inflight.Absent(id)
		}
		if r.state == stQueued && !local && !home {
			st, err := b.statusAt(ctx, hostPrefix+r.client, caller, id, after, wait)
			if !errors.Is(err, errNoHome) {
				return st, err
			}
		}
		full, err := b.recs.get(ctx, r.client, r.id)
		if err != nil {
			return inflight.State{}, refused(err)
		}
		if full == nil {
			b.heardAgain(r, nil)
			continue
		}
		st := stateOfRecord(full, after, b.cfg.TTL)
		if !waiting || st.News() {
			return st, nil
		}
		b.mu.Lock()
		if b.view[id] != r || b.slots[id] != nil { // it moved while unlocked: look again
			b.mu.Unlock()
			continue
		}
		ch := b.news(id)
		b.mu.Unlock()
		waiting = b.wait(ctx, ch)
	}
}

// statusAt asks another replica for a status.
func (b *Box) statusAt(ctx context.Context, subj, caller, id string, after int64, wait time.Duration) (inflight.State, error) {
	if wait > 0 {
		wait = untilDeadline(ctx)
	}
	rep, err := b.request(ctx, subj, &ask{Op: "status", Caller: caller, ID: id, After: after, Wait: wait})
	if err != nil {
		return inflight.State{}, err
	}
	return *rep.State, nil
}

// stateOf is s as its poster sees it, with the notes after seq after.
// Called locked; nothing returned shares s's memory.
func stateOf(s *slot, after int64) inflight.State {
	st := inflight.State{Handoffs: s.handoffs, Notes: slices.Clone(inflight.NotesAfter(s.notes, after)),
		Expires: time.Unix(0, s.expires), Client: s.client, Tool: s.tool, Posted: s.posted}
	switch {
	case s.state == answered && s.cancelled:
		st.Phase = inflight.CancelledPhase
	case s.state == answered:
		st.Phase = inflight.AnsweredPhase
	case s.handoffs > 0:
		st.Phase = inflight.HandedOut
	default:
		st.Phase = inflight.Queued
	}
	if s.capture != nil {
		c := *s.capture
		st.Capture = &c
	}
	return st
}

// stateOfRecord is a record as its poster sees it.
func stateOfRecord(r *rec, after int64, ttl time.Duration) inflight.State {
	s := slotOf(r, ttl)
	return stateOf(s, after)
}
