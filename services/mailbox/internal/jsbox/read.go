package jsbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// pullBatch is how many invocations a read asks JetStream for at once.
// JetStream counts a delivery when it sends, so a small batch keeps the
// count close to what the host was really handed.
const pullBatch = 16

// maxPullExpiry bounds how long a read's pull request waits at the server
// (half a lease, at most this): the requests are lost with the node that
// leads the consumer, and the read hears of it only when two heartbeats (a
// pull expiry) have gone missing. At the client library's default (30 s) a
// node lost stalled every read on it for half a minute.
const maxPullExpiry = 5 * time.Second

// readerGroup is the consumers' one priority group. Its policy pins the
// consumer to one reader's pull requests at a time; a read that ends unpins
// it, so pull requests it left at the server (which a cluster may not have
// dropped yet) are refused rather than handed an invocation nobody will
// see — a delivery that would count as a hand-off.
const readerGroup = "reader"

// Read is this replica's hold on one client's queue: its consumer is being
// consumed here, and every invocation handed out is held (its lease kept
// alive) until it is answered, cancelled, or the read ends.
type Read struct {
	box      *Box
	client   string
	consume  jetstream.ConsumeContext
	notices  *nats.Subscription
	wake     chan struct{} // capacity 1: a delivery between Take and the wait is never lost
	ended    chan struct{}
	endOnce  sync.Once
	stopKeep chan struct{}
	requeued int

	// backlog counts the deliveries the read still expects from what was
	// waiting when it opened.
	backlog int

	mu       sync.Mutex
	incoming []jetstream.Msg // delivered by JetStream, not yet taken
	unsent   []jetstream.Msg // taken, given back unsent: they go back when the read ends
	held     map[string]*held
	cancels  []string
	done     bool // closing: nothing more is handed out
	gone     bool // closed: what arrives goes back at once
}

// held is one invocation handed out by this read, with the slot as the
// hand-off left it (so a completion here needs no second read).
type held struct {
	msg jetstream.Msg
	rec record
	rev uint64
}

// OpenRead starts consuming client's queue on this replica. The caller
// holds the client's read lease (one reader per client, across replicas).
func (b *Box) OpenRead(ctx context.Context, client string) (inflight.Read, error) {
	if b.isClosed() {
		return nil, inflight.ErrShuttingDown
	}
	b.mu.Lock()
	_, reading := b.reads[client]
	b.mu.Unlock()
	if reading { // the lease keeps other replicas out; this keeps this one honest
		return nil, inflight.SecondReader(client)
	}
	cons, info, err := b.readyConsumer(ctx, client)
	if err != nil {
		return nil, err
	}
	// The read lease makes this the client's one reader, so a pin left by
	// an earlier read is stale: a replica that died holds it for a whole
	// PinnedTTL (a lease), and the client's queue would stall that long
	// although its host has redialed.
	b.unpin(ctx, client)
	r := &Read{box: b, client: client, wake: make(chan struct{}, 1), ended: make(chan struct{}),
		stopKeep: make(chan struct{}), held: map[string]*held{}, requeued: info.NumAckPending,
		backlog: int(info.NumPending) + info.NumAckPending}
	// Acks and cancels for this client, from replicas that do not hold
	// the read, reach it here.
	if r.notices, err = b.nc.Subscribe(readPrefix+client+".*", r.notice); err != nil {
		return nil, unavailable("opening the read", err)
	}
	r.consume, err = cons.Consume(r.deliver, jetstream.PullMaxMessages(pullBatch), jetstream.PullPriorityGroup(readerGroup),
		jetstream.PullExpiry(min(maxPullExpiry, b.cfg.Lease/2)),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			switch {
			case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerNotFound):
				r.end()
			case errors.Is(err, jetstream.ErrNoHeartbeat), errors.Is(err, nats.ErrNoResponders):
				// What a consumer forgotten with its server (a restart of
				// every node) looks like from here; or NATS is away a while.
				go r.endIfGone(cons)
			}
		}))
	if err != nil {
		_ = r.notices.Unsubscribe()
		return nil, unavailable("opening the read", err)
	}
	b.mu.Lock()
	if b.closed || b.reads[client] != nil {
		closed := b.closed
		b.mu.Unlock()
		r.Close()
		if closed {
			return nil, inflight.ErrShuttingDown
		}
		return nil, inflight.SecondReader(client)
	}
	b.reads[client] = r
	b.mu.Unlock()
	go r.keepLeases()
	return r, nil
}

// Requeued counts the invocations handed out earlier without an answer,
// which this read gets again first.
func (r *Read) Requeued() int { return r.requeued }

// Backlogged reports whether deliveries of what was waiting when the read
// opened have yet to reach Take.
func (r *Read) Backlogged() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.backlog > 0 && !r.done
}

// Wake is signalled when there may be something to Take.
func (r *Read) Wake() <-chan struct{} { return r.wake }

