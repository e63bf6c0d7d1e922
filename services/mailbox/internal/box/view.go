package box

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/presence"
)

// follow keeps this replica's view of partition k's records: an ordered
// consumer of their headers only, so no input travels to a replica that
// does not hand it out. It is what brings a durable invocation to the
// replica its host reads through, and an answer to the poster's waits.
func (b *Box) follow(ctx context.Context, k int) {
	loop := retry.Loop{Policy: rewatch}
	_ = loop.Forever(ctx, func(ctx context.Context) (bool, error) {
		c, err := b.js.OrderedConsumer(ctx, StreamPrefix+itoa(k), jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, HeadersOnly: true})
		if err != nil {
			return false, err
		}
		cc, err := c.Consume(func(m jetstream.Msg) {
			if md, err := m.Metadata(); err == nil {
				b.heard(m.Subject(), m.Headers(), md.Sequence.Stream)
			}
		}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			b.log.Debug("the view of a partition's records lags", "partition", k, "err", err)
		}))
		if err != nil {
			return false, err
		}
		defer cc.Stop()
		check := time.NewTicker(viewStalledAfter / 6)
		defer check.Stop()
		closed := cc.Closed() // once: each call starts a goroutine of its own
		// The client resets the consumer itself; one that gave up, or
		// stalled, is made anew.
		for {
			select {
			case <-ctx.Done():
				return true, nil
			case <-closed:
				return false, fmt.Errorf("the view of partition %d stopped", k)
			case now := <-check.C:
				if b.recs.lag[k].stalled(now) {
					b.log.Warn("the view of a partition's records did not hear this replica's own write; opening it again", "partition", k, "after", viewStalledAfter)
					return true, nil
				}
			}
		}
	})
}

