// Package host is the local tool host (`switchboard host`, docs/design.md §6): it
// advertises the tools of a tools file under its client identity, follows
// its queue on the mailbox, runs each invocation's argv with the input JSON
// on stdin, and completes it with the capture. The following is
// kit/follower's; what is the host's own is advertising the tools file and
// running argv.
package host

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/host/internal/run"
	"github.com/switchboard-run/switchboard/services/host/internal/toolsfile"
)

// Host serves one tools file as one client.
type Host struct {
	adv      []*registryv1.Tool
	reg      registryv1.RegistryServiceClient
	as       func(context.Context) context.Context // asserts the client identity (dev mode)
	session  string
	log      *slog.Logger
	runner   runner
	follower *follower.Follower

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
	// Deadline bounds each run (the follower's default when zero); an
	// invocation's own shorter timeout wins.
	Deadline time.Duration
	// CacheBytes bounds the recent captures kept (DefaultCacheBytes when
	// zero).
	CacheBytes int
	Log        *slog.Logger
	// Telemetry, when tracing, makes each run a span of the driver's trace.
	Telemetry *telemetry.Telemetry
}

// New returns a host; Run serves.
func New(o Options) *Host {
	h := &Host{
		adv:     toolsfile.Advertisement(o.Tools),
		reg:     o.Registry,
		as:      o.As,
		session: newSession(),
		log:     o.Log,
		runner:  runner{tools: map[string]*toolsfile.Tool{}, limits: o.Limits},
		ready:   make(chan struct{}),
	}
	for i := range o.Tools {
		h.runner.tools[o.Tools[i].Advertised.GetName()] = &o.Tools[i]
	}
	h.follower = follower.New(follower.Options{
		Mailbox:     o.Mailbox,
		Session:     h.session,
		As:          o.As,
		Slots:       max(o.Concurrency, 1),
		Deadline:    o.Deadline,
		RecentBytes: cmp.Or(o.CacheBytes, DefaultCacheBytes),
		Advertise:   h.advertise,
		Opened:      func(context.Context, int32) { h.readyOnce.Do(func() { close(h.ready) }) },
		Fatal:       fatal,
		Log:         o.Log,
		Telemetry:   o.Telemetry,
	})
	return h
}

// Ready is closed once the host first holds its read.
func (h *Host) Ready() <-chan struct{} { return h.ready }

// errFatal marks a refusal after which the process cannot be a host at all.
type errFatal struct{ error }

// fatal says which errors end the host: a refused advertisement, or the
// mailbox refusing this identity its queue.
func fatal(err error) bool {
	if _, ok := errors.AsType[errFatal](err); ok {
		return true
	}
	c := status.Code(err)
	return c == codes.PermissionDenied || c == codes.Unauthenticated
}

// Run advertises and follows until ctx ends, redialing with a backoff that
// settles. On ctx's end it stops reading and waits for the runs in flight
// to finish and be completed. It returns early only when it cannot be a
// host at all (a refused advertisement, a refused identity).
func (h *Host) Run(ctx context.Context) error {
	err := h.follower.Run(ctx, h.runner)
	if err == nil {
		return nil
	}
	if refused, ok := errors.AsType[errFatal](err); ok {
		return refused.error
	}
	return fmt.Errorf("the mailbox refused this host: %s", status.Convert(err).Message())
}

// advertise presents the tools file under the host's identity and session,
// before each Follow.
func (h *Host) advertise(ctx context.Context) error {
	res, err := h.reg.Advertise(h.as(ctx), &registryv1.AdvertiseRequest{Tools: h.adv, Session: &h.session})
	if err != nil {
		switch status.Code(err) {
		case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.ResourceExhausted:
			return errFatal{fmt.Errorf("the registry refused this host's advertisement: %s", status.Convert(err).Message())}
		}
		return fmt.Errorf("advertising: %w", err)
	}
	h.log.Info("advertised", "client", res.GetClient(), "tools", len(h.adv), "wrote", res.GetWrote())
	return nil
}

// runner runs the tools file's argv: the host's follower.Runner.
type runner struct {
	tools  map[string]*toolsfile.Tool
	limits run.Limits
}

// Run runs one invocation's argv. A cancel ends the process; its capture
// is then not sent (the mailbox answered the poster already).
func (r runner) Run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	tool := r.tools[inv.GetTool()]
	if tool == nil {
		return capture.Failed(capture.ExitNotFound, "switchboard: tool %q is not in this host's tools file", inv.GetTool())
	}
	ri := run.Invocation{ID: inv.GetInvocation(), Tool: inv.GetTool(), Input: inv.GetInput(),
		Cwd: inv.Cwd, Delivery: inv.GetDelivery(), Progress: follower.Progress(ctx)}
	if contract.Answers(inv.GetMcpParams()) {
		ri.Ask = follower.Asker(ctx, inv.GetDelivery())
	}
	return run.Run(ctx, tool, ri, r.limits)
}

func newSession() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "host-" + hex.EncodeToString(b[:])
}