// Ended is closed when the read can go on no longer (the mailbox shuts
// down, the consumer is gone); the host should read again.
func (r *Read) Ended() <-chan struct{} { return r.ended }

func (r *Read) end() { r.endOnce.Do(func() { close(r.ended) }) }

// endIfGone ends the read when JetStream no longer knows its consumer, so
// that its host reads again and the read's next opening declares it anew
// (readyConsumer). Any other answer leaves the read to the client library,
// which pulls again once NATS is back.
func (r *Read) endIfGone(cons jetstream.Consumer) {
	if _, err := consumerInfo(context.Background(), cons); errors.Is(err, jetstream.ErrConsumerNotFound) {
		r.end()
	}
}

func (r *Read) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// deliver is JetStream's callback for each message of the consumer.
func (r *Read) deliver(m jetstream.Msg) {
	r.mu.Lock()
	if r.gone {
		r.mu.Unlock()
		go r.giveBack(m) // it may write the slot: not on the connection's callback
		return
	}
	r.incoming = append(r.incoming, m) // kept for Close once the read is done
	done := r.done
	r.mu.Unlock()
	if !done {
		r.signal()
	}
}

// notice handles an ack or a cancel announced by another replica.
func (r *Read) notice(m *nats.Msg) {
	id := string(m.Data)
	switch m.Subject[len(m.Subject)-len("cancel"):] {
	case "cancel":
		r.mu.Lock()
		h := r.held[id]
		if h != nil {
			delete(r.held, id)
			r.cancels = append(r.cancels, id)
		}
		r.mu.Unlock()
		if h != nil {
			_ = h.msg.Ack()
			r.signal()
		} else {
			r.box.spoilCall(id) // not handed yet: its delivery must see the slot
		}
	default: // ".ack"
		r.answered(id)
	}
}

// holding returns the hand-off of id this read holds, if any: a copy, as
// a report may move it on meanwhile (noted).
func (r *Read) holding(id string) *held {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.held[id]; h != nil {
		c := *h
		return &c
	}
	return nil
}

// noted moves the hand-off of id this read holds on to the slot as a
// report wrote it, at rev, so that its completion still needs no second
// read.
func (r *Read) noted(id string, rec record, rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.held[id]; h != nil && rev > h.rev {
		h.rec, h.rev = rec, rev
	}
}

// answered acks id's queue message: its capture is stored.
func (r *Read) answered(id string) {
	r.mu.Lock()
	h := r.held[id]
	delete(r.held, id)
	r.mu.Unlock()
	if h != nil {
		_ = h.msg.Ack()
	}
}

// keepLeases tells JetStream, a third of a lease at a time, that every
// invocation this read handed out is still being worked on: a host may run
// a tool for longer than a lease, and only a dead replica should lose it.
func (r *Read) keepLeases() {
	t := time.NewTicker(r.box.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-r.stopKeep:
			return
		case <-t.C:
		}
		r.mu.Lock()
		msgs := make([]jetstream.Msg, 0, len(r.held))
		for _, h := range r.held {
			msgs = append(msgs, h.msg)
		}
		r.mu.Unlock()
		for _, m := range msgs {
			_ = m.InProgress()
		}
	}
}

// Close ends the read. What it handed out without an answer, and what was
// delivered but not yet handed out, goes back to the queue at once, under
// the same id, for the client's next read; what was not handed out is
// counted unsent.
func (r *Read) Close() {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return
	}
	r.done = true
	r.mu.Unlock()
	close(r.stopKeep)
	// Drained, not stopped: what JetStream sent before the read let go
	// still arrives, and deliver keeps it with the rest, rather than it
	// being lost in flight and delivered again only a lease later.
	r.consume.Drain()
	drained := time.NewTimer(r.box.cfg.Lease / 3)
	select {
	case <-r.consume.Closed():
	case <-drained.C:
	}
	drained.Stop()
	_ = r.notices.Unsubscribe()
	// Unpinned before the invocations go back: they must reach the next
	// read, not a pull request this one left behind.
	ctx, cancel := context.WithTimeout(context.Background(), r.box.cfg.Lease/3)
	r.box.unpin(ctx, r.client)
	cancel()
	r.mu.Lock()
	r.gone = true
	back := r.unsent // uncounted when given back unsent
	for _, h := range r.held {
		back = append(back, h.msg)
	}
	incoming := r.incoming
	r.incoming, r.unsent, r.held = nil, nil, nil
	r.mu.Unlock()
	for _, m := range incoming {
		r.giveBack(m)
	}
	for _, m := range back {
		_ = m.Nak()
	}
	b := r.box
	b.mu.Lock()
	if b.reads[r.client] == r {
		delete(b.reads, r.client)
	}
	b.mu.Unlock()
	r.end()
}

func isAbsent(err error) bool { return status.Code(err) == codes.NotFound }
