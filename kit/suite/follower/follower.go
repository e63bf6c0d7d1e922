// Package follower is the core every tool host shares (docs/design.md §5, §6): it
// follows one client's queue on the mailbox, redialing when the stream
// breaks; runs each invocation once, answering a redelivery of one it has
// answered already from memory; completes it with its capture; cancels a
// run whose poster cancelled it; and sends the progress notes a run gives
// (Progress) to the mailbox. Hosts differ only in their Runner: the
// local host runs argv, the bridge calls an MCP server or a plugin backend.
package follower

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// Runner runs invocations: what a tool host is, beyond following.
type Runner interface {
	// Run runs inv and returns its capture, or nil when there is nobody to
	// answer (it was never sent anywhere, and the mailbox hands it out
	// again at the next read). ctx ends when the poster cancels inv, or
	// when Options.RunContext ends; a capture returned after that is not
	// sent. It also ends at the run's deadline (Overran says so): the
	// capture returned then is sent, and nil is answered with exit code
	// 124 and a sentence. Runs may overlap, up to Options.Slots.
	Run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture
}

// Mailbox is what a follower asks of the mailbox.
type Mailbox interface {
	Follow(ctx context.Context, in *mailboxv1.FollowRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[mailboxv1.FollowResponse], error)
	Complete(ctx context.Context, in *mailboxv1.CompleteRequest, opts ...grpc.CallOption) (*mailboxv1.CompleteResponse, error)
	// Report carries a run's progress notes (Progress).
	Report(ctx context.Context, in *mailboxv1.ReportRequest, opts ...grpc.CallOption) (*mailboxv1.ReportResponse, error)
}

// Default bounds of what a follower holds.
const (
	DefaultSlots       = 1
	DefaultQueuedBytes = 16 << 20
	// DefaultRecent covers two minutes of a busy host's 130 calls/s: a
	// redelivery after a NATS quorum loss comes 10–15 s late.
	DefaultRecent        = 16384
	DefaultRecentBytes   = 16 << 20
	completeWithin       = 30 * time.Second
	completeAttemptLimit = 10 * time.Second
)

// Options configure a Follower. Mailbox is required; the rest have
// defaults.
type Options struct {
	Mailbox Mailbox
	// Session names the follow read; the registry's serving guard matches
	// the host's advertisements to it.
	Session string
	// As is ctx calling as the host's identity; nil: ctx as it is (with
	// TLS the certificate speaks).
	As func(context.Context) context.Context
	// Slots bounds the runs at once. A run holds its slot until its
	// capture is sent, so there are never more run goroutines than slots.
	Slots int
	// Queued and QueuedBytes (of input) bound the invocations read ahead
	// while every slot is busy; they wait in delivery order, holding no
	// goroutine. At the bound the follower stops reading the stream, so
	// the rest stay with the mailbox. Queued is at least (and by default)
	// one: with every slot busy the follower still reads, so a cancel of a
	// running call reaches it, until one invocation waits; a cancel behind
	// that one is read when a slot frees, at the latest when a run reaches
	// its deadline.
	Queued, QueuedBytes int
	// Deadline bounds each run (DefaultDeadline when zero); an
	// invocation's own timeout, when shorter, bounds it instead. At the
	// deadline the run's context ends with an *Overrun cause; the runner
	// stops the run and answers it, exit code 124 (Overran).
	Deadline time.Duration
	// Recent and RecentBytes (of captures) bound the memory of answered
	// invocations; the oldest is forgotten first.
	Recent, RecentBytes int
	// RunContext is the parent of every run's context; nil: none. Runs
	// outlive the stream and Run's context: a host asked to stop finishes
	// what it holds, and only RunContext ending ends them unanswered
	// (and stops retrying a capture the mailbox could not take).
	RunContext context.Context
	// Advertise, when set, is called before each Follow; its error ends
	// that attempt.
	Advertise func(ctx context.Context) error
	// Opened, when set, is called each time a read opens, before any of
	// its invocations is taken.
	Opened func(ctx context.Context, requeued int32)
	// Fatal says whether an error of Advertise or of the Follow stream
	// means this process cannot be a host at all: Run returns it. Nil:
	// every error is tried again.
	Fatal func(error) bool
	// Redial is the backoff between Follow attempts; zero: retry.Default.
	// A refusal as UNAVAILABLE waits at most briefFault whatever it says.
	Redial retry.Policy
	// Standby says whether a refused Follow means another reader holds the
	// queue now (a replica of the same host): it is tried again like any
	// refusal, but logged rather than reported as a fault. Nil: none is.
	Standby func(error) bool
	// OnFault and OnNotice take the follower's sentences (a broken
	// stream, a capture not taken; a cancel); nil: the log.
	OnFault, OnNotice func(string)
	Log               *slog.Logger
	// Telemetry, when tracing, makes each run a span continuing the
	// invocation's trace context; nil: runs continue it without a span of
	// their own.
	Telemetry *telemetry.Telemetry
}

