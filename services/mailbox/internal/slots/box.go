package slots

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Config bounds a box.
type Config struct {
	// TTL is how long a slot lives uncollected (docs/design.md §3: an hour).
	TTL time.Duration
	// Answered, when set, is told of every answer the box stores.
	Answered inflight.Answered
	// MaxQueued bounds the invocations waiting for one client's read.
	MaxQueued int
	// MaxSlots bounds the slots of the whole box (memory).
	MaxSlots int
	// MaxCaptureBytes bounds a capture's stdout and stderr together.
	MaxCaptureBytes int
	Clock           Clock
}

// Box holds every invocation in flight.
type Box struct {
	cfg Config

	mu      sync.Mutex
	slots   map[string]*slot
	queues  map[string]*queue
	expiry  list // every slot, oldest first: TTL is constant, so this is expiry order
	taken   takenSet
	sweep   Timer
	closed  bool
	closing chan struct{} // closed by Close: ends every read
}

// queue is one client's side of the box.
type queue struct {
	client  string
	pending list // queued, oldest first (requeued slots go first)
	handed  list // leased to a read, no capture yet, in hand-off order
	reader  *Read
}

// New returns an empty box.
func New(cfg Config) *Box {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	return &Box{
		cfg:     cfg,
		slots:   map[string]*slot{},
		queues:  map[string]*queue{},
		expiry:  list{at: expiryLinks},
		closing: make(chan struct{}),
	}
}

// Post queues one invocation for its client. A reader parked on the
// client's queue is woken at once (sync match).
func (b *Box) Post(_ context.Context, p inflight.Post) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return inflight.ErrShuttingDown
	}
	if len(b.slots) >= b.cfg.MaxSlots {
		return inflight.BoxFull(len(b.slots))
	}
	q := b.queueOf(p.Client)
	if q.pending.n >= b.cfg.MaxQueued {
		return inflight.QueueFull(p.Client, q.pending.n)
	}
	id := p.ID
	s := &slot{id: id, client: p.Client, poster: p.Poster, tool: p.Tool, input: p.Input, cwd: p.Cwd, trace: p.Trace,
		timeout: p.Timeout, deadline: p.Deadline, expires: b.cfg.Clock.Now().Add(b.cfg.TTL).UnixNano()}
	b.slots[id] = s
	b.expiry.pushBack(s)
	b.armSweep()
	q.pending.pushBack(s)
	if q.reader != nil {
		q.reader.signal()
	}
	return nil
}

