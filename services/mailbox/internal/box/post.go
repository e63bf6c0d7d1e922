package box

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// newSlot is p as this replica holds it.
func (b *Box) newSlot(p inflight.Post) *slot {
	now := b.cfg.Clock.Now().Truncate(time.Millisecond) // as a record keeps it
	s := &slot{id: p.ID, client: p.Client, poster: p.Poster, tool: p.Tool, input: p.Input, cwd: p.Cwd, mcpParams: p.MCPParams, trace: p.Trace,
		front: p.Front, posted: now, expires: now.Add(b.cfg.TTL).UnixNano(), timeout: p.Timeout, deadline: p.Deadline}
	s.size = inflight.PostSize(s.input, s.tool, s.cwd, s.mcpParams)
	return s
}

// admit refuses a post past the bounds: this replica's memory, and the
// client's invocations here or in the backlog. Called locked.
func (b *Box) admit(client string) error {
	switch {
	case b.closed:
		return inflight.ErrShuttingDown
	case len(b.slots) >= b.cfg.MaxSlots:
		return inflight.BoxFull(len(b.slots))
	}
	n := len(b.backlog[client])
	if q := b.queues[client]; q != nil {
		n = max(n, q.pending.n+q.handed.n)
	}
	if n >= b.cfg.MaxQueued {
		return inflight.QueueFull(client, n)
	}
	return nil
}

// Post queues a durable invocation (an Invoke, a Task): its record is
// written before the post returns, and a host reading here gets it at
// once; one reading elsewhere hears of it through its replica's view.
func (b *Box) Post(ctx context.Context, p inflight.Post) error {
	s := b.newSlot(p)
	b.mu.Lock()
	err := b.admit(p.Client)
	b.mu.Unlock()
	if err != nil {
		return err
	}
	rev, err := b.recs.create(ctx, p.Client, p.ID, s.stored(), b.cfg.TTL)
	if err != nil {
		return refused(err)
	}
	s.rev = rev
	b.mu.Lock()
	q := b.queues[p.Client]
	if q != nil && b.slots[p.ID] == nil {
		b.add(q, s)
	}
	b.hear(&rec{client: p.Client, id: p.ID, poster: p.Poster, state: stQueued, size: s.size, rev: rev})
	b.mu.Unlock()
	if q == nil || q.sub == nil { // its home, if any, hears of it now, not when its view does
		b.tellHome(&rec{client: p.Client, id: p.ID, poster: p.Poster, state: stQueued, size: s.size, rev: rev})
	}
	return nil
}

// tellHome tells the replica r's client reads through, if any, of r
// queued, at once rather than through its view.
func (b *Box) tellHome(r *rec) {
	p := inflight.Post{ID: r.id, Client: r.client, Poster: r.poster}
	if data, err := json.Marshal(&ask{Op: "queued", From: b.name, Post: &p, Rev: r.rev, Size: r.size}); err == nil {
		_ = b.nc.Publish(hostPrefix+r.client, data)
	}
}

// Call posts p and waits for its answer until wait ends, writing nothing
// durable while its client's host reads: in memory here when the host
// reads here, handed to the replica it reads through otherwise, and to
// the backlog only when it reads nowhere.
func (b *Box) Call(ctx, wait context.Context, p inflight.Post) (*Capture, error) {
	b.mu.Lock()
	if q := b.queues[p.Client]; q != nil && q.sub != nil { // not orphaned
		if err := b.admit(p.Client); err != nil {
			b.mu.Unlock()
			return nil, err
		}
		b.add(q, b.newSlot(p))
		b.mu.Unlock()
		return b.collect(wait, p.Poster, p.ID, true, "", true)
	}
	b.mu.Unlock()
	r, err := b.request(ctx, hostPrefix+p.Client, &ask{Op: "post", Post: &p})
	switch {
	case err == nil && r.Held:
		return b.awaitAt(ctx, wait, r.Replica, p)
	case err == nil || errors.Is(err, errNoHome):
		if err := b.Post(ctx, p); err != nil {
			return nil, err
		}
		return b.collect(wait, p.Poster, p.ID, true, "", true)
	case errors.Is(err, errSilent): // the home died with the ask; it may have taken it
		if home := b.locate(ctx, p.ID); home != "" {
			return b.awaitAt(ctx, wait, home, p)
		}
		return b.orphaned(wait, p.Poster, p.ID)
	}
	return nil, err
}

// take queues a call another replica posted for a client this replica is
// home to; false when it is not (the poster then writes it to the backlog).
func (b *Box) take(p *inflight.Post) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[p.Client]
	if q == nil || q.sub == nil {
		return false, nil
	}
	if err := b.admit(p.Client); err != nil {
		return false, err
	}
	s := b.newSlot(*p)
	s.awaited = true
	b.add(q, s)
	return true, nil
}

