package mailbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/workers"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// Serve bounds: the completes a stream stores at once (a host past it
// waits, through flow control, for one to finish), and how long one may
// take once its stream has ended.
const (
	serveCompletes   = 64
	serveCompleteFor = 10 * time.Second
)

// completeMethod names a complete's span as a unary Complete's is named,
// so a trace reads the same whichever way the host answered.
var completeMethod = mailboxv1.MailboxService_Complete_FullMethodName[1:]

// Serve is Follow with the host's completes on the same stream: one
// stream per host instead of a stream and a unary call per answer. The
// handler pushes the read's events as Follow does; a goroutine reads the
// host's completes and stores each on a goroutine of its own (at most
// serveCompletes at once), sending its receipt or refusal on the stream.
// The handler returns only once the completes it took have been answered,
// since a stream cannot be sent on after that; the host sends again with
// Complete whatever it has no receipt for.
func (s *Service) Serve(stream mailboxv1.MailboxService_ServeServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	open := first.GetOpen()
	if open == nil {
		return status.Error(codes.InvalidArgument, "serve: the first message must be open; a complete may only follow it")
	}
	caller, err := identity.Caller(ctx)
	if err != nil {
		return err
	}
	read, err := s.openStreamRead(ctx, open.GetSession())
	if err != nil {
		return err
	}
	defer read.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l := &line{s: s, stream: stream, caller: caller.Name, slots: make(chan struct{}, serveCompletes), workers: workers.New(serveCompletes)}
	go l.answer(ctx, cancel)
	err = s.push(ctx, read, l.follow)
	l.close()
	if cause := context.Cause(ctx); errors.Is(cause, errProtocol) {
		return cause
	}
	return err
}

// errProtocol marks a host's message out of place on a serve stream.
var errProtocol = status.Error(codes.InvalidArgument, "serve: open may only be the first message; every later one must be a complete")

// line is one Serve stream's sending side, shared by the push loop and
// the completes: a gRPC stream takes one sender at a time.
type line struct {
	s      *Service
	stream mailboxv1.MailboxService_ServeServer
	caller string
	slots  chan struct{} // one per complete being stored
	// The completes' goroutines, closed when answer returns.
	workers *workers.Pool

	mu     sync.Mutex     // the stream's sends, and closed
	closed bool           // the handler is returning: no complete begins
	wg     sync.WaitGroup // the completes being stored
}

// follow sends one of push's events.
func (l *line) follow(ev *mailboxv1.FollowResponse) error {
	out := &mailboxv1.ServeResponse{}
	switch e := ev.GetEvent().(type) {
	case *mailboxv1.FollowResponse_Opened:
		out.Event = &mailboxv1.ServeResponse_Opened{Opened: e.Opened}
	case *mailboxv1.FollowResponse_Invocation:
		out.Event = &mailboxv1.ServeResponse_Invocation{Invocation: e.Invocation}
	case *mailboxv1.FollowResponse_Cancelled:
		out.Event = &mailboxv1.ServeResponse_Cancelled{Cancelled: e.Cancelled}
	case *mailboxv1.FollowResponse_Answered:
		out.Event = &mailboxv1.ServeResponse_Answered{Answered: e.Answered}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stream.Send(out)
}

// answer reads the host's completes until the stream ends, ending the
// push loop (with errProtocol) on a message out of place. A host that
// closes its side keeps its read: it only sends no more completes.
func (l *line) answer(ctx context.Context, end context.CancelCauseFunc) {
	defer l.workers.Close()
	for {
		req, err := l.stream.Recv()
		if err != nil { // io.EOF, or the stream ended
			return
		}
		c := req.GetComplete()
		if c == nil {
			end(errProtocol)
			return
		}
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if !l.begin() {
			return
		}
		carried := req.GetTraceContext()
		l.workers.Go(func() { l.complete(ctx, c, carried) })
	}
}

// begin counts a complete in, unless the handler is returning.
func (l *line) begin() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	return true
}

// complete stores one capture and sends its receipt or refusal. It is
// stored even when the stream ends meanwhile (within serveCompleteFor):
// the host's resend then finds it answered, and the poster has it sooner.
func (l *line) complete(ctx context.Context, req *mailboxv1.CompleteRequest, carried map[string]string) {
	defer func() { <-l.slots }()
	defer l.wg.Done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveCompleteFor)
	defer cancel()
	ctx, span := l.s.span(telemetry.Extract(ctx, carried), req.GetInvocation())
	defer span.End()
	out := &mailboxv1.ServeResponse{}
	_, err := l.s.complete(ctx, l.caller, req)
	if err != nil && ctx.Err() != nil { // its time ran out here: the host's to try again, not a verdict
		err = status.Errorf(codes.Unavailable, "the mailbox could not store the capture of %s within %v (NATS is slow to answer); send it again", req.GetInvocation(), serveCompleteFor)
	}
	l.s.metrics.streamed.WithLabelValues(status.Code(err).String()).Inc()
	if err != nil {
		st := status.Convert(err)
		out.Event = &mailboxv1.ServeResponse_Refused{Refused: &mailboxv1.Refused{
			Invocation: req.GetInvocation(), Code: int32(st.Code()), Message: st.Message()}}
	} else {
		// The receipt names the invocation alone: the host has the capture.
		out.Event = &mailboxv1.ServeResponse_Completed{Completed: &mailboxv1.CompleteResponse{Invocation: req.GetInvocation()}}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.stream.Send(out) // a stream that broke: the host sends again
}

// close takes no more completes, and waits for those taken, so that their
// receipts go out before the handler returns.
func (l *line) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wg.Wait()
}

// span is a complete's server span on a serve stream, named as a unary
// Complete's is; without tracing, ctx as it is.
func (s *Service) span(ctx context.Context, id string) (context.Context, trace.Span) {
	if s.tel == nil || !s.tel.Tracing() {
		return ctx, noop.Span{}
	}
	return s.tel.Tracer("switchboard/mailbox").Start(ctx, completeMethod, trace.WithSpanKind(trace.SpanKindServer))
}
