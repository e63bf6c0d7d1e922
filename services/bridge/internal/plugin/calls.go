package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// Call is one tool call submitted to a backend.
type Call struct {
	ctx  context.Context
	tool string
	args string
	id   int64 // the request's id, once sent
	// progress takes the notices that name the request (progress.go).
	progress func(follower.Note)
	// ask asks the call's driver a question (asks.go); nil: it cannot be.
	ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

	once   sync.Once
	done   chan struct{}
	result *mailboxv1.Capture
	answer bool
}

func (c *Call) finish(result *mailboxv1.Capture, answer bool) {
	c.once.Do(func() {
		c.result, c.answer = result, answer
		close(c.done)
	})
}

// Wait blocks until the call has an outcome or its context ends. answer is
// false when there is no capture to give: the call was cancelled, or it was
// never sent because the backend ended or was stopped first (the mailbox
// hands it out again).
func (c *Call) Wait() (_ *mailboxv1.Capture, answer bool) {
	select {
	case <-c.done:
		return c.result, c.answer
	case <-c.ctx.Done():
		return nil, false
	}
}

// Hearing is what a call hears of its backend besides the reply.
type Hearing struct {
	// Progress receives the call's progress notes: the notices that name
	// its request, on the reading goroutine, so it must not block.
	Progress func(follower.Note)
	// Ask asks the call's driver a question the backend asked (asks.go)
	// and returns the answer's result; nil: the driver cannot be asked.
	Ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Submit queues a call of tool with args (JSON text). Calls are sent in the
// order they are submitted, one at a time; Submit never waits. Ending ctx
// cancels the call: unsent, it is never sent; sent, the backend is told.
func (b *Backend) Submit(ctx context.Context, tool, args string, hear Hearing) *Call {
	if hear.Progress == nil {
		hear.Progress = func(follower.Note) {}
	}
	c := &Call{ctx: ctx, tool: tool, args: args, progress: hear.Progress, ask: hear.Ask, done: make(chan struct{})}
	b.mu.Lock()
	if b.ended || b.closing {
		b.mu.Unlock()
		c.finish(nil, false)
		return c
	}
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
	return c
}

// dispatch sends the queued calls one at a time, starting the process for
// the first one when it was not started at mount.
func (b *Backend) dispatch() {
	for {
		c := b.next()
		if c == nil {
			return
		}
		if c.ctx.Err() != nil {
			c.finish(nil, false) // cancelled while queued: never sent
			continue
		}
		if err := b.Start(); err != nil {
			if errors.Is(err, ErrClosed) || b.Started() {
				c.finish(nil, false) // stopped, or died before c was sent: c goes to the next backend
			} else {
				c.finish(capture.Failed(capture.ExitNotFound, "tool %q of %q was not run: %v", c.tool, b.opts.Client, err), true)
			}
			continue
		}
		b.run(c)
	}
}

// next takes the first queued call, waiting for one; nil once the backend
// has ended.
func (b *Backend) next() *Call {
	for {
		b.mu.Lock()
		if b.ended {
			b.mu.Unlock()
			return nil
		}
		if len(b.queue) > 0 {
			c := b.queue[0]
			b.queue[0] = nil
			b.queue = b.queue[1:]
			b.mu.Unlock()
			return c
		}
		b.mu.Unlock()
		select {
		case <-b.wake:
		case <-b.done:
		}
	}
}

// run sends c's request and waits for its reply (the reader answers c), its
// cancellation, or the backend's end (which answers c).
func (b *Backend) run(c *Call) {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		c.finish(nil, false)
		return
	}
	p := b.proc
	id := b.nextID + 1
	line, err := encode(requestMsg{Type: "request", ID: id, Method: "tool",
		Params: toolParams{Name: c.tool, Args: json.RawMessage(c.args)}, Traceparent: telemetry.Traceparent(c.ctx)})
	if err != nil {
		b.mu.Unlock()
		c.finish(capture.Failed(capture.ExitError, "tool %q was not called: its input is not valid JSON", c.tool), true)
		return
	}
	b.nextID, c.id, b.inflight = id, id, c
	b.mu.Unlock()
	b.writeLine(p, line)
	select {
	case <-c.done:
	case <-c.ctx.Done():
		b.mu.Lock()
		mine := b.inflight == c
		if mine {
			b.inflight = nil
			b.rememberCancelled(c.id)
		}
		b.mu.Unlock()
		if mine {
			b.write(p, cancelMsg{Type: "cancel", ID: c.id})
			c.finish(nil, false)
		}
	case <-b.done:
	}
}

// rememberCancelled notes a cancelled request's id, so its late reply is
// dropped with a notice that says so; the oldest is forgotten first.
// b.mu is held.
func (b *Backend) rememberCancelled(id int64) {
	b.cancelled[id] = true
	if len(b.cancelled) > keptCancelled {
		oldest := id
		for k := range b.cancelled {
			oldest = min(oldest, k)
		}
		delete(b.cancelled, oldest)
	}
}
