package slots

import (
	"context"
	"slices"
	"time"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Report keeps a progress note on an invocation addressed to caller and
// wakes its poster's Status waits.
func (b *Box) Report(_ context.Context, caller, id string, n inflight.Note) (int64, int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, 0, inflight.ErrShuttingDown
	}
	s := b.slots[id]
	if s == nil || s.client != caller {
		return 0, 0, inflight.Absent(id)
	}
	if s.state == answered {
		return 0, 0, inflight.NotRunning(id)
	}
	var seq int64
	s.notes, seq = inflight.AddNote(s.notes, n)
	s.wake(true)
	return seq, inflight.NotesBytes(s.notes), nil
}

// Status reads an invocation posted by caller without taking it, waiting
// up to wait (bounded by ctx) for a note after `after` or the answer. A
// wait wakes on the news itself, not on a tick.
func (b *Box) Status(ctx context.Context, caller, id string, after int64, wait time.Duration) (inflight.State, error) {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for waiting := wait > 0; ; {
		s := b.slots[id]
		if s == nil || s.poster != caller {
			return inflight.State{}, inflight.Absent(id)
		}
		st := stateOf(s, after)
		st.Posted = b.posted(s)
		if !waiting || st.News() {
			return st, nil
		}
		if s.news == nil {
			s.news = make(chan struct{})
		}
		news := s.news
		b.mu.Unlock()
		select {
		case <-news:
		case <-ctx.Done():
			waiting = false
		case <-b.closing:
			waiting = false
		}
		b.mu.Lock()
	}
}

// stateOf is s as its poster sees it, with the notes after seq after.
// Called with the box locked; nothing returned shares s's memory.
func stateOf(s *slot, after int64) inflight.State {
	st := inflight.State{Handoffs: s.handoffs, Notes: slices.Clone(inflight.NotesAfter(s.notes, after)),
		Expires: time.Unix(0, s.expires), Client: s.client, Tool: s.tool}
	switch {
	case s.state == queued:
		st.Phase = inflight.Queued
	case s.state == handed:
		st.Phase = inflight.HandedOut
	case s.cancelled:
		st.Phase = inflight.CancelledPhase
	default:
		st.Phase = inflight.AnsweredPhase
	}
	if s.capture != nil {
		c := *s.capture
		st.Capture = &c
	}
	return st
}
