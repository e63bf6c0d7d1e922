package jsbox

import (
	"context"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/kit/streams"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Progress notes live on the slot record, so any replica's Status reads
// what any replica's Report wrote. A report is announced on sb.note.<id>
// (core NATS, like sb.done.<id>), which every replica hears through one
// subscription and hands to its Status waits for that id; an answer on
// sb.done.<id> wakes them too. As with answers, a lost announcement costs
// latency, never a note: a wait reads the slot again when it ends.

// maxReportTries bounds the writes of one report that lose to another
// write of the slot (a hand-off, a cancel, another report).
const maxReportTries = 5

// Report keeps a progress note on an invocation addressed to caller, and
// announces it.
func (b *Box) Report(ctx context.Context, caller, id string, n inflight.Note) (int64, int, error) {
	if b.isClosed() {
		return 0, 0, inflight.ErrShuttingDown
	}
	for attempt := 1; ; attempt++ {
		rec, rev, err := b.read(ctx, id)
		if err != nil {
			return 0, 0, err
		}
		if rec.Client != caller || rec.TakenBy != "" {
			return 0, 0, inflight.Absent(id)
		}
		if rec.Capture != nil {
			return 0, 0, inflight.NotRunning(id)
		}
		var seq int64
		rec.Notes, seq = inflight.AddNote(rec.Notes, n)
		newRev, err := b.slots.Update(ctx, id, rec.encode(), rev)
		if streams.Conflict(err) && attempt < maxReportTries {
			continue
		}
		if err != nil {
			return 0, 0, unavailable("storing the progress note", err)
		}
		// A read on this replica holding it keeps the slot as written, for
		// a completion without a second read; held on another replica, the
		// completion there meets a conflict and reads the slot again.
		if r, _ := b.heldBy(caller, id); r != nil {
			r.noted(id, rec, newRev)
		}
		b.announce(notePrefix+id, nil)
		return seq, inflight.NotesBytes(rec.Notes), nil
	}
}

// Status reads an invocation posted by caller without taking it, waiting
// up to wait (bounded by ctx) for a note after `after` or the answer.
func (b *Box) Status(ctx context.Context, caller, id string, after int64, wait time.Duration) (inflight.State, error) {
	if wait <= 0 {
		return b.status(ctx, caller, id, after)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// Watching before reading, so news between the two is not missed.
	w := b.watch(id)
	defer b.unwatch(id, w)
	for {
		st, err := b.status(ctx, caller, id, after)
		if err != nil || st.News() {
			return st, err
		}
		select {
		case <-w:
			continue
		case <-ctx.Done():
		case <-b.closing:
		}
		return b.status(context.WithoutCancel(ctx), caller, id, after)
	}
}

// status reads the slot once, as its poster sees it.
func (b *Box) status(ctx context.Context, caller, id string, after int64) (inflight.State, error) {
	rec, _, written, err := b.readAt(ctx, id)
	if err != nil {
		return inflight.State{}, err
	}
	if rec.Poster != caller || rec.TakenBy != "" {
		return inflight.State{}, inflight.Absent(id)
	}
	st := inflight.State{Handoffs: rec.Handoffs, Notes: slices.Clone(inflight.NotesAfter(rec.Notes, after)),
		Capture: rec.Capture, Expires: written.Add(b.cfg.TTL), Client: rec.Client, Tool: rec.Tool, Posted: rec.Posted}
	switch {
	case rec.Capture != nil && rec.Cancelled:
		st.Phase = inflight.CancelledPhase
	case rec.Capture != nil:
		st.Phase = inflight.AnsweredPhase
	case rec.Handoffs > 0:
		// Handed out at least once: a host whose read ended has it back
		// on its queue, which the slot does not record.
		st.Phase = inflight.HandedOut
	default:
		st.Phase = inflight.Queued
	}
	return st, nil
}

// deliverNote wakes the Status waits of this replica for a note's id.
func (b *Box) deliverNote(m *nats.Msg) {
	id := m.Subject[len(notePrefix):]
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wakeWatchers(id)
}

// wakeWatchers signals the Status waits for id. Called with b.mu held.
func (b *Box) wakeWatchers(id string) {
	for _, w := range b.watchers[id] {
		select {
		case w <- struct{}{}:
		default: // it has one already
		}
	}
}

// watch registers a Status wait for news of id until unwatch.
func (b *Box) watch(id string) chan struct{} {
	w := make(chan struct{}, 1)
	b.mu.Lock()
	b.watchers[id] = append(b.watchers[id], w)
	b.mu.Unlock()
	return w
}

func (b *Box) unwatch(id string, w chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ws := slices.DeleteFunc(b.watchers[id], func(o chan struct{}) bool { return o == w })
	if len(ws) == 0 {
		delete(b.watchers, id)
	} else {
		b.watchers[id] = ws
	}
}
