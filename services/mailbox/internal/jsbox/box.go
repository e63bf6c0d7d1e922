// Package jsbox keeps the mailbox's invocations in NATS JetStream, so that
// any number of mailbox replicas share them and none is lost when a process
// or a node dies (docs/design.md §3, §8; docs/architecture.md has the map).
//
//   - The queue is one work-queue stream, a subject per client
//     (sb.queue.<client>), read through a durable consumer per client. The
//     consumer's AckWait is the lease: the replica serving a host's read
//     extends it while the read lives and gives the invocation back (a nak)
//     when the read ends; if that replica dies, the lease runs out and
//     JetStream redelivers under the same id. The delivery count is the
//     hand-off count.
//   - Slots are one key-value bucket keyed by invocation id: poster,
//     addressee and, once answered, the capture. The bucket's TTL is the
//     slot's hour.
//   - Wake-ups travel on core NATS: a completion is announced on
//     sb.done.<id>, which every replica hears through one subscription and
//     hands to its call waiting for that capture, and on
//     sb.read.<client>.{ack,cancel} to the replica holding the client's read.
//     A lost announcement costs latency, never an answer: waits re-read the
//     slot when they end, and a redelivered invocation whose slot is answered
//     or gone is dropped, not handed out.
//   - A Call's answer may skip the slot: see waiter (wait.go).
package jsbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/natsconn"
	"github.com/switchboard-run/switchboard/kit/streams"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Names of what the box declares in JetStream, and its core subjects.
const (
	QueueStream = "SB_QUEUE"
	SlotBucket  = "sb_slots"

	queuePrefix = "sb.queue."
	// anchorSubject is no client's ("_" is not in a client name), so no
	// consumer ever takes it; see anchor.
	anchorSubject = queuePrefix + "_anchor"
	// anchorEvery is how many posts a replica makes between anchors.
	anchorEvery = 1024
	donePrefix  = "sb.done."
	readPrefix  = "sb.read."
	// notePrefix announces a progress note on sb.note.<id> to the Status
	// waits of every replica (progress.go).
	notePrefix = "sb.note."
)

// Config bounds a box.
type Config struct {
	// TTL is how long a slot lives (docs/design.md: an hour), and a queued
	// invocation with it.
	TTL time.Duration
	// Lease is how long a hand-off lasts without word from the replica that
	// made it (JetStream's AckWait).
	Lease time.Duration
	// Answered, when set, is told of every answer this replica stores.
	Answered inflight.Answered
	// MaxQueued bounds the invocations queued and handed for one client.
	MaxQueued int
	// MaxSlots bounds the invocations queued and handed in all.
	MaxSlots int
	// MaxQueueBytes bounds the queue's bytes in all (inputs and headers).
	MaxQueueBytes int64
	// MaxCaptureBytes bounds one capture's stdout and stderr together.
	MaxCaptureBytes int
	// Replicas is how many copies JetStream keeps.
	Replicas int
	// PrecountHold is how long an Invoke's precount waits for its first
	// delivery (precount.go); 0 is a second, or a third of a lease if less.
	PrecountHold time.Duration
	// MaxClients bounds the clients with a consumer at once (a consumer is
	// forgotten a TTL after its client's last read). JetStream would
	// otherwise stop at its default of 1,000 consumers per stream.
	MaxClients int
}

// Box is the mailbox's state in JetStream.
type Box struct {
	cfg   Config
	nc    *nats.Conn
	js    jetstream.JetStream
	queue jetstream.Stream
	slots jetstream.KeyValue
	log   *slog.Logger

	posts atomic.Uint64 // posts made by this replica, for anchor
	name  string        // this replica's, on the queue messages of its precounted Calls

	done  *nats.Subscription // sb.done.*, for the waiters of this replica
	noted *nats.Subscription // sb.note.*, for the Status waits of this replica

	mu        sync.Mutex
	consumers map[string]jetstream.Consumer // per client, once declared
	reads     map[string]*Read              // the reads this replica holds
	waiters   map[string][]*waiter          // invocation id → the calls waiting for its answer
	watchers  map[string][]chan struct{}    // invocation id → the Status waits for its news
	recent    *recentAnswers                // answers heard that no call here waited for
	closed    bool
	closing   chan struct{}
}

// DedupeWindow is how long the queue stream remembers an invocation's id
// (its messages' Nats-Msg-Id), so that a publish sent again is stored
// once. A post is sent again only within one request's bound
// (natsconn.RequestTimeout); JetStream's default, two minutes, would keep
// every id of the last two minutes in the server's memory, some 80 bytes
// each (a heap profile of tests/soak): 28 MiB at 3,000 calls a second.
const DedupeWindow = 30 * time.Second

