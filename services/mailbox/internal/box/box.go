// Package box keeps the mailbox's invocations (docs/architecture.md, "Where
// state lives"): in this replica's memory while a host's read here or a
// driver's call holds them, handed from replica to replica over core NATS,
// and in JetStream only where a promise needs it — an Invoke, the backlog
// of a host that is not reading, and their captures.
package box

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Config bounds a box.
type Config struct {
	// TTL is how long an uncollected invocation lives.
	TTL time.Duration
	// MaxQueued bounds the invocations waiting for one client.
	MaxQueued int
	// MaxSlots bounds the invocations held in this replica's memory, and
	// (spread over the partitions) the durable ones.
	MaxSlots int
	// MaxCaptureBytes bounds one capture's stdout, stderr and MCP result together.
	MaxCaptureBytes int
	// MaxQueueBytes bounds the durable invocations' bytes in all.
	MaxQueueBytes int64
	// Replicas is how many copies JetStream keeps.
	Replicas int
	// PresenceTTL is how long this replica's heartbeat outlives it.
	PresenceTTL time.Duration
	// Answered, when set, is told of every answer this replica gives.
	Answered inflight.Answered
	// Asking, when set, is told how many questions wait on an invocation
	// whenever that changes here, under the store's lock so that the
	// counts arrive in order: it must not block.
	Asking func(id, client string, waiting int)
	Clock  Clock
}

// Box is one mailbox replica's store.
type Box struct {
	cfg    Config
	nc     *nats.Conn
	js     jetstream.JetStream
	log    *slog.Logger
	name   string // this replica, in subjects and its heartbeat key
	recs   *records
	leases *presence.Leases
	beat   *presence.Heartbeat
	inbox  chan *nats.Msg // what other replicas ask of this one
	subs   []*nats.Subscription
	stop   context.CancelFunc

	mu       sync.Mutex
	slots    map[string]*slot
	queues   map[string]*queue          // the clients this replica is home to
	view     map[string]*rec            // durable records as last heard, by id
	backlog  map[string]map[string]*rec // queued durable records, by client and id
	replicas map[string]bool            // the other live replicas
	others   atomic.Int32               // len(replicas), read without mu
	waits    map[string]chan struct{}
	// arriving holds the calls whose answer is on its way from their home
	// after the Call returned the handle, by id: their poster. A collection
	// here waits for it rather than finding nothing.
	arriving map[string]string
	expiry   list
	taken    takenSet
	sweep    Timer
	closed   bool
	closing  chan struct{}
}

// queue is a client this replica is home to: its host reads here (or did
// last), so every hand-off to it comes here, over NATS from elsewhere.
type queue struct {
	client  string
	pending list // queued, oldest first (requeued slots go first)
	handed  list // leased to a read, no capture yet, in hand-off order
	reader  *Read
	lease   *presence.Lease
	sub     *nats.Subscription // sb.host.<client>
	// bump is when this replica took the client from one that died: a
	// record posted before then may have been handed out there unrecorded.
	bump time.Time
}

