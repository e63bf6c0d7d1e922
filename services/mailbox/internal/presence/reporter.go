// Package presence tells the registry which clients hold a read, over one
// long-lived ReportPresence stream. The registry withdraws everything a
// stream contributed when it ends, so after a redial the reporter sends the
// reads held now, not the events it missed.
package presence

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/retry"
)

// Reporter implements slots.Presence. Opened and Closed never block: they
// queue a message for the sending goroutine.
type Reporter struct {
	reg    registryv1.RegistryServiceClient
	caller identity.Self
	log    *slog.Logger

	mu      sync.Mutex
	held    map[string]string // client → session of its read
	pending []*registryv1.ReportPresenceRequest
	signal  chan struct{}
}

// New returns a reporter; Run sends what it hears.
func New(reg registryv1.RegistryServiceClient, caller identity.Self, log *slog.Logger) *Reporter {
	return &Reporter{reg: reg, caller: caller, log: log, held: map[string]string{}, signal: make(chan struct{}, 1)}
}

// Opened records a read opening.
func (r *Reporter) Opened(client, session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held[client] = session
	r.queue(report(client, session, true))
}

// Closed records a read closing; the message names the read's session, as
// its opening did, so the registry matches the two.
func (r *Reporter) Closed(client string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	session, ok := r.held[client]
	if !ok {
		return
	}
	delete(r.held, client)
	r.queue(report(client, session, false))
}

func report(client, session string, open bool) *registryv1.ReportPresenceRequest {
	m := &registryv1.ReportPresenceRequest{Client: client, Open: open}
	if session != "" {
		m.Session = proto.String(session)
	}
	return m
}

// queue appends a message and wakes the sender. Called with r.mu held.
func (r *Reporter) queue(m *registryv1.ReportPresenceRequest) {
	r.pending = append(r.pending, m)
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// Run keeps a stream to the registry until ctx ends, redialing under the
// suite's default backoff. A stream gives no sign that the registry took
// it, so only one that lasted resets the backoff.
func (r *Reporter) Run(ctx context.Context) {
	_ = retry.Loop{Policy: retry.Default, OnRetry: func(err error, wait time.Duration) {
		r.log.Warn("presence stream to the registry ended; redialing", "err", err, "retry_in", wait.Round(time.Millisecond))
	}}.Forever(ctx, func(ctx context.Context) (bool, error) { return false, r.stream(ctx) })
}

func (r *Reporter) stream(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := r.reg.ReportPresence(r.caller.AsSelf(ctx))
	if err != nil {
		return err
	}
	// A new stream starts from nothing at the registry: send the reads held
	// now, in place of whatever was queued for the old stream.
	r.mu.Lock()
	r.pending = r.pending[:0]
	for client, session := range r.held {
		r.pending = append(r.pending, report(client, session, true))
	}
	r.mu.Unlock()
	// The registry answers only when it ends the stream; a receive that
	// returns is how a broken stream is noticed while nothing is sent.
	broken := make(chan error, 1)
	go func() { broken <- s.RecvMsg(new(registryv1.ReportPresenceResponse)) }()
	for {
		r.mu.Lock()
		batch := r.pending
		r.pending = nil
		r.mu.Unlock()
		for _, m := range batch {
			if err := s.Send(m); err != nil {
				return err
			}
		}
		select {
		case <-r.signal:
		case err := <-broken:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