// heard applies one record's change to the view, and to the slot this
// replica holds of it.
func (b *Box) heard(subj string, h nats.Header, seq uint64) {
	r, ok := parse(subj, h, seq)
	if !ok {
		return
	}
	b.recs.lag[partition(r.client)].heardUpTo(seq, time.Now())
	if h.Get(markerReason) != "" {
		r.state = stRemoved // expired
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hear(r)
}

// hear applies r, unless the view has a later revision. Called locked.
func (b *Box) hear(r *rec) {
	old := b.view[r.id]
	if old != nil && old.rev >= r.rev {
		return
	}
	if old != nil {
		delete(b.backlog[old.client], old.id)
	}
	if r.state == stRemoved {
		delete(b.view, r.id)
	} else {
		b.view[r.id] = r
	}
	if r.state == stQueued {
		if b.backlog[r.client] == nil {
			b.backlog[r.client] = map[string]*rec{}
		}
		b.backlog[r.client][r.id] = r
	}
	if len(b.backlog[r.client]) == 0 {
		delete(b.backlog, r.client)
	}
	s := b.slots[r.id]
	switch {
	case s != nil && s.rev != 0 && s.rev < r.rev && r.state == stQueued:
		s.rev = r.rev // written again (its notes, its hand-offs): the revision to write at
	case s != nil && s.rev != 0 && s.rev < r.rev && s.writing == nil:
		// Answered, cancelled or removed elsewhere: its host hears of a cancel.
		if q := b.queues[s.client]; q != nil && q.handed.has(s) && q.reader != nil {
			q.reader.cancelled(s.id)
		}
		b.remove(s)
	case s == nil && r.state == stQueued:
		if q := b.queues[r.client]; q != nil {
			b.addStub(q, r)
		}
	}
	b.notify(r.id)
}

// addStub queues a durable invocation heard of for a client this replica
// is home to; its input is read when a read takes it.
func (b *Box) addStub(q *queue, r *rec) {
	if r.body == nil {
		s := &slot{id: r.id, client: r.client, poster: r.poster, size: r.size, rev: r.rev, posted: b.cfg.Clock.Now()}
		s.expires = s.posted.Add(b.cfg.TTL).UnixNano()
		b.add(q, s)
		return
	}
	s := slotOf(r, b.cfg.TTL)
	s.handoffs += q.bumped(s.posted)
	b.add(q, s)
}

// restub queues r here again when this replica is its client's home, its
// view holds r as it is and no slot holds it: a view that heard r while
// the client read elsewhere, or a stub lost in a NATS failover, would
// otherwise leave it queued with its host connected. Called locked.
func (b *Box) restub(r *rec) {
	v := b.view[r.id]
	if b.slots[r.id] != nil || v == nil || v.state != stQueued || v.rev != r.rev {
		return
	}
	if q := b.queues[r.client]; q != nil && q.sub != nil {
		b.addStub(q, v)
	}
}

// bumped is the hand-off a record posted at t gets when this replica took
// its client from one that died: it may have handed it out unrecorded.
func (q *queue) bumped(t time.Time) int32 {
	if !q.bump.IsZero() && t.Before(q.bump) {
		return 1
	}
	return 0
}

// watchReplicas keeps the set of the other live replicas, from their
// heartbeats: a lookup that no replica's memory answers waits for them all.
func (b *Box) watchReplicas(ctx context.Context, kv jetstream.KeyValue, synced func()) {
	loop := retry.Loop{Policy: rewatch}
	_ = loop.Forever(ctx, func(ctx context.Context) (bool, error) {
		w, err := kv.Watch(ctx, presence.ReplicaKey("*"))
		if err != nil {
			return false, err
		}
		defer func() { _ = w.Stop() }()
		for e := range w.Updates() {
			if e == nil {
				synced() // the snapshot's end
				continue
			}
			name := strings.TrimPrefix(e.Key(), presence.ReplicaKey(""))
			b.mu.Lock()
			if e.Operation() == jetstream.KeyValuePut && name != b.name {
				b.replicas[name] = true
			} else {
				delete(b.replicas, name)
			}
			b.others.Store(int32(len(b.replicas)))
			b.mu.Unlock()
		}
		return true, ctx.Err()
	})
}

// Others reports whether another live replica is known: with none, a
// change published for the other replicas' watchers would reach nobody.
func (b *Box) Others() bool { return b.others.Load() > 0 }

// watchConnection ends every read when NATS is lost: another replica may
// take this one's hosts meanwhile, and two homes for a client would split
// its hand-offs. When NATS is back, what is left of a client not reading
// goes to its record, for whichever replica its host reads through now.
func (b *Box) watchConnection(ctx context.Context) {
	// A lost connection reports RECONNECTING (DISCONNECTED only without reconnects).
	ch := b.nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CONNECTED)
	defer b.nc.RemoveStatusListener(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case st := <-ch:
			if st != nats.CONNECTED {
				b.orphan()
			} else {
				go b.rehome(ctx)
			}
		}
	}
}

// orphan ends every read and stops hearing for its clients.
func (b *Box) orphan() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, q := range b.queues {
		if q.reader != nil {
			// Over now, not at its stream's close: rehome writes what it
			// held, and it hands out nothing more.
			q.reader.end(endNATS)
			q.reader = nil
		}
		if q.sub != nil {
			_ = q.sub.Unsubscribe()
			q.sub = nil
		}
	}
}

// rehome writes what orphaned clients left here to their records, and
// drops them; a write refused (a stream electing its leader) is tried
// again while NATS stays, since no other replica can ask for them.
func (b *Box) rehome(ctx context.Context) {
	warned := false
	loop := retry.Loop{Policy: rewatch, Retryable: func(error) bool { return b.nc.IsConnected() },
		OnRetry: func(err error, _ time.Duration) {
			if !warned {
				b.log.Warn("a client's invocations stay in this replica's memory; trying again", "err", err)
				warned = true
			}
		}}
	_ = loop.Do(ctx, func(ctx context.Context) error {
		b.mu.Lock()
		var left []*queue
		for _, q := range b.queues {
			if q.sub == nil && q.reader == nil {
				left = append(left, q)
			}
		}
		b.mu.Unlock()
		var errs []error
		for _, q := range left {
			errs = append(errs, b.spill(ctx, q))
		}
		return errors.Join(errs...)
	})
}

// rewatch is how soon a broken watch of NATS is opened again: the view is
// what hands durable invocations out, so it comes back in well under a
// second once NATS does.
var rewatch = retry.Policy{Base: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2, Jitter: 0.2, Stable: 10 * time.Second}

func itoa(k int) string { return strconv.Itoa(k) }
