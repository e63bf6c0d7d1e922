package follower

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// A follower reads and answers on one Serve stream when the mailbox has
// it: a capture then costs the host one message, not a unary call (a
// round trip, and the call's own work on both sides). A mailbox without
// Serve (Unimplemented: one not yet upgraded) is followed with Follow, and
// captures go with Complete, as before. Each read tries Serve first, so a
// host finds an upgraded replica at its next read.

// server is a Mailbox that also serves completes on the read's stream, as
// mailboxv1.MailboxServiceClient does.
type server interface {
	Serve(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[mailboxv1.ServeRequest, mailboxv1.ServeResponse], error)
}

// lineBacklog bounds the captures waiting for the stream's sender; past
// it a run sends its capture with Complete itself.
const lineBacklog = 256

// completeMethod names the span of a complete sent on the stream as a
// unary Complete's client span is named, so a trace reads the same
// whichever way the capture went.
var completeMethod = mailboxv1.MailboxService_Complete_FullMethodName[1:]

// events is a read's next event, whichever RPC holds it.
type events func() (*mailboxv1.FollowResponse, error)

// open opens the read: a Serve stream, or Follow when the mailbox has no
// Serve. The first event is returned with the rest.
func (f *Follower) open(ctx context.Context) (*mailboxv1.FollowResponse, events, error) {
	session := f.o.Session
	if sv, ok := f.o.Mailbox.(server); ok {
		first, next, err := f.openServe(ctx, sv, session)
		if status.Code(err) != codes.Unimplemented {
			return first, next, err
		}
		f.log.Debug("the mailbox has no Serve: following with Follow, answering with Complete")
	}
	stream, err := f.o.Mailbox.Follow(f.o.As(ctx), &mailboxv1.FollowRequest{Session: &session})
	if err != nil {
		return nil, nil, err
	}
	first, err := stream.Recv()
	return first, stream.Recv, err
}

// openServe opens a Serve stream and installs its line for the runs' captures
// until the stream ends.
func (f *Follower) openServe(ctx context.Context, sv server, session string) (*mailboxv1.FollowResponse, events, error) {
	stream, err := sv.Serve(f.o.As(ctx))
	if err != nil {
		return nil, nil, err
	}
	if err := stream.Send(&mailboxv1.ServeRequest{Message: &mailboxv1.ServeRequest_Open{Open: &mailboxv1.FollowRequest{Session: &session}}}); err != nil {
		return nil, nil, recvErr(stream, err)
	}
	l := &line{f: f, stream: stream, out: make(chan *sent, lineBacklog), pending: map[string]*sent{}, done: make(chan struct{})}
	next := func() (*mailboxv1.FollowResponse, error) {
		for {
			ev, err := stream.Recv()
			if err != nil {
				l.end()
				return nil, err
			}
			if ev := l.take(ev); ev != nil {
				return ev, nil
			}
		}
	}
	first, err := next()
	if err != nil {
		return nil, nil, err
	}
	f.line.Store(l)
	go l.send()
	return first, next, nil
}

// recvErr is the status a stream ended with, when Send only says it
// ended (io.EOF).
func recvErr(stream grpc.BidiStreamingClient[mailboxv1.ServeRequest, mailboxv1.ServeResponse], err error) error {
	if _, rerr := stream.Recv(); rerr != nil {
		return rerr
	}
	return err
}

// sent is a capture on its way over the stream, until its receipt.
type sent struct {
	id   string
	c    *mailboxv1.Capture
	run  context.Context // the run's values, for a resend
	span trace.Span
	// carried is the span's trace context, for the mailbox's span
	carried map[string]string
}

// line is one Serve stream's answering side: a sender goroutine, so that
// no run waits on the stream, and the captures not yet receipted.
type line struct {
	f      *Follower
	stream grpc.BidiStreamingClient[mailboxv1.ServeRequest, mailboxv1.ServeResponse]
	out    chan *sent

	mu      sync.Mutex
	pending map[string]*sent
	ended   bool
	done    chan struct{} // closed when the stream has ended
}

