package follower

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// wait bounds every wait of these tests for a condition; none is a timing.
const wait = 10 * time.Second

// stream is one Follow stream the test writes events into.
type stream struct {
	grpc.ClientStream
	ctx    context.Context
	events chan *mailboxv1.FollowResponse
	mu     sync.Mutex
	read   int // events handed to the follower, opened included
}

func (s *stream) Recv() (*mailboxv1.FollowResponse, error) {
	select {
	case ev, ok := <-s.events:
		if !ok {
			return nil, io.EOF
		}
		s.mu.Lock()
		s.read++
		s.mu.Unlock()
		return ev, nil
	case <-s.ctx.Done():
		return nil, status.Error(codes.Canceled, "the stream's context ended")
	}
}

func (s *stream) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read
}

// awaitReads waits until the follower has taken n events off the stream.
func (s *stream) awaitReads(t *testing.T, n int) {
	t.Helper()
	testkit.Await(t, "the follower's reads", wait, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.read < n {
			return fmt.Errorf("the follower read %d events, want %d", s.read, n)
		}
		return nil
	})
}

func (s *stream) invoke(ids ...string) {
	for _, id := range ids {
		s.events <- &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Invocation{
			Invocation: &mailboxv1.Invocation{Invocation: id, Tool: "t", Input: `{}`}}}
	}
}

func (s *stream) cancel(id string) {
	s.events <- &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Cancelled{
		Cancelled: &mailboxv1.Cancelled{Invocation: id}}}
}

type completion struct {
	id string
	c  *mailboxv1.Capture
}

// mailbox hands each Follow's stream to the test and records completions;
// refuse, when set, answers a Complete instead.
type mailbox struct {
	streams   chan *stream
	completed chan completion
	mu        sync.Mutex
	refuse    []error // answers for the next Completes, in order
	// reports receives every Report; with gate set, each Report then waits
	// for a value from it before it returns.
	reports chan *mailboxv1.ReportRequest
	gate    chan struct{}
}

func newMailbox() *mailbox {
	return &mailbox{streams: make(chan *stream, 10), completed: make(chan completion, 100),
		reports: make(chan *mailboxv1.ReportRequest, 100)}
}

func (m *mailbox) Follow(ctx context.Context, _ *mailboxv1.FollowRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[mailboxv1.FollowResponse], error) {
	s := &stream{ctx: ctx, events: make(chan *mailboxv1.FollowResponse, 100)}
	s.events <- &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Opened{Opened: &mailboxv1.Opened{}}}
	m.streams <- s
	return s, nil
}

func (m *mailbox) Complete(_ context.Context, in *mailboxv1.CompleteRequest, _ ...grpc.CallOption) (*mailboxv1.CompleteResponse, error) {
	m.mu.Lock()
	var err error
	if len(m.refuse) > 0 {
		err, m.refuse = m.refuse[0], m.refuse[1:]
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	m.completed <- completion{in.GetInvocation(), in.GetCapture()}
	return &mailboxv1.CompleteResponse{}, nil
}

func (m *mailbox) Report(ctx context.Context, in *mailboxv1.ReportRequest, _ ...grpc.CallOption) (*mailboxv1.ReportResponse, error) {
	m.reports <- in
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	return &mailboxv1.ReportResponse{}, nil
}

// receive takes one value from ch, failing when none comes.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("%s never happened", what)
		var zero T
		return zero
	}
}

func (m *mailbox) stream(t *testing.T) *stream {
	t.Helper()
	return receive(t, m.streams, "a Follow stream")
}

func (m *mailbox) awaitCompleted(t *testing.T) completion {
	t.Helper()
	return receive(t, m.completed, "a completion")
}

// runner runs each invocation until the test releases it or its context
// ends, and counts how many run at once.
type runner struct {
	started   chan string
	cancelled chan string
	release   chan struct{}
	mu        sync.Mutex
	running   int
	most      int
	runs      int
}

func newRunner() *runner {
	return &runner{started: make(chan string, 100), cancelled: make(chan string, 100), release: make(chan struct{}, 100)}
}

func (r *runner) Run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	r.mu.Lock()
	r.running++
	r.runs++
	r.most = max(r.most, r.running)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
	}()
	r.started <- inv.GetInvocation()
	select {
	case <-r.release:
		out := "ran " + inv.GetInvocation()
		return &mailboxv1.Capture{Stdout: &out}
	case <-ctx.Done():
		r.cancelled <- inv.GetInvocation()
		out := "cancelled"
		return &mailboxv1.Capture{Stdout: &out}
	}
}

func (r *runner) awaitStarted(t *testing.T) string {
	t.Helper()
	return receive(t, r.started, "a run")
}

func (r *runner) counts() (runs, most int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs, r.most
}

// notes collects the follower's sentences.
type notes struct{ ch chan string }

func newNotes() notes { return notes{ch: make(chan string, 100)} }

func (n notes) add(s string) { n.ch <- s }

// await reads sentences until one starts with want.
func (n notes) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case s := <-n.ch:
			if strings.HasPrefix(s, want) {
				return
			}
		case <-deadline:
			t.Fatalf("never told %q", want)
		}
	}
}

// start runs a follower with o until the test ends; stop ends it and
// returns Run's error.
func start(t *testing.T, o Options, r Runner) (f *Follower, stop func() error) {
	t.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	f = New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, r) }()
	stopped := false
	stop = func() error {
		cancel()
		stopped = true
		return <-done
	}
	t.Cleanup(func() {
		if !stopped {
			_ = stop()
		}
	})
	return f, stop
}