// dedupeWindow is DedupeWindow, or the queue's age limit when that is
// shorter (JetStream refuses a window longer than it).
func dedupeWindow(ttl time.Duration) time.Duration {
	if ttl > 0 && ttl < DedupeWindow {
		return ttl
	}
	return DedupeWindow
}

// New declares the queue stream and the slot bucket (created when missing,
// refused when someone else's) and returns the box.
func New(ctx context.Context, nc *nats.Conn, cfg Config, log *slog.Logger) (*Box, error) {
	// An asynchronous publish (a precounted Call's queue message, the
	// anchor) whose ack never comes is dropped after a request's bound:
	// otherwise each would stay pending until a reconnect, and enough of
	// them would stall every later one.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(natsconn.RequestTimeout))
	if err != nil {
		return nil, err
	}
	queue, err := streams.Ensure(ctx, js, jetstream.StreamConfig{
		Name:                 QueueStream,
		Description:          "Switchboard's queued invocations: one subject per client",
		Subjects:             []string{queuePrefix + "*"},
		Retention:            jetstream.WorkQueuePolicy,
		Storage:              jetstream.FileStorage,
		Replicas:             cfg.Replicas,
		MaxAge:               cfg.TTL,
		MaxMsgs:              int64(cfg.MaxSlots),
		MaxBytes:             orUnlimited(cfg.MaxQueueBytes),
		MaxMsgsPerSubject:    int64(cfg.MaxQueued),
		MaxConsumers:         max(cfg.MaxClients, 1),
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		AllowRollup:          true, // the anchor keeps one message
		Duplicates:           dedupeWindow(cfg.TTL),
	})
	if err != nil {
		return nil, err
	}
	slots, err := streams.EnsureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:      SlotBucket,
		Description: "Switchboard's invocation slots: poster, addressee and capture",
		TTL:         cfg.TTL,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		// Purge markers of collected slots vanish a second later instead of
		// holding disk for the rest of the hour.
		LimitMarkerTTL: time.Second,
	})
	if err != nil {
		return nil, err
	}
	b := &Box{cfg: cfg, nc: nc, js: js, queue: queue, slots: slots, log: log, name: inflight.NewID(),
		consumers: map[string]jetstream.Consumer{}, reads: map[string]*Read{}, waiters: map[string][]*waiter{},
		watchers: map[string][]chan struct{}{}, closing: make(chan struct{}), recent: newRecentAnswers()}
	// One subscription for every answer, held for the replica's life: a
	// subscription made per call would race its own interest across a
	// cluster's routes, and an answer published on another node before that
	// interest arrived would be lost.
	if b.done, err = nc.Subscribe(donePrefix+"*", b.deliverAnswer); err != nil {
		return nil, fmt.Errorf("listening for answers: %w", err)
	}
	if b.noted, err = nc.Subscribe(notePrefix+"*", b.deliverNote); err != nil {
		_ = b.done.Unsubscribe()
		return nil, fmt.Errorf("listening for progress notes: %w", err)
	}
	return b, nil
}

// deliverAnswer hands an answer to the calls of this replica waiting for
// it; one nobody here waits for is kept a while for a collection that may
// come for it (recentAnswers).
func (b *Box) deliverAnswer(m *nats.Msg) {
	id := m.Subject[len(donePrefix):]
	waited := false
	b.mu.Lock()
	for _, w := range b.waiters[id] {
		waited = waited || !w.holds // a hold on a precount waits for no answer
		select {
		case w.ch <- m:
		default: // it has one already
		}
	}
	b.wakeWatchers(id)
	b.mu.Unlock()
	if !waited {
		b.recent.heard(id, m.Data)
	}
}

