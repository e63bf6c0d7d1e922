// Package watch follows invocations as they move, for MailboxService.Watch
// (docs/console.md): every replica publishes each change it makes on a NATS
// subject while another is alive, and every replica's Tracker folds its own
// changes and what it hears of the others' into a bounded table of the
// invocations in flight and the last finished, which a watcher gets as a
// snapshot before the changes that follow.
//
// The table is a view, not a record: it lives in RAM, starts empty on each
// replica, and holds at most MaxLive in flight and MaxDone finished. The
// store (internal/box) stays the truth about every invocation.
package watch

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// Subject carries every replica's changes, in batches: each message is
// InvocationStates, each prefixed by its length as a varint.
const Subject = "switchboard.mailbox.watch"

// maxBatch bounds one message on Subject, well under NATS's 1 MiB default.
const maxBatch = 256 << 10

// Bounds of the table and of each watcher's buffer.
const (
	MaxLive   = 10000 // invocations in flight tracked; past it new ones go untracked
	MaxDone   = 100   // finished invocations kept for a new watcher's snapshot
	MaxBuffer = 512   // changes a watcher may fall behind by before it is ended
)

// Tracker holds the table and the watchers.
type Tracker struct {
	nc     *nats.Conn // its own, with NoEcho
	sub    *nats.Subscription
	others func() bool // whether another replica may hear a change
	ttl    time.Duration
	log    *slog.Logger

	mu       sync.Mutex
	live     map[string]*mailboxv1.InvocationState
	done     []*mailboxv1.InvocationState // oldest first, at most MaxDone
	watchers map[*Watcher]struct{}
	swept    time.Time

	// Changes leave through one sender, which takes what gathered while it
	// sent the last batch: a change a message when calls are few, far
	// fewer messages than changes under load.
	outMu   sync.Mutex
	out     []byte
	kick    chan struct{} // cap 1: the sender has work
	stop    chan struct{}
	stopped chan struct{}
}