// awaitAt waits for the answer of a call held by replica home until wait
// ends, asking every second whether home still lives. If it died, the
// call's record (written if its host moved meanwhile) still answers it;
// otherwise the call fails in band, naming the handle. Home's reply to a
// wait that ended is waited for while the caller (ctx) still is, so that
// it is not lost between them; a silent home is not. An answer arriving
// after that is kept here, for its collection, which waits for it.
func (b *Box) awaitAt(ctx, wait context.Context, home string, p inflight.Post) (*Capture, error) {
	type result struct {
		c   *Capture
		err error
	}
	got := make(chan result, 1)
	// gone is set when the caller stopped waiting: from then on an answer
	// is kept here rather than handed over.
	var mu sync.Mutex
	gone := false
	go func() {
		c, err := b.fetch(wait, home, p)
		mu.Lock() // kept, or handed over before the caller can look and leave
		if gone {
			if c != nil {
				b.keep(p, *c)
			}
			b.landed(p.ID)
		}
		got <- result{c, err}
		mu.Unlock()
	}()
	settle := func(r result) (*Capture, error) {
		if errors.Is(r.err, errNoHome) {
			return b.orphaned(wait, p.Poster, p.ID)
		}
		return r.c, r.err
	}
	tick := time.NewTicker(pingEvery)
	defer tick.Stop()
	for {
		select {
		case r := <-got:
			return settle(r)
		case <-wait.Done():
			grace := time.NewTimer(min(untilDeadline(ctx)-replyMargin, findWait))
			select {
			case r := <-got:
				grace.Stop()
				return settle(r)
			case <-grace.C:
			case <-ctx.Done():
				grace.Stop()
			}
			mu.Lock()
			defer mu.Unlock()
			select {
			case r := <-got: // it came as the caller left
				if r.c != nil {
					return r.c, nil
				}
				return nil, nil
			default:
			}
			gone = true
			b.mu.Lock()
			b.arriving[p.ID] = p.Poster
			b.mu.Unlock()
			return nil, nil // collected by its handle later, here or at home
		case <-tick.C:
			if wait.Err() == nil && !b.alive(wait, home) {
				return b.orphaned(wait, p.Poster, p.ID)
			}
		}
	}
}

// fetch collects a call's answer at home under the call's retry key, until
// wait ends without it (or for a minute, once an answer may be on its way:
// the key gets home's copy again). A reply lost on the way (NATS
// reconnecting at either end) is asked for again while home lives.
func (b *Box) fetch(wait context.Context, home string, p inflight.Post) (*Capture, error) {
	began := time.Now()
	backoff := retry.NewBackoff(reask)
	for {
		w := pollWait
		if d, ok := wait.Deadline(); ok {
			w = min(w, time.Until(d))
		}
		// Not bound to wait: an answer taken at home must reach here.
		r, err := b.request(context.Background(), mbxPrefix+home, &ask{Op: "collect", Caller: p.Poster, ID: p.ID, Wait: max(w, time.Millisecond), Key: callKey})
		switch {
		case err == nil && r.Capture == nil && wait.Err() == nil:
			continue
		case err == nil:
			return r.Capture, nil
		case status.Code(err) == codes.Unavailable && time.Since(began) < retryGrace && b.alive(context.Background(), home):
			retry.Sleep(context.Background(), backoff.Next(), nil)
			continue
		}
		return nil, err
	}
}

// reask spaces fetch's asks after a reply was lost: home is alive, so soon.
var reask = retry.Policy{Base: 100 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.2}

// landed ends a call's wait for its answer from home. Called with its
// answer kept, or without one (its collection then looks elsewhere).
func (b *Box) landed(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.arriving, id)
	b.notify(id)
}

// replyMargin is the time a caller's reply needs to leave before its
// deadline.
const replyMargin = 50 * time.Millisecond

// keep holds an answer taken for a caller that gave up, for its collection.
func (b *Box) keep(p inflight.Post, c Capture) {
	s := b.newSlot(p)
	s.state, s.capture = answered, &c
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slots[s.id] = s
	b.expiry.pushBack(s)
	b.armSweep()
	b.notify(s.id)
}

// orphaned answers a call whose holder died: from its record, if it has one.
func (b *Box) orphaned(ctx context.Context, caller, id string) (*Capture, error) {
	if r, err := b.recs.find(ctx, id); err == nil && r != nil {
		b.mu.Lock()
		b.hear(r)
		b.mu.Unlock()
		return b.collect(ctx, caller, id, true, "", true)
	}
	return nil, status.Errorf(codes.Unavailable,
		"the mailbox replica holding invocation %s died before it was answered; its host may have run it — read the world before acting again", id)
}

// refused is a failed write of a record, as the poster hears it.
func refused(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	if strings.Contains(err.Error(), "maximum") {
		return status.Errorf(codes.ResourceExhausted, "the mailbox's durable store is full (%v); collect captures or wait for some to be answered", err)
	}
	return status.Errorf(codes.Unavailable, "the mailbox cannot reach NATS right now (%v); try again in a moment", err)
}
