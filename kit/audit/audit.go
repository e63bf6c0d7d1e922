// Package audit appends to the audit trail (docs/security.md, "Audit"): a
// JetStream stream the registry declares and serves, to which the mailbox,
// the registry and the bridge each send what they did. Recording never
// waits: events go to a bounded buffer that one goroutine publishes in
// batches, so no call's hot path holds a write.
package audit

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/streams"
)

// The trail: one stream, a subject per recording service.
const (
	Stream        = "SB_AUDIT"
	SubjectPrefix = "sb.audit."
)

// Buffer bounds the events waiting to be published; past it new events are
// dropped and counted (switchboard_audit_dropped_total).
const Buffer = 8192

// batch bounds the events one round publishes before it waits for their
// acknowledgements.
const batch = 256

// Writer sends one service's events.
type Writer struct {
	js      jetstream.JetStream
	service string
	log     *slog.Logger
	ch      chan item
	done    chan struct{}
	stop    context.CancelFunc

	dropped, written prometheus.Counter
	mu               sync.Mutex
	lastDropLog      time.Time
	seq              atomic.Uint64
	boot             string
}

// item is one queued event with its message id: the trail drops a resent
// event it already holds (within its duplicate window), so a batch sent
// again after a partial failure records nothing twice.
type item struct {
	e  *registryv1.AuditEvent
	id string
}

// NewWriter starts a writer for service on js. Its counters are
// registered with reg when reg is not nil.
func NewWriter(js jetstream.JetStream, service string, reg prometheus.Registerer, log *slog.Logger) *Writer {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{js: js, service: service, log: log, ch: make(chan item, Buffer), boot: service + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-", done: make(chan struct{}), stop: cancel,
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_audit_dropped_total",
			Help: "Audit events dropped: the buffer was full while NATS could not take them.", ConstLabels: prometheus.Labels{"service": service}}),
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_audit_written_total",
			Help: "Audit events the trail acknowledged.", ConstLabels: prometheus.Labels{"service": service}}),
	}
	if reg != nil {
		reg.MustRegister(w.dropped, w.written)
	}
	go w.run(ctx)
	return w
}

// Record queues e; it never blocks. A nil writer records nothing.
func (w *Writer) Record(e *registryv1.AuditEvent) {
	if w == nil {
		return
	}
	if e.At == nil {
		e.At = timestamppb.Now()
	}
	e.Service = w.service
	select {
	case w.ch <- item{e, w.boot + strconv.FormatUint(w.seq.Add(1), 36)}:
	default:
		w.dropped.Inc()
		w.mu.Lock()
		if time.Since(w.lastDropLog) > 10*time.Second {
			w.lastDropLog = time.Now()
			w.log.Warn("audit events are being dropped: the trail cannot take them as fast as they come", "buffer", Buffer)
		}
		w.mu.Unlock()
	}
}

// Close publishes what is queued, waiting at most until ctx ends, and
// stops the writer.
func (w *Writer) Close(ctx context.Context) {
	if w == nil {
		return
	}
	close(w.ch)
	select {
	case <-w.done:
	case <-ctx.Done():
		w.stop()
		<-w.done
	}
}

// run publishes in batches: whatever is queued, up to batch, sent at once
// and then acknowledged. A batch NATS refuses (no trail yet, an election)
// is sent again after a pause, while later events wait in the buffer.
func (w *Writer) run(ctx context.Context) {
	defer close(w.done)
	pause := 100 * time.Millisecond
	var pending []item
	for {
		if len(pending) == 0 {
			e, ok := <-w.ch
			if !ok {
				return
			}
			pending = append(pending, e)
		}
	fill:
		for len(pending) < batch {
			select {
			case e, ok := <-w.ch:
				if !ok {
					break fill
				}
				pending = append(pending, e)
			default:
				break fill
			}
		}
		sent := w.publish(ctx, pending)
		pending = pending[sent:]
		if len(pending) == 0 {
			pause = 100 * time.Millisecond
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(pause*2, 5*time.Second)
	}
}

// publish sends events and returns how many of them, from the first, the
// trail acknowledged.
func (w *Writer) publish(ctx context.Context, events []item) int {
	acks := make([]jetstream.PubAckFuture, 0, len(events))
	for _, it := range events {
		b, err := proto.Marshal(it.e)
		if err != nil {
			w.log.Warn("an audit event could not be encoded and is dropped", "err", err)
			b = nil
		}
		f, err := w.js.PublishAsync(SubjectPrefix+w.service, b, jetstream.WithMsgID(it.id))
		if err != nil {
			break
		}
		acks = append(acks, f)
	}
	ok := 0
	for _, f := range acks {
		select {
		case <-f.Ok():
			ok++
			w.written.Inc()
		case err := <-f.Err():
			w.log.Debug("the audit trail did not take an event; sending again", "err", err)
			return ok
		case <-ctx.Done():
			return ok
		}
	}
	return ok
}

// Declare makes the trail (the registry's, which owns it): events older
// than retention or past maxBytes are dropped, the oldest first.
func Declare(ctx context.Context, js jetstream.JetStream, replicas int, retention time.Duration, maxBytes int64) (jetstream.Stream, error) {
	return streams.Ensure(ctx, js, jetstream.StreamConfig{
		Name:        Stream,
		Description: "Switchboard's audit trail: invocations and administrative acts",
		Subjects:    []string{SubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		MaxAge:      retention,
		MaxBytes:    maxBytes,
		Discard:     jetstream.DiscardOld,
	})
}

// FrontHeader is the request metadata in which the gateway names the front
// an invocation came through ("act", "rest", "mcp", "console"); the
// mailbox records it. A caller without it is "grpc".
const FrontHeader = "switchboard-front"

// fronts are the values FrontHeader may carry; another reads as "grpc".
var fronts = map[string]bool{"act": true, "rest": true, "mcp": true, "console": true}

// WithFront names the front on an outgoing call.
func WithFront(ctx context.Context, front string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, FrontHeader, front)
}

// FrontOf is the front an incoming call names, or "grpc".
func FrontOf(ctx context.Context) string {
	if v := metadata.ValueFromIncomingContext(ctx, FrontHeader); len(v) == 1 && fronts[v[0]] {
		return v[0]
	}
	return "grpc"
}