// New declares the records' streams and the presence bucket, and starts
// this replica's view of the records, its heartbeat and its subscriptions.
func New(ctx context.Context, nc *nats.Conn, cfg Config, log *slog.Logger) (*Box, error) {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := presence.Declare(ctx, js, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	recs, err := declareRecords(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	b := &Box{cfg: cfg, nc: nc, js: js, log: log, name: "mb-" + hex.EncodeToString(id[:]), recs: recs,
		inbox: make(chan *nats.Msg, 4096), slots: map[string]*slot{}, queues: map[string]*queue{}, view: map[string]*rec{},
		backlog: map[string]map[string]*rec{}, replicas: map[string]bool{}, waits: map[string]chan struct{}{}, arriving: map[string]string{},
		expiry: list{at: expiryLinks}, closing: make(chan struct{})}
	b.leases = presence.NewLeases(kv, b.name)
	for _, subj := range []string{mbxPrefix + b.name, findSubject} {
		sub, err := nc.ChanSubscribe(subj, b.inbox)
		if err != nil {
			b.unsubscribe()
			return nil, err
		}
		b.subs = append(b.subs, sub)
	}
	host, _ := os.Hostname()
	if b.beat, err = presence.Beat(ctx, js, kv, b.name, host+" pid "+strconv.Itoa(os.Getpid()), cfg.PresenceTTL); err != nil {
		b.unsubscribe()
		return nil, err
	}
	run, stop := context.WithCancel(context.Background())
	b.stop = stop
	go b.dispatch(run)
	synced := make(chan struct{})
	var once sync.Once
	go b.watchReplicas(run, kv, func() { once.Do(func() { close(synced) }) })
	select { // a lookup right after start asks every replica there is
	case <-synced:
	case <-time.After(natsconn.RequestTimeout):
	}
	go b.watchConnection(run)
	for k := range Partitions {
		go b.follow(run, k)
	}
	return b, nil
}

// Name is this replica's name in NATS.
func (b *Box) Name() string { return b.name }

// Close ends every read and refuses new acts. What this replica held in
// memory alone goes to the records first (a drain, a rolling restart), so
// its calls are answered and collected through the other replicas; a
// replica that dies without Close loses them, and their calls fail in band.
func (b *Box) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.closing)
	if b.sweep != nil {
		b.sweep.Stop()
	}
	var queues []*queue
	var leases []*presence.Lease
	for _, q := range b.queues {
		if q.reader != nil {
			q.reader.end(endDrain)
			q.reader = nil
			leases = append(leases, q.lease)
		}
		queues = append(queues, q)
	}
	var kept []*slot
	for _, s := range b.slots {
		if s.state == answered && s.rev == 0 {
			kept = append(kept, s)
		}
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, q := range queues {
		if err := b.spill(ctx, q); err != nil {
			b.log.Warn("invocations held in memory are lost with this replica", "client", q.client, "err", err)
		}
	}
	for _, s := range kept {
		body := s.stored()
		if _, err := b.recs.put(ctx, s.client, s.id, stAnswered, body, 0, b.cfg.TTL); err != nil {
			b.log.Warn("an answer held in memory is lost with this replica", "invocation", s.id, "err", err)
		}
	}
	for _, le := range leases {
		_ = le.Release(ctx)
	}
	b.stop()
	b.unsubscribe()
	b.beat.Stop()
}

func (b *Box) unsubscribe() {
	for _, s := range b.subs {
		_ = s.Unsubscribe()
	}
}

// notify wakes whoever waits for news of id. Called with the box locked.
func (b *Box) notify(id string) {
	if ch := b.waits[id]; ch != nil {
		close(ch)
		delete(b.waits, id)
	}
}

// news returns the channel closed at id's next change. Called locked.
func (b *Box) news(id string) <-chan struct{} {
	ch := b.waits[id]
	if ch == nil {
		ch = make(chan struct{})
		b.waits[id] = ch
	}
	return ch
}

// wait waits for ch, ctx or the box's close; false when ctx or close came.
func (b *Box) wait(ctx context.Context, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	case <-b.closing:
	}
	return false
}

// isClosing reports whether Close has begun.
func (b *Box) isClosing() bool {
	select {
	case <-b.closing:
		return true
	default:
		return false
	}
}

// queueOf returns client's queue, making this replica its home. Called
// locked.
func (b *Box) queueOf(client string) *queue {
	q := b.queues[client]
	if q == nil {
		q = &queue{client: client, pending: list{at: queueLinks}, handed: list{at: queueLinks}}
		b.queues[client] = q
	}
	if q.sub == nil { // new, or orphaned while NATS was away
		var err error
		if q.sub, err = b.nc.ChanSubscribe(hostPrefix+client, b.inbox); err != nil {
			b.log.Warn("a client's hand-offs cannot be heard here; its posts go to the backlog", "client", client, "err", err)
		}
	}
	return q
}

// dropQueue gives up being client's home when nothing of it is left here.
// Called locked.
func (b *Box) dropQueue(q *queue) {
	if q.reader != nil || q.pending.n > 0 || q.handed.n > 0 || b.queues[q.client] != q {
		return
	}
	if q.sub != nil {
		_ = q.sub.Unsubscribe()
	}
	delete(b.queues, q.client)
}

// add puts s in this replica's memory, on q's pending list.
func (b *Box) add(q *queue, s *slot) {
	b.slots[s.id] = s
	b.expiry.pushBack(s)
	b.armSweep()
	q.pending.pushBack(s)
	if q.reader != nil {
		q.reader.signal()
	}
}

// unlist takes s off its queue's list.
func (b *Box) unlist(s *slot) {
	q := b.queues[s.client]
	if q == nil {
		return
	}
	switch {
	case q.pending.has(s):
		q.pending.remove(s)
	case q.handed.has(s):
		q.handed.remove(s)
	}
}

// remove forgets s (collected, cancelled, expired or moved to its record).
func (b *Box) remove(s *slot) {
	b.unlist(s)
	if b.slots[s.id] == s {
		delete(b.slots, s.id)
	}
	if b.expiry.has(s) {
		b.expiry.remove(s)
	}
	if q := b.queues[s.client]; q != nil {
		b.dropQueue(q)
	}
	b.notify(s.id)
}
