// Package audit appends to the audit trail (docs/security.md, "Audit"): a
// JetStream stream the registry declares and serves, to which the mailbox,
// the registry and the bridge each send what they did. Recording never
// waits: events go to a bounded buffer that one goroutine sends as one
// message per batch, so no call's path holds a write and a busy mailbox
// writes the trail a few times a second.
package audit

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/streams"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// The trail: one stream, a subject per recording service.
const (
	Stream        = "SB_AUDIT"
	SubjectPrefix = "sb.audit."
)

// Buffer bounds the events waiting to be published; past it new events are
// dropped and counted (switchboard_audit_dropped_total).
const Buffer = 8192

// Bounds of one batch: the events a message carries, its bytes (well under
// NATS's max_payload), and how long the first event waits for company.
const (
	MaxBatch      = 1024
	maxBatchBytes = 512 << 10
	linger        = 50 * time.Millisecond
)

// Writer sends one service's events.
type Writer struct {
	js      jetstream.JetStream
	service string
	log     *slog.Logger
	ch      chan *registryv1.AuditEvent
	done    chan struct{}
	stop    context.CancelFunc

	dropped, written prometheus.Counter
	mu               sync.Mutex
	lastDropLog      time.Time
	batches          uint64
	boot             string
}

// NewWriter starts a writer for service on js. Its counters are
// registered with tel's registry when tel is not nil.
func NewWriter(js jetstream.JetStream, service string, tel *telemetry.Telemetry, log *slog.Logger) *Writer {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{js: js, service: service, log: log, ch: make(chan *registryv1.AuditEvent, Buffer), done: make(chan struct{}), stop: cancel,
		boot: service + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-",
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_audit_dropped_total",
			Help: "Audit events dropped: the buffer was full while NATS could not take them.", ConstLabels: prometheus.Labels{"service": service}}),
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_audit_written_total",
			Help: "Audit events the trail acknowledged.", ConstLabels: prometheus.Labels{"service": service}}),
	}
	if tel != nil {
		tel.Registry.MustRegister(w.dropped, w.written)
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
	case w.ch <- e:
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

// run sends batches: the first event waits up to linger for others, then
// every event queued (within a batch's bounds) goes as one message, and
// the next batch gathers while the trail acknowledges it. A batch NATS
// refuses (no trail yet, an election) is sent again, under the same
// message id, after a pause that doubles up to 5 s; later events wait in
// the buffer meanwhile.
func (w *Writer) run(ctx context.Context) {
	defer close(w.done)
	var (
		batch *registryv1.AuditBatch
		data  []byte
		id    string
		pause = 100 * time.Millisecond
	)
	for {
		if batch == nil {
			var open bool
			batch, open = w.gather(ctx)
			if batch == nil {
				if !open {
					return
				}
				continue
			}
			var err error
			if data, err = Encode(batch); err != nil {
				w.log.Warn("a batch of audit events could not be encoded and is dropped", "events", len(batch.Events), "err", err)
				batch = nil
				continue
			}
			w.batches++
			id = w.boot + strconv.FormatUint(w.batches, 36)
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := w.js.Publish(pctx, SubjectPrefix+w.service, data, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			w.written.Add(float64(len(batch.Events)))
			batch, pause = nil, 100*time.Millisecond
			continue
		}
		w.log.Debug("the audit trail did not take a batch; sending it again", "events", len(batch.Events), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(pause*2, 5*time.Second)
	}
}

// gather waits for an event, lingers for more, and returns them as a
// batch (nil with open false once Close was called and all is sent). It
// takes what queued during the linger at once, rather than waking for
// each event as it comes: one wake a batch, not one a call.
func (w *Writer) gather(ctx context.Context) (*registryv1.AuditBatch, bool) {
	var e *registryv1.AuditEvent
	select {
	case <-ctx.Done():
		return nil, false
	case ev, ok := <-w.ch:
		if !ok {
			return nil, false
		}
		e = ev
	}
	batch := &registryv1.AuditBatch{Events: []*registryv1.AuditEvent{e}}
	size := proto.Size(e)
	// take adds what is queued, within a batch's bounds; full reports
	// whether the batch can go without lingering.
	take := func() (full bool) {
		for len(batch.Events) < MaxBatch && size < maxBatchBytes {
			select {
			case ev, ok := <-w.ch:
				if !ok {
					return true
				}
				batch.Events = append(batch.Events, ev)
				size += proto.Size(ev)
			default:
				return false
			}
		}
		return true
	}
	if take() {
		return batch, true
	}
	timer := time.NewTimer(linger)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	take()
	return batch, true
}

// A batch travels S2-compressed: a busy mailbox's events repeat their
// names, and compressed they cost the trail (and an embedded suite's
// NATS, which caches what it stores) a fraction of the bytes.

// maxDecoded bounds what one message of the trail may decode to.
const maxDecoded = 16 << 20

// Encode is a batch as the trail stores it.
func Encode(b *registryv1.AuditBatch) ([]byte, error) {
	data, err := proto.Marshal(b)
	if err != nil {
		return nil, err
	}
	return s2.Encode(nil, data), nil
}

// Decode reads one message of the trail.
func Decode(data []byte) (*registryv1.AuditBatch, error) {
	n, err := s2.DecodedLen(data)
	if err != nil {
		return nil, err
	}
	if n > maxDecoded {
		return nil, fmt.Errorf("an audit batch of %d bytes decoded is over the %d one may hold", n, maxDecoded)
	}
	raw, err := s2.Decode(nil, data)
	if err != nil {
		return nil, err
	}
	b := &registryv1.AuditBatch{}
	return b, proto.Unmarshal(raw, b)
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
