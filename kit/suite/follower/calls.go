package follower

import (
	"context"
	"fmt"
	"slices"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// call is one invocation the follower holds: queued for a slot, or running.
type call struct {
	inv    *mailboxv1.Invocation
	runner Runner
	stream context.Context    // ends with the stream that delivered it
	known  *mailboxv1.Capture // answered before: sent again, not run again
	cancel context.CancelFunc // set when it starts
	// deadline ends the run, counted from when it was read; overrun says
	// which deadline it is.
	deadline time.Time
	overrun  *Overrun
}

// take queues an invocation for a slot, once: a redelivery (the same id,
// the idempotency key) of one queued or running here is dropped, as that
// one will answer it. The reader took it only because there was room
// (awaitRoom).
func (f *Follower) take(ctx context.Context, r Runner, inv *mailboxv1.Invocation) {
	id := inv.GetInvocation()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, held := f.calls[id]; held {
		return
	}
	c := &call{inv: inv, runner: r, stream: ctx, known: f.recent.get(id)}
	c.deadline, c.overrun = f.limit(inv, time.Now())
	f.calls[id] = c
	f.queue = append(f.queue, c)
	f.queued += len(inv.GetInput())
	f.start()
}

// awaitRoom waits until the follower may read another event: while a slot
// is free, or fewer than Queued invocations (and QueuedBytes of input) wait
// for one. Otherwise the stream is not read, and the invocations behind
// stay with the mailbox (or in flow control), not in this process.
func (f *Follower) awaitRoom(ctx context.Context) error {
	f.mu.Lock()
	for f.free == 0 && (len(f.queue) >= f.o.Queued || f.queued >= f.o.QueuedBytes) {
		f.mu.Unlock()
		select {
		case <-f.room:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
	}
	f.mu.Unlock()
	return nil
}

// start runs queued calls while slots are free. f.mu is held.
func (f *Follower) start() {
	for {
		j, ok := f.next()
		if !ok {
			return
		}
		f.dispatch(j)
	}
}

// next takes the first queued call that may run, with a free slot. The
// slot is taken before the call goes to a goroutine. A call whose stream
// has ended is dropped instead: the mailbox hands it out again at the
// next read. f.mu is held.
func (f *Follower) next() (job, bool) {
	for f.free > 0 && len(f.queue) > 0 {
		c := f.queue[0]
		f.unqueue(0)
		if c.stream.Err() != nil {
			delete(f.calls, c.inv.GetInvocation())
			continue
		}
		f.free--
		ctx, cancel := f.runContext(c)
		c.cancel = cancel
		f.wg.Add(1)
		return job{ctx, c}, true
	}
	return job{}, false
}

// serve runs one call (or takes its capture from memory), sends the
// capture, and gives its slot to the next queued call, which it returns
// for the same goroutine to run.
func (f *Follower) serve(ctx context.Context, c *call) (job, bool) {
	defer f.wg.Done()
	id := c.inv.GetInvocation()
	capture := c.known
	ctx, span := f.runSpan(ctx, c.inv)
	defer span.End()
	overrun, late := Overran(ctx) // its time ran out before it had a slot
	switch {
	case capture != nil:
	case late:
		capture = overrunCapture(id, overrun, false)
	default:
		rep := f.newReporter(ctx, id)
		capture = c.runner.Run(context.WithValue(ctx, reporterKey{}, rep), c.inv)
		rep.close() // before the capture: no note follows it
		if overrun, late = Overran(ctx); late && capture == nil {
			capture = overrunCapture(id, overrun, true)
		}
	}
	// A run its poster cancelled was answered by the mailbox already; one
	// RunContext ended has nobody left to answer it. One that overran is
	// answered: nobody else will.
	answer := capture != nil && (ctx.Err() == nil || late)
	if answer && !f.answer(ctx, id, capture) {
		f.complete(ctx, id, capture)
	}
	c.cancel()
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.calls, id)
	if answer {
		f.recent.put(id, capture)
	}
	f.free++
	f.wake() // a reader waiting for a free slot
	return f.next()
}

// cancel ends a call whose poster cancelled it: a running one's context
// ends (a runner passes that on: the bridge's SDK sends
// notifications/cancelled); a queued one never runs.
func (f *Follower) cancel(id string) {
	f.mu.Lock()
	c := f.calls[id]
	var stop context.CancelFunc
	if c != nil {
		if stop = c.cancel; stop == nil {
			f.unqueue(slices.Index(f.queue, c))
			delete(f.calls, id)
		}
	}
	f.mu.Unlock()
	if c == nil {
		return
	}
	if stop != nil {
		stop()
	}
	f.notice(fmt.Sprintf("invocation %s was cancelled by its poster", id))
}

// dropQueued forgets the calls still waiting for a slot when their stream
// ends: the mailbox hands them out again at the next read.
func (f *Follower) dropQueued() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.queue) > 0 {
		delete(f.calls, f.queue[0].inv.GetInvocation())
		f.unqueue(0)
	}
}

// unqueue removes the queued call at i and wakes a reader waiting for
// room. f.mu is held.
func (f *Follower) unqueue(i int) {
	f.queued -= len(f.queue[i].inv.GetInput())
	f.queue = slices.Delete(f.queue, i, i+1)
	f.wake()
}

// wake tells a reader waiting in awaitRoom to look again. f.mu is held.
func (f *Follower) wake() {
	select {
	case f.room <- struct{}{}:
	default:
	}
}