func orUnlimited(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// Complete stores the capture of an invocation addressed to caller and
// returns it as stored (with the hand-off prefix when it was handed out
// more than once).
func (b *Box) Complete(ctx context.Context, caller, id string, c inflight.Capture) (inflight.Capture, error) {
	if n := len(c.Stdout) + len(c.Stderr); n > b.cfg.MaxCaptureBytes {
		return inflight.Capture{}, inflight.TooLarge(n, b.cfg.MaxCaptureBytes)
	}
	r, h := b.heldBy(caller, id)
	var rec record
	var rev uint64
	if h != nil {
		rec, rev = h.rec, h.rev
	}
	for attempt := 0; ; attempt++ {
		if h == nil || attempt > 0 {
			var err error
			if rec, rev, err = b.read(ctx, id); err != nil {
				return inflight.Capture{}, err
			}
		}
		if rec.Client != caller || rec.Capture != nil {
			return inflight.Capture{}, inflight.Absent(id)
		}
		stored := inflight.Rehanded(c, caller, rec.Handoffs)
		if w := b.claim(id); w != nil {
			// The Call waiting for it is on this replica: hand it the
			// capture and take the slot, one write instead of two.
			err := b.handOver(ctx, w, id, rev)
			if streams.Conflict(err) && attempt < 3 {
				continue
			}
			if err != nil {
				return inflight.Capture{}, unavailable("storing the capture", err)
			}
			// Acked before the call has it, so that its driver's next call
			// finds the queue already counting this one out.
			b.completed(r, caller, id, rec, stored)
			w.taken <- &stored
			if len(rec.Notes) > 0 || !w.own {
				// Someone may be asking for its progress, or (the id being
				// known beyond a Call) its status: tell them it is over. A
				// Call's slot nobody reported on skips this (the hot path).
				b.announce(donePrefix+id, nil)
			}
			return stored, nil
		}
		rec.Capture = &stored
		newRev, err := b.slots.Update(ctx, id, rec.encode(), rev)
		if streams.Conflict(err) && attempt < 3 {
			continue // a cancel, an expiry or a hand-off count changed it meanwhile: read again
		}
		if err != nil {
			return inflight.Capture{}, unavailable("storing the capture", err)
		}
		b.announceAnswer(id, newRev, rec.Poster, stored)
		b.completed(r, caller, id, rec, stored)
		return stored, nil
	}
}

// completed acks the queue message of an answered invocation (through the
// replica holding the read, when it is not r) and counts the answer.
func (b *Box) completed(r *Read, caller, id string, rec record, stored inflight.Capture) {
	if r != nil {
		r.answered(id)
	} else {
		b.announce(readPrefix+caller+".ack", []byte(id))
	}
	if b.cfg.Answered != nil {
		b.cfg.Answered(id, caller, rec.Posted, stored, inflight.ByHost)
	}
}

// read returns the slot of id; a missing one is the absent sentence.
func (b *Box) read(ctx context.Context, id string) (record, uint64, error) {
	rec, rev, _, err := b.readAt(ctx, id)
	return rec, rev, err
}

// readAt is read, with when the slot was last written (the bucket keeps
// it a TTL from then).
func (b *Box) readAt(ctx context.Context, id string) (record, uint64, time.Time, error) {
	e, err := b.slots.Get(ctx, id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrInvalidKey):
		return record{}, 0, time.Time{}, inflight.Absent(id)
	case err != nil:
		return record{}, 0, time.Time{}, unavailable("reading the invocation", err)
	}
	rec, err := decodeRecord(id, e.Value())
	if err != nil {
		return record{}, 0, time.Time{}, status.Error(codes.Internal, err.Error())
	}
	return rec, e.Revision(), e.Created(), nil
}

// maxAnnounced bounds a capture carried in an answer: every replica hears
// every answer, so a larger one is only announced, and its waiter reads it.
const maxAnnounced = 16 << 10

// announceAnswer tells the waiters of id, posted by poster, that it is
// answered.
func (b *Box) announceAnswer(id string, rev uint64, poster string, c inflight.Capture) {
	if len(c.Stdout)+len(c.Stderr) > maxAnnounced {
		b.announce(donePrefix+id, nil)
		return
	}
	b.announce(donePrefix+id, encodeAnswer(rev, poster, c))
}

// announce publishes a wake-up on core NATS. It is best effort by design:
// every reader of an announcement re-reads the slot when it matters.
func (b *Box) announce(subject string, data []byte) {
	if err := b.nc.Publish(subject, data); err != nil {
		b.log.Debug("an announcement was not sent", "subject", subject, "err", err)
	}
}

// heldBy returns the read this replica holds for client and its hand-off
// of id, when it holds them.
func (b *Box) heldBy(client, id string) (*Read, *held) {
	b.mu.Lock()
	r := b.reads[client]
	b.mu.Unlock()
	if r == nil {
		return nil, nil
	}
	if h := r.holding(id); h != nil {
		return r, h
	}
	return nil, nil
}

func (b *Box) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Close ends every read this replica holds (their invocations go back to
// the queue at once) and refuses new acts.
func (b *Box) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.closing)
	reads := make([]*Read, 0, len(b.reads))
	for _, r := range b.reads {
		reads = append(reads, r)
	}
	b.mu.Unlock()
	_ = b.done.Unsubscribe()
	_ = b.noted.Unsubscribe()
	for _, r := range reads {
		r.Close()
	}
}

// unavailable is the refusal when NATS could not be asked: the act may be
// tried again once it is reachable.
func unavailable(act string, err error) error {
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		return status.Errorf(codes.ResourceExhausted, "%s: the record is larger than NATS takes in one message (max_payload)", act)
	}
	return status.Errorf(codes.Unavailable, "%s: the mailbox cannot reach NATS right now (%v); try again in a moment", act, err)
}
