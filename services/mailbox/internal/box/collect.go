package box

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/switchboard-run/switchboard/kit/suite/natsconn"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Collect returns the capture of an invocation posted by caller (taking
// it), or nil while it runs, waiting up to wait for the answer first. With
// a retry key, a Collect with the same key within a minute gets the capture
// again.
func (b *Box) Collect(ctx context.Context, caller, id string, wait time.Duration, retryKey string) (*Capture, error) {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	return b.collect(ctx, caller, id, wait > 0, retryKey, false)
}

// Await waits until the invocation is answered or ctx ends; it returns the
// capture (taking it) or nil when ctx ended first.
func (b *Box) Await(ctx context.Context, caller, id string) (*Capture, error) {
	return b.collect(ctx, caller, id, true, "", false)
}

// collect looks for id here, then in its record, then (unless local: asked
// by another replica) in the other replicas' memory.
func (b *Box) collect(ctx context.Context, caller, id string, wait bool, key string, local bool) (*Capture, error) {
	var look context.CancelFunc
	for {
		if ctx.Err() != nil && look == nil { // the wait ran out: one more look, with time for its reads
			ctx, look = context.WithTimeout(context.WithoutCancel(ctx), natsconn.RequestTimeout)
			defer look()
			wait = false
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, nil
		}
		s := b.slots[id]
		if s != nil && s.poster == caller {
			if s.state == answered && s.writing == nil { // in memory only: a durable answer is in its record
				b.remove(s)
				if key != "" {
					b.taken.keep(b.cfg.Clock.Now(), id, caller, key, *s.capture)
				}
				b.mu.Unlock()
				return s.capture, nil
			}
			if !wait && s.writing == nil {
				b.mu.Unlock()
				return nil, nil
			}
			// Counted while it waits, so that an answer or a cancel leaves
			// the capture here for it.
			s.collectors++
			if key != "" {
				s.keyed++
			}
			ch := b.news(id)
			if s.writing != nil {
				ch = s.writing
			}
			durable := s.rev != 0
			b.mu.Unlock()
			// A durable one is waited for recordPoll at a time: its record
			// may move on unheard (a view that stalled as a NATS node went).
			poll, stop := ctx, context.CancelFunc(func() {})
			if durable {
				poll, stop = context.WithTimeout(ctx, recordPoll)
			}
			woken := b.wait(poll, ch)
			stop()
			if (!woken && ctx.Err() != nil) || b.isClosing() {
				wait = false // one more look, without waiting
			}
			b.mu.Lock()
			s.collectors--
			if key != "" {
				s.keyed--
			}
			stale := !woken && s.rev != 0 && s.writing == nil && s.state != answered && b.slots[id] == s
			r := &rec{client: s.client, id: s.id, rev: s.rev}
			b.mu.Unlock()
			if stale && b.reread(r) {
				b.recs.lag[partition(r.client)].readNewer()
			}
			continue
		}
		if poster, ok := b.arriving[id]; ok && poster == caller { // its answer is on its way from home
			if !wait {
				b.mu.Unlock()
				return nil, nil
			}
			ch := b.news(id)
			b.mu.Unlock()
			if !b.wait(ctx, ch) {
				wait = false
			}
			continue
		}
		again := b.taken.again(b.cfg.Clock.Now(), id, caller, key)
		r := b.view[id]
		b.mu.Unlock()
		switch {
		case again != nil:
			return again, nil
		case r != nil:
			c, err, done := b.collectRecord(ctx, r, caller, key, wait)
			if done {
				return c, err
			}
			wait = c == nil && err == nil && wait
			continue
		}
		if found, err := b.lookup(ctx, id); err != nil || found {
			if err != nil {
				return nil, err
			}
			continue
		}
		if home := b.elsewhere(ctx, id, local); home != "" {
			return b.collectAt(ctx, home, caller, id, key, wait)
		}
		return nil, inflight.Absent(id)
	}
}

// collectAt collects id at replica home, which holds it in memory: a wait
// is asked for pollWait at a time under a retry key (the caller's, or one
// of its own), so an ask whose reply was lost is asked again and gets the
// capture home took for it.
func (b *Box) collectAt(ctx context.Context, home, caller, id, key string, wait bool) (*Capture, error) {
	if key == "" {
		key = "relay-" + inflight.NewID()
	}
	end := time.Now()
	if wait {
		end = end.Add(untilDeadline(ctx))
	}
	for lost := 0; ; {
		w := min(time.Until(end), pollWait)
		if w < time.Millisecond {
			w = 0
		}
		r, err := b.request(ctx, mbxPrefix+home, &ask{Op: "collect", Caller: caller, ID: id, Wait: w, Key: key})
		switch {
		case errors.Is(err, errSilent) && lost < maxLostReplies && ctx.Err() == nil && b.alive(ctx, home):
			lost++
			continue // the reply was lost; home keeps what it took for the key
		case err != nil:
			return nil, err
		case r.Capture == nil && time.Until(end) >= time.Millisecond:
			continue
		}
		return r.Capture, nil
	}
}