// Follower serves one client's queue. Run it once at a time.
type Follower struct {
	o   Options
	log *slog.Logger

	mu     sync.Mutex
	calls  map[string]*call // queued or running, by invocation id
	queue  []*call          // waiting for a slot, in delivery order
	queued int              // bytes of input in queue
	room   chan struct{}    // a wake-up when the queue shrinks or a slot frees
	free   int              // slots not held
	recent *recent
	wg     sync.WaitGroup // the runs
	// answers are the runs' questions waiting for their answers (asks.go).
	answers map[question]chan *mailboxv1.Answered

	line atomic.Pointer[line] // the Serve stream's answering side, while it lives (serve.go)

	idle     chan job      // a worker waiting for a run (workers.go)
	stopped  chan struct{} // closed once Run has returned
	stopOnce sync.Once
}

// New returns a follower; Run serves.
func New(o Options) *Follower {
	o.Slots = orDefault(o.Slots, DefaultSlots)
	o.Queued = max(o.Queued, 1)
	o.QueuedBytes = orDefault(o.QueuedBytes, DefaultQueuedBytes)
	o.Deadline = time.Duration(orDefault(int(o.Deadline), int(DefaultDeadline)))
	if o.As == nil {
		o.As = func(ctx context.Context) context.Context { return ctx }
	}
	if o.RunContext == nil {
		o.RunContext = context.Background()
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	return &Follower{o: o, log: log, calls: map[string]*call{}, answers: map[question]chan *mailboxv1.Answered{}, room: make(chan struct{}, 1), free: o.Slots,
		idle: make(chan job), stopped: make(chan struct{}),
		recent: newRecent(orDefault(o.Recent, DefaultRecent), orDefault(o.RecentBytes, DefaultRecentBytes))}
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// Run follows the queue with r as the runner until ctx ends, redialing
// under the suite's default backoff; a read that opened resets it. Once
// ctx ends it stops reading and returns when the runs in flight have
// finished and been completed. It returns early, with the error, only when
// Options.Fatal says one is fatal.
func (f *Follower) Run(ctx context.Context, r Runner) error {
	defer f.stop() // after the runs: the workers then only wait
	defer f.wg.Wait()
	policy := f.o.Redial
	if policy == (retry.Policy{}) {
		policy = retry.Default
	}
	redial := retry.Loop{Policy: policy, Ceiling: brief, OnRetry: func(err error, wait time.Duration) {
		if f.o.Standby != nil && f.o.Standby(err) {
			f.log.Debug("standing by: another reader holds the queue", "error", message(err), "again_in", wait)
			return
		}
		f.fault(fmt.Sprintf("following the mailbox: %s; again in %v", message(err), wait.Round(time.Millisecond)))
	}}
	return redial.Forever(ctx, func(ctx context.Context) (bool, error) {
		opened, err := f.follow(ctx, r)
		if err != nil && f.o.Fatal != nil && f.o.Fatal(err) {
			return opened, retry.Stop(err)
		}
		return opened, err
	})
}

// follow advertises, then holds one Follow stream and takes what arrives
// until it ends. What is still queued when it ends is dropped: the mailbox
// hands it out again at the next read.
func (f *Follower) follow(ctx context.Context, r Runner) (opened bool, err error) {
	defer f.dropQueued() // after cancel: a queued call of an ended stream never starts
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if f.o.Advertise != nil {
		if err := f.o.Advertise(ctx); err != nil {
			return false, err
		}
	}
	first, next, err := f.open(ctx)
	// A Serve stream's line ends with the read, and resends what it holds.
	defer f.endLine()
	if err != nil {
		return false, err
	}
	if first.GetOpened() == nil {
		return false, fmt.Errorf("the mailbox's first event on the stream was %v, not opened", first)
	}
	f.log.Info("following", "requeued", first.GetOpened().GetRequeued())
	if f.o.Opened != nil {
		f.o.Opened(ctx, first.GetOpened().GetRequeued())
	}
	for {
		if err := f.awaitRoom(ctx); err != nil {
			return true, err
		}
		ev, err := next()
		if errors.Is(err, io.EOF) {
			err = errors.New("the mailbox ended the stream")
		}
		if err != nil {
			return true, err
		}
		switch e := ev.GetEvent().(type) {
		case *mailboxv1.FollowResponse_Invocation:
			f.take(ctx, r, e.Invocation)
		case *mailboxv1.FollowResponse_Cancelled:
			f.cancel(e.Cancelled.GetInvocation())
		case *mailboxv1.FollowResponse_Answered:
			f.answered(e.Answered)
		}
	}
}

// Held counts the invocations the follower holds, running or read ahead.
func (f *Follower) Held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// complete sends a capture, trying again while the mailbox is unreachable
// for a little while (and RunContext lives: a stopping bridge mount does not
// wait on it); past that, the lease brings the invocation back and the
// capture kept in memory answers it.
func (f *Follower) complete(run context.Context, id string, c *mailboxv1.Capture) {
	// The run's values (its span) without its end: the capture is sent
	// whatever became of the run's context.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(run), completeWithin)
	defer cancel()
	// An attempt that ran out of its own time is tried again as an
	// unreachable mailbox is: a store is idempotent by the invocation id.
	send := retry.Loop{Policy: retry.Default, Ceiling: brief, Retryable: func(err error) bool {
		return again(err) && f.o.RunContext.Err() == nil
	}}
	err := send.Do(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, completeAttemptLimit)
		defer cancel()
		_, err := f.o.Mailbox.Complete(f.o.As(ctx), &mailboxv1.CompleteRequest{Invocation: id, Capture: c})
		return err
	})
	switch {
	case err == nil:
	case status.Code(err) == codes.NotFound:
		// Cancelled or expired meanwhile: nobody is waiting for it.
		f.log.Debug("capture not taken", "invocation", id, "err", message(err))
	default:
		f.fault(fmt.Sprintf("completing %s: %s", id, message(err)))
	}
}

// briefFault caps the wait after an UNAVAILABLE refusal, which is what the
// mailbox and the registry answer while NATS or a stream's leader is away
// for a moment: a host serves again within seconds of its return, not after
// a backoff grown through the outage.
const briefFault = 2 * time.Second

func brief(err error) time.Duration {
	if status.Code(err) == codes.Unavailable {
		return briefFault
	}
	return 0
}

func (f *Follower) fault(s string) {
	if f.o.OnFault != nil {
		f.o.OnFault(s)
		return
	}
	f.log.Warn(s)
}

func (f *Follower) notice(s string) {
	if f.o.OnNotice != nil {
		f.o.OnNotice(s)
		return
	}
	f.log.Info(s)
}

// again reports whether a capture's store failed in a way worth another try.
func again(err error) bool {
	c := status.Code(err)
	return c == codes.Unavailable || c == codes.DeadlineExceeded
}

// message is an error's sentence: a gRPC status's message alone.
func message(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}