// answer sends a run's capture over the current stream, and reports
// whether it took it; it did not when there is none, it ended, or its
// backlog is full (the caller sends with Complete). Each capture it takes
// holds f.wg until its receipt, or its resend, is over.
func (f *Follower) answer(run context.Context, id string, c *mailboxv1.Capture) bool {
	l := f.line.Load()
	if l == nil {
		return false
	}
	s := &sent{id: id, c: c, run: run, span: noop.Span{}}
	if f.o.Telemetry != nil && f.o.Telemetry.Tracing() {
		var ctx context.Context
		ctx, s.span = f.o.Telemetry.Tracer("switchboard/follower").Start(run, completeMethod, trace.WithSpanKind(trace.SpanKindClient))
		s.carried = telemetry.Inject(ctx)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, twice := l.pending[id]; l.ended || twice {
		s.span.End()
		return false
	}
	select {
	case l.out <- s:
	default:
		s.span.End()
		return false
	}
	l.pending[id] = s
	f.wg.Add(1) // the run calling holds f.wg too: never from zero
	return true
}

// send writes the queued captures until the stream ends; what it had
// not written by then is resent by end.
func (l *line) send() {
	for {
		select {
		case s := <-l.out:
			req := &mailboxv1.ServeRequest{Message: &mailboxv1.ServeRequest_Complete{
				Complete: &mailboxv1.CompleteRequest{Invocation: s.id, Capture: s.c}}, TraceContext: s.carried}
			if l.stream.Send(req) != nil {
				return // the reader sees the end, and resends
			}
		case <-l.done:
			return
		}
	}
}

// take settles a receipt or refusal, and returns any other event as
// Follow's.
func (l *line) take(ev *mailboxv1.ServeResponse) *mailboxv1.FollowResponse {
	switch e := ev.GetEvent().(type) {
	case *mailboxv1.ServeResponse_Completed:
		l.settle(e.Completed.GetInvocation(), nil)
	case *mailboxv1.ServeResponse_Refused:
		l.settle(e.Refused.GetInvocation(), status.Error(codes.Code(e.Refused.GetCode()), e.Refused.GetMessage()))
	}
	return FollowEvent(ev)
}

// FollowEvent is a Serve stream's event as Follow sends it: opened, an
// invocation, a cancellation or an answer; nil for a complete's receipt or refusal,
// which Follow has no event for.
func FollowEvent(ev *mailboxv1.ServeResponse) *mailboxv1.FollowResponse {
	switch e := ev.GetEvent().(type) {
	case *mailboxv1.ServeResponse_Opened:
		return &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Opened{Opened: e.Opened}}
	case *mailboxv1.ServeResponse_Invocation:
		return &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Invocation{Invocation: e.Invocation}}
	case *mailboxv1.ServeResponse_Cancelled:
		return &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Cancelled{Cancelled: e.Cancelled}}
	case *mailboxv1.ServeResponse_Answered:
		return &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Answered{Answered: e.Answered}}
	}
	return nil
}

// settle ends a capture's journey: stored, refused for good, or (refused
// as unavailable) handed to Complete's retries.
func (l *line) settle(id string, err error) {
	l.mu.Lock()
	s := l.pending[id]
	delete(l.pending, id)
	l.mu.Unlock()
	if s == nil {
		return // not ours (a resend took it over)
	}
	if again(err) {
		go l.resend(s)
		return
	}
	defer l.f.wg.Done()
	defer s.span.End()
	switch {
	case err == nil:
	case status.Code(err) == codes.NotFound:
		l.f.log.Debug("capture not taken", "invocation", id, "err", message(err))
	default:
		l.f.fault(fmt.Sprintf("completing %s: %s", id, message(err)))
	}
}

// end marks the stream over, takes the line down, and resends with
// Complete every capture it holds without a receipt: the mailbox may not
// have stored it, and a second store of one that was finds it answered.
func (l *line) end() {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.ended = true
	close(l.done)
	l.f.line.CompareAndSwap(l, nil)
	left := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, s := range left {
		go l.resend(s)
	}
}

// endLine ends the current Serve stream's line, if one lives.
func (f *Follower) endLine() {
	if l := f.line.Load(); l != nil {
		l.end()
	}
}

// resend sends one capture with Complete, under its retries.
func (l *line) resend(s *sent) {
	defer l.f.wg.Done()
	defer s.span.End()
	l.f.complete(s.run, s.id, s.c)
}