// New subscribes to every replica's changes, on a NoEcho connection of its
// own (a replica folds its own changes as it publishes them). Entries older
// than ttl are dropped; a change is sent only while others reports another
// replica (nil: always).
func New(nc *nats.Conn, ttl time.Duration, others func() bool, log *slog.Logger) (*Tracker, error) {
	opts := nc.Opts
	opts.NoEcho = true
	opts.Name += " (invocation watch)"
	// The mailbox's connection, to the same servers, tells of an outage;
	// said again for this one, every loss and recovery was logged twice.
	opts.DisconnectedErrCB = func(_ *nats.Conn, err error) {
		if err != nil {
			log.Debug("the invocation watch lost NATS", "err", err)
		}
	}
	opts.ReconnectedCB = func(*nats.Conn) { log.Debug("the invocation watch is back on NATS") }
	own, err := opts.Connect()
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS for the invocation watch: %w", err)
	}
	t := &Tracker{nc: own, ttl: ttl, others: others, log: log, live: map[string]*mailboxv1.InvocationState{}, watchers: map[*Watcher]struct{}{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	sub, err := own.Subscribe(Subject, t.heard)
	if err == nil {
		err = own.Flush() // the server has the subscription: later changes are heard
	}
	if err != nil {
		own.Close()
		return nil, err
	}
	t.sub = sub
	go t.send()
	return t, nil
}

// Close sends what is gathered, stops listening and ends every watcher.
func (t *Tracker) Close() {
	t.outMu.Lock()
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	t.outMu.Unlock()
	<-t.stopped
	_ = t.sub.Unsubscribe()
	t.nc.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	for w := range t.watchers {
		w.end()
		delete(t.watchers, w)
	}
}

// Publish folds a change into this replica's table and queues it for every
// other replica, when there is one. A change that cannot be sent is logged and dropped: the
// watch is a view, and the invocation itself is unaffected. st is kept (its
// fields are shared with the table), so the caller must not change it after.
func (t *Tracker) Publish(st *mailboxv1.InvocationState) {
	if st.Changed == nil {
		st.Changed = timestamppb.Now()
	}
	if t.others == nil || t.others() {
		t.queue(st)
	}
	t.apply(st)
}

// queue adds st to what the sender sends next.
func (t *Tracker) queue(st *mailboxv1.InvocationState) {
	b, err := proto.Marshal(st)
	if err != nil {
		t.log.Warn("an invocation's change did not reach the other replicas' watchers", "invocation", st.GetInvocation(), "err", err)
		return
	}
	t.outMu.Lock()
	t.out = protowire.AppendBytes(t.out, b)
	t.outMu.Unlock()
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// send publishes the gathered changes until Close, then once more.
func (t *Tracker) send() {
	defer close(t.stopped)
	var spare []byte
	for {
		var last bool
		select {
		case <-t.kick:
		case <-t.stop:
			last = true
		}
		t.outMu.Lock()
		whole := t.out
		t.out = spare[:0]
		t.outMu.Unlock()
		for batch := whole; len(batch) > 0; {
			n := cut(batch)
			if err := t.nc.Publish(Subject, batch[:n]); err != nil {
				t.log.Warn("invocations' changes did not reach the other replicas' watchers", "bytes", n, "err", err)
			}
			batch = batch[n:]
		}
		spare = whole // Publish copied the bytes: the buffer is free again
		if last {
			return
		}
	}
}

// cut is how many bytes of batch, whole entries and at least one, fit in
// one message.
func cut(batch []byte) int {
	n := 0
	for n < len(batch) {
		_, l := protowire.ConsumeBytes(batch[n:])
		if l < 0 || (n > 0 && n+l > maxBatch) {
			break
		}
		n += l
	}
	if n == 0 {
		return len(batch) // not an entry: cannot happen, as Publish writes them
	}
	return n
}

func (t *Tracker) heard(m *nats.Msg) {
	for b := m.Data; len(b) > 0; {
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return
		}
		b = b[n:]
		st := &mailboxv1.InvocationState{}
		if err := proto.Unmarshal(v, st); err != nil || st.GetInvocation() == "" {
			continue
		}
		t.apply(st)
	}
}

// apply folds a change into the table and tells the watchers the merged
// state. Each replica knows part of an invocation (the poster at the post,
// the exit code at the answer), so fields fill in as changes arrive, and
// the phase only moves forward.
func (t *Tracker) apply(ch *mailboxv1.InvocationState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep()
	id := ch.GetInvocation()
	cur, ok := t.live[id]
	if !ok {
		if finished(t.done, id) || ch.GetPhase() == mailboxv1.Phase_PHASE_UNSPECIFIED {
			return // a late echo of something already over, or news of one untracked
		}
		if len(t.live) >= MaxLive && !terminal(ch.GetPhase()) {
			return
		}
		cur = &mailboxv1.InvocationState{Invocation: id}
	}
	merge(cur, ch)
	if terminal(cur.GetPhase()) {
		delete(t.live, id)
		t.done = append(t.done, cur)
		if len(t.done) > MaxDone {
			t.done = t.done[len(t.done)-MaxDone:]
		}
	} else {
		t.live[id] = cur
	}
	if len(t.watchers) == 0 {
		return // most of the time: no copy to make for nobody
	}
	out := proto.Clone(cur).(*mailboxv1.InvocationState)
	for w := range t.watchers {
		if !w.sees(out) {
			continue
		}
		select {
		case w.c <- out:
		default: // fell behind: end it rather than block every other watcher
			w.end()
			delete(t.watchers, w)
		}
	}
}

// sweep drops, at most once a minute, what outlived its slot.
func (t *Tracker) sweep() {
	now := time.Now()
	if now.Sub(t.swept) < time.Minute {
		return
	}
	t.swept = now
	for id, st := range t.live {
		if now.Sub(st.GetChanged().AsTime()) > t.ttl {
			delete(t.live, id)
		}
	}
}

func merge(cur, ch *mailboxv1.InvocationState) {
	if cur.Client == "" {
		cur.Client = ch.GetClient()
	}
	if cur.Tool == "" {
		cur.Tool = ch.GetTool()
	}
	if cur.Poster == "" {
		cur.Poster = ch.GetPoster()
	}
	if cur.Posted == nil {
		cur.Posted = ch.GetPosted()
	}
	if ch.ExitCode != nil {
		// A copy: a replica's own change points into the capture it answered with.
		exit := *ch.ExitCode
		cur.ExitCode = &exit
	}
	if ch.GetPhase() == mailboxv1.Phase_PHASE_ANSWERED && cur.Answered == nil {
		cur.Answered = ch.GetChanged()
	}
	if ch.Questions != nil {
		q := *ch.Questions
		cur.Questions = &q
	}
	cur.HandOffs = max(cur.GetHandOffs(), ch.GetHandOffs())
	if ch.GetPhase() != mailboxv1.Phase_PHASE_UNSPECIFIED && ch.GetPhase() >= cur.GetPhase() {
		cur.Phase = ch.GetPhase()
		cur.Changed = ch.GetChanged()
	}
}

func terminal(p mailboxv1.Phase) bool {
	return p == mailboxv1.Phase_PHASE_COLLECTED || p == mailboxv1.Phase_PHASE_CANCELLED
}

func finished(done []*mailboxv1.InvocationState, id string) bool {
	for _, d := range done {
		if d.GetInvocation() == id {
			return true
		}
	}
	return false
}
