package jsbox

// What a poster does with its invocation once posted: collect its capture
// (read once, or again under a retry key) and cancel it.

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/natsconn"
	"github.com/switchboard-run/switchboard/kit/streams"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Collect returns the capture of an invocation posted by caller, taking the
// slot (read once), or nil while it runs. With wait > 0 it waits that long
// (bounded by ctx) for the answer first.
func (b *Box) Collect(ctx context.Context, caller, id string, wait time.Duration, retryKey string) (*inflight.Capture, error) {
	if wait <= 0 {
		return b.collect(ctx, caller, id, retryKey)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return b.await(ctx, caller, id, retryKey)
}

// Await waits until the invocation is answered or ctx ends; it returns the
// capture (taking the slot) or nil when ctx ended first.
func (b *Box) Await(ctx context.Context, caller, id string) (*inflight.Capture, error) {
	return b.await(ctx, caller, id, "")
}

// collect reads the slot once: absent for someone else's, nil while it
// runs, the capture (and the slot taken) once answered. An answer heard
// lately is taken without the read (recentAnswers).
func (b *Box) collect(ctx context.Context, caller, id, retryKey string) (*inflight.Capture, error) {
	if retryKey == "" {
		if a, ok := b.recent.take(id, caller); ok {
			if c, err := b.purge(ctx, id, a); !isAbsent(err) {
				return c, err
			}
			// Changed since it was announced: the slot says how it stands.
		}
	}
	rec, rev, err := b.read(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case rec.Poster != caller:
		return nil, inflight.Absent(id)
	case rec.TakenBy != "":
		return retaken(id, rec, retryKey)
	case rec.Capture == nil:
		return nil, nil
	case retryKey != "":
		return b.takeKeeping(ctx, id, rec, rev, retryKey)
	}
	return b.purge(ctx, id, answer{Revision: rev, Capture: *rec.Capture})
}

// retaken answers a collection of a slot taken already: the capture again
// for a retry of the collection that took it, absent for any other.
func retaken(id string, rec record, retryKey string) (*inflight.Capture, error) {
	if retryKey == "" || retryKey != rec.TakenBy || rec.Capture == nil {
		return nil, inflight.Absent(id)
	}
	c := *rec.Capture
	return &c, nil
}

// retryGrace is how long a capture taken with a retry key stays for a
// retry of that collection.
const retryGrace = time.Minute

// takeKeeping takes the capture for the collection named retryKey: the slot
// is marked taken by it (at the revision read, so one collection wins) and
// removed by JetStream a minute later. A retry whose first try did take it
// — the reply was lost, or the mark's acknowledgement — finds the mark and
// gets the capture again.
func (b *Box) takeKeeping(ctx context.Context, id string, rec record, rev uint64, retryKey string) (*inflight.Capture, error) {
	rec.TakenBy = retryKey
	m := nats.NewMsg("$KV." + SlotBucket + "." + id)
	m.Data = rec.encode()
	err := natsconn.Request(ctx, func(ctx context.Context) error {
		_, err := b.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(retryGrace))
		return err
	})
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		// Changed meanwhile: taken by this very collection (an earlier try
		// whose acknowledgement was lost), by another, or cancelled.
		now, _, err := b.read(ctx, id)
		if err != nil {
			return nil, err
		}
		return retaken(id, now, retryKey)
	}
	if err != nil {
		return nil, unavailable("taking the capture", err)
	}
	c := *rec.Capture
	return &c, nil
}

// purge removes an answered slot if it is still at the revision a, so the
// capture is handed to exactly one collector.
func (b *Box) purge(ctx context.Context, id string, a answer) (*inflight.Capture, error) {
	err := b.slots.Purge(ctx, id, jetstream.LastRevision(a.Revision), jetstream.PurgeTTL(time.Second))
	switch {
	case streams.Conflict(err):
		return nil, inflight.Absent(id) // collected or cancelled by another call meanwhile
	case err != nil:
		return nil, unavailable("taking the capture", err)
	}
	c := a.Capture
	return &c, nil
}

// Cancel answers an invocation posted by caller with the cancelled capture
// and removes it (unless keep is set: then the slot is answered with it),
// telling the replica that holds the host's read. One answered already
// returns (and, without keep, yields) its capture.
func (b *Box) Cancel(ctx context.Context, caller, id, reason string, keep bool) (inflight.Capture, error) {
	b.spoilCall(id) // before the slot changes (precount.go)
	for attempt := 0; ; attempt++ {
		rec, rev, err := b.read(ctx, id)
		if err != nil {
			return inflight.Capture{}, err
		}
		if rec.Poster != caller || rec.TakenBy != "" {
			return inflight.Capture{}, inflight.Absent(id)
		}
		if rec.Capture != nil {
			if keep {
				return *rec.Capture, nil
			}
			c, err := b.purge(ctx, id, answer{Revision: rev, Capture: *rec.Capture})
			if err != nil {
				return inflight.Capture{}, err
			}
			return *c, nil
		}
		c := inflight.Cancelled(id, reason)
		var newRev uint64
		if keep {
			rec.Capture, rec.Cancelled = &c, true
			newRev, err = b.slots.Update(ctx, id, rec.encode(), rev)
		} else {
			err = b.slots.Purge(ctx, id, jetstream.LastRevision(rev), jetstream.PurgeTTL(time.Second))
		}
		if streams.Conflict(err) && attempt < 3 {
			continue // answered, reported on or handed again meanwhile
		}
		if err != nil {
			return inflight.Capture{}, unavailable("cancelling the invocation", err)
		}
		b.announce(readPrefix+rec.Client+".cancel", []byte(id))
		if keep {
			b.announceAnswer(id, newRev, rec.Poster, c) // a waiting collection takes it
		} else {
			b.announce(donePrefix+id, nil) // waiters wake and find the slot gone
		}
		if b.cfg.Answered != nil {
			b.cfg.Answered(id, rec.Client, rec.Posted, c, inflight.ByCancel)
		}
		return c, nil
	}
}