// Complete stores the capture of an invocation addressed to caller and
// returns it as stored (re-read, with any hand-off prefix).
func (b *Box) Complete(_ context.Context, caller, id string, c Capture) (Capture, error) {
	if n := len(c.Stdout) + len(c.Stderr); n > b.cfg.MaxCaptureBytes {
		return Capture{}, inflight.TooLarge(n, b.cfg.MaxCaptureBytes)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.slots[id]
	if s == nil || s.client != caller || s.state == answered {
		return Capture{}, inflight.Absent(id)
	}
	b.answer(s, inflight.Rehanded(c, s.client, s.handoffs))
	if b.cfg.Answered != nil {
		b.cfg.Answered(s.id, s.client, b.posted(s), *s.capture, inflight.ByHost)
	}
	return *s.capture, nil
}

// Collect returns the capture of an invocation posted by caller, removing
// the slot (read once), or nil while it is running. With wait > 0 it waits
// that long (bounded by ctx) for the capture first; a wait wakes on the
// answer, not on a tick.
func (b *Box) Collect(ctx context.Context, caller, id string, wait time.Duration, retryKey string) (*Capture, error) {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	return b.collect(ctx, caller, id, wait > 0, retryKey)
}

// Call posts p and awaits its answer until wait ends.
func (b *Box) Call(ctx, wait context.Context, p inflight.Post) (*Capture, error) {
	if err := b.Post(ctx, p); err != nil {
		return nil, err
	}
	return b.Await(wait, p.Poster, p.ID)
}

// Await waits until the invocation is answered or ctx ends; it returns the
// capture (removing the slot) or nil when ctx ended first.
func (b *Box) Await(ctx context.Context, caller, id string) (*Capture, error) {
	return b.collect(ctx, caller, id, true, "")
}

func (b *Box) collect(ctx context.Context, caller, id string, wait bool, retryKey string) (*Capture, error) {
	b.mu.Lock()
	s := b.slots[id]
	if s == nil || s.poster != caller {
		again := b.taken.again(b.cfg.Clock.Now(), id, caller, retryKey)
		b.mu.Unlock()
		if again != nil {
			return again, nil
		}
		return nil, inflight.Absent(id)
	}
	if s.state != answered && wait {
		if s.done == nil {
			s.done = make(chan struct{})
		}
		done := s.done
		b.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		case <-b.closing:
		}
		b.mu.Lock()
		if b.slots[id] != s { // collected by another reader, cancelled, or expired meanwhile
			b.mu.Unlock()
			return nil, inflight.Absent(id)
		}
	}
	defer b.mu.Unlock()
	if s.state != answered {
		return nil, nil
	}
	b.remove(s)
	if retryKey != "" {
		b.taken.keep(b.cfg.Clock.Now(), id, caller, retryKey, *s.capture)
	}
	return s.capture, nil
}

// Cancel answers an invocation posted by caller with the cancelled capture
// (exit code 130), tells the host reading it, and returns the capture,
// removing the slot unless keep is set. An invocation answered already
// returns its capture.
func (b *Box) Cancel(_ context.Context, caller, id, reason string, keep bool) (Capture, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.slots[id]
	if s == nil || s.poster != caller {
		return Capture{}, inflight.Absent(id)
	}
	if s.state != answered {
		wasHanded := s.state == handed
		b.answer(s, inflight.Cancelled(id, reason))
		s.cancelled = true
		if b.cfg.Answered != nil {
			b.cfg.Answered(s.id, s.client, b.posted(s), *s.capture, inflight.ByCancel)
		}
		if q := b.queues[s.client]; wasHanded && q != nil && q.reader != nil {
			q.reader.cancelled(id)
		}
	}
	if !keep {
		b.remove(s)
	}
	return *s.capture, nil
}

// Len is the number of slots held, for benchmarks and tests.
func (b *Box) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.slots)
}

// Close ends every read and refuses new posts.
func (b *Box) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.closing)
	if b.sweep != nil {
		b.sweep.Stop()
	}
}

// queueOf returns client's queue, making it on first use.
func (b *Box) queueOf(client string) *queue {
	q := b.queues[client]
	if q == nil {
		q = &queue{client: client, pending: list{at: queueLinks}, handed: list{at: queueLinks}}
		b.queues[client] = q
	}
	return q
}

// unlist takes s off its queue's list, and drops a queue nobody uses.
func (b *Box) unlist(s *slot) {
	q := b.queues[s.client]
	switch s.state {
	case queued:
		q.pending.remove(s)
	case handed:
		q.handed.remove(s)
	}
	if q.reader == nil && q.pending.n == 0 && q.handed.n == 0 {
		delete(b.queues, s.client)
	}
}

// answer gives s its capture and wakes whoever waits for it.
func (b *Box) answer(s *slot, c Capture) {
	b.unlist(s)
	s.state = answered
	s.capture = &c
	s.wake(false)
}

// remove forgets s entirely (collected, cancelled or expired).
func (b *Box) remove(s *slot) {
	if s.state != answered {
		b.unlist(s)
		s.state = answered // so a second removal is a no-op on the lists
	}
	s.wake(false)
	delete(b.slots, s.id)
	if s.e.prev != nil || s.e.next != nil || b.expiry.head == s {
		b.expiry.remove(s)
	}
}