// recordPoll is how long a wait for a durable invocation's answer trusts
// the view before it reads the record itself.
const recordPoll = 3 * time.Second

// maxLostReplies bounds the asks again after replies lost in a row.
const maxLostReplies = 3

// collectRecord collects a durable invocation: taken when answered,
// answered itself when its timeout ran out before any host took it.
// done is false when the caller should look again (after a wait, when
// asked to wait and wait returned true in c == nil && err == nil).
func (b *Box) collectRecord(ctx context.Context, r *rec, caller, key string, wait bool) (c *Capture, err error, done bool) {
	if r.poster != caller {
		return nil, inflight.Absent(r.id), true
	}
	switch r.state {
	case stQueued:
		if r.due != 0 && inflight.Past(time.Unix(0, r.due), b.cfg.Clock.Now()) {
			if err := b.timeoutRecord(ctx, r); err != nil {
				return nil, err, true
			}
			return nil, nil, false
		}
		if !wait {
			return nil, nil, !b.reread(r)
		}
		b.mu.Lock()
		if b.view[r.id] != r || b.slots[r.id] != nil { // it moved while unlocked: its news is past
			b.mu.Unlock()
			return nil, nil, false
		}
		ch := b.news(r.id)
		b.mu.Unlock()
		// No news for recordPoll: the record itself, should this view lag
		// or have stalled (it is then opened again); still queued, the
		// home is told again, should its view have missed the post.
		poll, stop := context.WithTimeout(ctx, recordPoll)
		woken := b.wait(poll, ch)
		stop()
		if !woken {
			if b.reread(r) {
				b.recs.lag[partition(r.client)].readNewer()
				return nil, nil, false
			}
			b.nudge(r)
			return nil, nil, ctx.Err() != nil || b.isClosing()
		}
		return nil, nil, false
	case stTaken:
		full, err := b.recs.get(ctx, r.client, r.id)
		if err != nil {
			return nil, refused(err), true
		}
		if full == nil || key == "" || (full.body.GetTakenBy() != key && full.body.GetTakenBy() != callKey) {
			return nil, inflight.Absent(r.id), true
		}
		return captureOf(full.body), nil, true
	}
	full, err := b.recs.get(ctx, r.client, r.id)
	switch {
	case err != nil:
		return nil, refused(err), true
	case full == nil || full.rev != r.rev:
		b.heardAgain(r, full)
		return nil, nil, false
	}
	if key != "" {
		body := proto.CloneOf(full.body)
		body.TakenBy = key
		_, err = b.recs.put(ctx, r.client, r.id, stTaken, body, r.rev, retryGrace)
	} else {
		err = b.recs.remove(ctx, r.client, r.id, r.poster, r.rev)
	}
	if err == errConflict {
		return nil, nil, false
	}
	if err != nil {
		return nil, refused(err), true
	}
	return captureOf(full.body), nil, true
}

// nudge makes sure r, still queued after a wait without news, is queued
// at its client's home: here, or told to the home again.
func (b *Box) nudge(r *rec) {
	b.mu.Lock()
	b.restub(r)
	q := b.queues[r.client]
	home := q != nil && q.sub != nil
	b.mu.Unlock()
	if !home {
		b.tellHome(r)
	}
}

// reread reads r's record once, bounded by a request's time, and reports
// whether it moved on from what the view holds (the view then hears it).
// A wait that saw no news ends in one read, so a view lagging behind its
// stream (a consumer being reset after a NATS node died) delays an answer
// by one wait at most.
func (b *Box) reread(r *rec) bool {
	ctx, cancel := context.WithTimeout(context.Background(), natsconn.RequestTimeout)
	defer cancel()
	full, err := b.recs.get(ctx, r.client, r.id)
	if err != nil || (full != nil && full.rev <= r.rev) {
		return false
	}
	b.heardAgain(r, full)
	return true
}

// heardAgain updates the view from a record read whole (nil: gone).
func (b *Box) heardAgain(was, now *rec) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now == nil {
		now = &rec{client: was.client, id: was.id, state: stRemoved, rev: was.rev + 1}
	}
	b.hear(now)
}

// lookup asks the records for an id this replica's view has not heard
// of (posted a moment ago through another replica), and hears it.
func (b *Box) lookup(ctx context.Context, id string) (bool, error) {
	r, err := b.recs.find(ctx, id)
	if err != nil {
		return false, refused(err)
	}
	if r == nil {
		return false, nil
	}
	b.mu.Lock()
	b.hear(r)
	b.mu.Unlock()
	return true, nil
}

// elsewhere names the replica whose memory holds id, unless asked by
// another replica already.
func (b *Box) elsewhere(ctx context.Context, id string, local bool) string {
	if local {
		return ""
	}
	return b.locate(ctx, id)
}

// untilDeadline is what is left of ctx (30 s when it has no deadline).
func untilDeadline(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 30 * time.Second
}
