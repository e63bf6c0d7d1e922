// Package host is the local tool host (`switchboard host`, DESIGN §6): it
// advertises the tools of a tools file under its client identity, follows
// its queue on the mailbox, runs each invocation's argv with the input JSON
// on stdin, and completes it with the capture.
package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/host/internal/run"
	"github.com/switchboard-run/switchboard/services/host/internal/toolsfile"
)

// Host serves one tools file as one client.
type Host struct {
	tools   map[string]*toolsfile.Tool
	adv     []*registryv1.Tool
	reg     registryv1.RegistryServiceClient
	mb      mailboxv1.MailboxServiceClient
	as      func(context.Context) context.Context // asserts the client identity (dev mode)
	limits  run.Limits
	slots   chan struct{} // concurrency
	session string
	log     *slog.Logger

	mu       sync.Mutex
	inflight map[string]context.CancelFunc
	recent   *recent
	wg       sync.WaitGroup

	// ready is closed the first time the host holds its read (for tests).
	ready     chan struct{}
	readyOnce sync.Once
}

// Options configure a Host.
type Options struct {
	Tools       []toolsfile.Tool
	Registry    registryv1.RegistryServiceClient
	Mailbox     mailboxv1.MailboxServiceClient
	As          func(context.Context) context.Context
	Limits      run.Limits
	Concurrency int
	Log         *slog.Logger
}

// New returns a host; Run serves.
func New(o Options) *Host {
	h := &Host{
		tools:    map[string]*toolsfile.Tool{},
		adv:      toolsfile.Advertisement(o.Tools),
		reg:      o.Registry,
		mb:       o.Mailbox,
		as:       o.As,
		limits:   o.Limits,
		slots:    make(chan struct{}, max(o.Concurrency, 1)),
		session:  newSession(),
		log:      o.Log,
		inflight: map[string]context.CancelFunc{},
		recent:   newRecent(1024),
		ready:    make(chan struct{}),
	}
	for i := range o.Tools {
		h.tools[o.Tools[i].Advertised.GetName()] = &o.Tools[i]
	}
	return h
}

// Ready is closed once the host first holds its read.
func (h *Host) Ready() <-chan struct{} { return h.ready }

// errFatal marks a refusal after which the process cannot be a host at all.
type errFatal struct{ error }

// Run advertises and follows until ctx ends, redialing with a backoff that
// settles at 10 s. On ctx's end it stops reading and waits for the runs in
// flight to finish and be completed. It returns early only when it cannot be
// a host at all (a refused advertisement, a refused identity).
func (h *Host) Run(ctx context.Context) error {
	defer h.wg.Wait()
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		err := h.serve(ctx)
		var fatal errFatal
		if errors.As(err, &fatal) {
			return fatal.error
		}
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) > 30*time.Second {
			backoff = 200 * time.Millisecond
		}
		wait := backoff/2 + mrand.N(backoff/2+1)
		h.log.Warn("lost the mailbox; following again", "err", err, "retry_in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
	return nil
}

// serve advertises, then holds one Follow stream and runs what arrives.
func (h *Host) serve(ctx context.Context) error {
	res, err := h.reg.Advertise(h.as(ctx), &registryv1.AdvertiseRequest{Tools: h.adv, Session: &h.session})
	if err != nil {
		switch status.Code(err) {
		case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.ResourceExhausted:
			return errFatal{fmt.Errorf("the registry refused this host's advertisement: %s", status.Convert(err).Message())}
		}
		return fmt.Errorf("advertising: %w", err)
	}
	h.log.Info("advertised", "client", res.GetClient(), "tools", len(h.adv), "wrote", res.GetWrote())
	stream, err := h.mb.Follow(h.as(ctx), &mailboxv1.FollowRequest{Session: &h.session})
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if status.Code(err) == codes.PermissionDenied || status.Code(err) == codes.Unauthenticated {
				return errFatal{fmt.Errorf("the mailbox refused this host: %s", status.Convert(err).Message())}
			}
			return err
		}
		switch e := ev.Event.(type) {
		case *mailboxv1.FollowResponse_Opened:
			h.log.Info("following", "requeued", e.Opened.GetRequeued())
			h.readyOnce.Do(func() { close(h.ready) })
		case *mailboxv1.FollowResponse_Invocation:
			h.start(e.Invocation)
		case *mailboxv1.FollowResponse_Cancelled:
			h.cancel(e.Cancelled.GetInvocation())
		}
	}
}

// start runs one invocation in its own goroutine, once: a redelivery of an
// invocation still running is dropped (the run will complete it), and one
// already answered is completed again from memory without running twice.
func (h *Host) start(inv *mailboxv1.Invocation) {
	id := inv.GetInvocation()
	h.mu.Lock()
	if _, running := h.inflight[id]; running {
		h.mu.Unlock()
		return
	}
	// Runs outlive the stream: a host asked to stop finishes what it holds.
	ctx, cancel := context.WithCancel(context.Background())
	h.inflight[id] = cancel
	done := h.recent.get(id)
	h.mu.Unlock()

	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer cancel()
		c := done
		if c == nil {
			h.slots <- struct{}{}
			c = h.run(ctx, inv)
			<-h.slots
		}
		h.complete(id, c)
		h.mu.Lock()
		delete(h.inflight, id)
		h.recent.put(id, c)
		h.mu.Unlock()
	}()
}

func (h *Host) run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	tool := h.tools[inv.GetTool()]
	if tool == nil {
		return capture127(inv.GetTool())
	}
	return run.Run(ctx, tool, run.Invocation{ID: inv.GetInvocation(), Tool: inv.GetTool(), Input: inv.GetInput(),
		Cwd: inv.Cwd, Delivery: inv.GetDelivery()}, h.limits)
}

// cancel stops a run whose invocation its poster cancelled.
func (h *Host) cancel(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.inflight[id]; c != nil {
		h.log.Info("cancelled by its poster", "invocation", id)
		c()
	}
}

// complete posts a capture, retrying while the mailbox is unreachable for a
// little while; past that, the lease brings the invocation back and the
// capture kept in memory answers it.
func (h *Host) complete(id string, c *mailboxv1.Capture) {
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := h.mb.Complete(h.as(ctx), &mailboxv1.CompleteRequest{Invocation: id, Capture: c})
		cancel()
		switch {
		case err == nil:
			return
		case status.Code(err) == codes.Unavailable && attempt < 8:
			time.Sleep(backoff)
			backoff *= 2
			continue
		}
		h.log.Warn("could not complete", "invocation", id, "err", status.Convert(err).Message())
		return
	}
}

func newSession() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "host-" + hex.EncodeToString(b[:])
}
