package jsbox

import (
	"context"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/streams"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// waiter is one call of this replica waiting for an invocation's answer.
//
// A Call's own wait is special: until Call returns, nobody but its poster
// knows the invocation's id (the mailbox made it, and sends it only to the
// poster, in the Call's header), and nobody else can collect or cancel it.
// A completion on this replica may then hand the capture straight to the
// waiting call and take the slot (purge it, at the revision the hand-off
// left, so a cancel meanwhile wins) in the same write, instead of storing
// the capture for the call to take with a second write. The rules still
// hold: the slot is gone before the queue message is acked (a redelivery
// finds nothing to run), and read once is the purge itself. A replica that
// dies between the purge and the Call's reply loses the capture with the
// call waiting for it; a poster that kept the id from the header finds the
// invocation absent, and calls again.
//
// A Capture's wait is handed its capture the same way once the slot has
// shown that the caller posted the invocation and that it is not answered
// yet (collects): what a hand-off takes is then what the collection would
// have taken, read once. Only a collection without a retry key: one with
// a key keeps the slot a while for its retry, which a hand-off's purge
// would not.
type waiter struct {
	ch  chan *nats.Msg // the answer's announcement; capacity 1
	own bool           // a Call's wait, for an id only its poster knows
	// collects (guarded by Box.mu) marks a Capture's wait by the
	// invocation's poster on a slot not answered yet; keyed, one with a
	// retry key, which is never handed its capture.
	collects, keyed bool
	// taken receives the capture a completion took for this call, or nil
	// when it could not take it (the slot tells then); capacity 1.
	taken chan *inflight.Capture
	// claimed and gone are guarded by Box.mu: a completion is handing the
	// capture over; the wait is over.
	claimed, gone bool
	// handed (guarded by Box.mu) is set when a read handed the invocation
	// out through the Call's precount. postDone, a Call's, is closed once
	// its post is over; posted and rev are then the slot as the Call
	// posted it when it precounted (rev 0 otherwise, and when it failed).
	handed   bool
	spoiled  bool // a cancel may have changed the slot: no hand-off on the precount
	postDone chan struct{}
	posted   record
	rev      uint64
	// holds marks an Invoke's hold on its precount (precount.go): it waits
	// for no answer, and release (guarded by Box.mu) ends it.
	holds   bool
	release *time.Timer
}

// Call posts p and awaits its answer until wait ends. It listens for the
// answer before it posts, so it need not read the slot to learn what it
// knows already: that the invocation is not answered yet.
func (b *Box) Call(ctx, wait context.Context, p inflight.Post) (*inflight.Capture, error) {
	w := b.listen(p.ID, true)
	defer b.unlisten(p.ID, w)
	precount := b.precountHere(p.Client)
	rec, rev, err := b.post(ctx, p, precount)
	if precount && err == nil {
		b.mu.Lock()
		w.posted, w.rev = rec, rev
		b.mu.Unlock()
	}
	close(w.postDone)
	if err != nil {
		return nil, err
	}
	return b.waitAnswer(wait, p.Poster, p.ID, "", w)
}

// listen registers for the answer of id until unlisten.
func (b *Box) listen(id string, own bool) *waiter {
	return b.register(id, &waiter{own: own})
}

// register adds w, its channels made, to the waiters of id.
func (b *Box) register(id string, w *waiter) *waiter {
	w.ch, w.taken = make(chan *nats.Msg, 1), make(chan *inflight.Capture, 1)
	if w.own {
		w.postDone = make(chan struct{})
	}
	b.mu.Lock()
	b.waiters[id] = append(b.waiters[id], w)
	b.mu.Unlock()
	return w
}

// unlisten ends w's wait; it reports whether a completion is handing it
// the capture meanwhile (its outcome then comes on w.taken), and whether
// the Call's precount went unused (no read handed the invocation out).
func (b *Box) unlisten(id string, w *waiter) (claimed, unused bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !w.gone {
		w.gone = true
		ws := slices.DeleteFunc(b.waiters[id], func(o *waiter) bool { return o == w })
		if len(ws) == 0 {
			delete(b.waiters, id)
		} else {
			b.waiters[id] = ws
		}
	}
	return w.claimed, w.rev != 0 && !w.handed
}

// claim returns the waiting Call (or Capture) of id on this replica,
// marked as being handed its capture, when it waits for it alone (an
// Invoke's hold on its precount waits for no answer).
func (b *Box) claim(id string) *waiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	var w *waiter
	for _, o := range b.waiters[id] {
		if o.holds {
			continue
		}
		if w != nil {
			return nil
		}
		w = o
	}
	if w == nil || !(w.own || w.collects && !w.keyed) || w.claimed || len(w.taken) > 0 {
		return nil
	}
	w.claimed = true
	return w
}

// handOver takes the slot of id, at revision rev, for the claimed waiter
// w, which the caller then hands the capture. On an error the slot is as
// it was (or the error says it changed): w is let go to wait for the
// answer as usual.
func (b *Box) handOver(ctx context.Context, w *waiter, id string, rev uint64) error {
	err := b.slots.Purge(ctx, id, jetstream.LastRevision(rev), jetstream.PurgeTTL(time.Second))
	if err != nil && !streams.Conflict(err) {
		// No reply: whether the purge was made, the slot says.
		if _, _, rerr := b.read(ctx, id); isAbsent(rerr) {
			err = nil
		}
	}
	if err != nil {
		b.mu.Lock()
		w.claimed = false
		b.mu.Unlock()
		w.taken <- nil
	}
	return err
}

func (b *Box) await(ctx context.Context, caller, id, retryKey string) (*inflight.Capture, error) {
	// Listen before reading, so an answer between the two is not missed.
	w := b.listen(id, false)
	defer b.unlisten(id, w)
	if c, err := b.collect(ctx, caller, id, retryKey); c != nil || err != nil {
		return c, err
	}
	// The slot named caller its poster, unanswered: a completion on this
	// replica may hand the capture over, unless a retry key keeps it.
	b.mu.Lock()
	w.collects, w.keyed = true, retryKey != ""
	b.mu.Unlock()
	return b.waitAnswer(ctx, caller, id, retryKey, w)
}

// waitAnswer waits for id's answer through w until ctx ends, and takes it.
func (b *Box) waitAnswer(ctx context.Context, caller, id, retryKey string, w *waiter) (*inflight.Capture, error) {
	for waiting := true; waiting; {
		select {
		case c := <-w.taken:
			if c != nil {
				return c, nil
			}
			// The completion could not take it for us: it is stored as
			// usual and announced, or the slot changed.
		case m := <-w.ch:
			// The answer names the revision to purge at; a collection with
			// a retry key keeps the slot a while instead, and reads it for
			// that.
			if a, ok := decodeAnswer(m.Data); ok && retryKey == "" {
				if c, err := b.purge(ctx, id, a); c != nil || err != nil {
					return c, err
				}
			}
			// A cancel, a capture too large to announce, or an answer
			// another collector took: the slot says how it stands.
			waiting = false
		case <-ctx.Done():
			waiting = false
		case <-b.closing:
			waiting = false
		}
	}
	claimed, unused := b.unlisten(id, w)
	if unused {
		// Nobody handed it out while the Call waited; once the Call returns,
		// others may know the id, so its precount goes back now.
		b.unprecount(ctx, id, w.posted, w.rev)
	}
	if claimed { // a completion is handing it over: its word decides
		if c := <-w.taken; c != nil {
			return c, nil
		}
	}
	// The wait ended (or its answer was taken by someone else): the slot
	// says how it stands.
	return b.collect(context.WithoutCancel(ctx), caller, id, retryKey)
}
