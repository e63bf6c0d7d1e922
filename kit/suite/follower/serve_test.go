package follower

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// serving is the fake mailbox with Serve: each stream goes to the test,
// which writes its events and reads the completes sent on it.
type serving struct {
	*mailbox
	lines chan *bidi
	// refuse, when set, ends every Serve as a mailbox without it does.
	refuse error
	mu     sync.Mutex
	serves int
}

func newServing() *serving { return &serving{mailbox: newMailbox(), lines: make(chan *bidi, 10)} }

func (m *serving) Serve(ctx context.Context, _ ...grpc.CallOption) (grpc.BidiStreamingClient[mailboxv1.ServeRequest, mailboxv1.ServeResponse], error) {
	m.mu.Lock()
	m.serves++
	m.mu.Unlock()
	b := &bidi{ctx: ctx, events: make(chan *mailboxv1.ServeResponse, 100), sent: make(chan *mailboxv1.ServeRequest, 100), refuse: m.refuse}
	if m.refuse == nil {
		b.events <- &mailboxv1.ServeResponse{Event: &mailboxv1.ServeResponse_Opened{Opened: &mailboxv1.Opened{}}}
		m.lines <- b
	}
	return b, nil
}

func (m *serving) serveCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.serves
}

// bidi is one Serve stream.
type bidi struct {
	grpc.ClientStream
	ctx    context.Context
	events chan *mailboxv1.ServeResponse
	sent   chan *mailboxv1.ServeRequest
	refuse error
}

func (b *bidi) Send(m *mailboxv1.ServeRequest) error {
	select {
	case b.sent <- m:
		return nil
	case <-b.ctx.Done():
		return io.EOF
	}
}

func (b *bidi) Recv() (*mailboxv1.ServeResponse, error) {
	if b.refuse != nil {
		return nil, b.refuse
	}
	select {
	case ev, ok := <-b.events:
		if !ok {
			return nil, io.EOF
		}
		return ev, nil
	case <-b.ctx.Done():
		return nil, status.Error(codes.Canceled, "the stream's context ended")
	}
}

func (b *bidi) CloseSend() error { return nil }

func (b *bidi) invoke(id string) {
	b.events <- &mailboxv1.ServeResponse{Event: &mailboxv1.ServeResponse_Invocation{
		Invocation: &mailboxv1.Invocation{Invocation: id, Tool: "t", Input: `{}`}}}
}

// awaitSent reads the next message the follower sent, skipping the open.
func (b *bidi) awaitSent(t *testing.T) *mailboxv1.ServeRequest {
	t.Helper()
	for {
		m := receive(t, b.sent, "a message on the Serve stream")
		if m.GetOpen() == nil {
			return m
		}
	}
}

func (b *bidi) receipt(id string) {
	b.events <- &mailboxv1.ServeResponse{Event: &mailboxv1.ServeResponse_Completed{Completed: &mailboxv1.CompleteResponse{Invocation: id}}}
}

func (b *bidi) refused(id string, code codes.Code) {
	b.events <- &mailboxv1.ServeResponse{Event: &mailboxv1.ServeResponse_Refused{Refused: &mailboxv1.Refused{Invocation: id, Code: int32(code), Message: "no"}}}
}

// awaitSettled waits until the current line holds no capture of id; a
// line that ended has handed its captures to Complete.
func awaitSettled(t *testing.T, f *Follower, id string) {
	t.Helper()
	testkit.Eventually(t, id+"'s receipt taken", 10*time.Second, func() bool {
		l := f.line.Load()
		if l == nil {
			return true
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		_, out := l.pending[id]
		return !out
	})
}

// noUnaryCompletes fails when a capture went with Complete.
func (m *serving) noUnaryCompletes(t *testing.T) {
	t.Helper()
	select {
	case c := <-m.completed:
		t.Fatalf("%s was completed with Complete, want on the stream", c.id)
	default:
	}
}

// With Serve, a capture goes on the read's stream, and once its receipt
// is in the follower holds nothing for it.
func TestCapturesGoOverTheServeStream(t *testing.T) {
	t.Parallel()
	m, r := newServing(), newRunner()
	f, stop := start(t, Options{Mailbox: m}, r)
	b := receive(t, m.lines, "a Serve stream")
	if open := receive(t, b.sent, "the open").GetOpen(); open == nil {
		t.Fatal("the first message on the stream was not the open")
	}
	b.invoke("i1")
	r.awaitStarted(t)
	r.release <- struct{}{}
	c := b.awaitSent(t).GetComplete()
	if c.GetInvocation() != "i1" || c.GetCapture().GetStdout() != "ran i1" {
		t.Fatalf("sent %v, want i1's capture", c)
	}
	b.receipt("i1")
	awaitSettled(t, f, "i1") // stopping first would rightly resend it
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	m.noUnaryCompletes(t)
}

// A capture without a receipt when the stream ends may not be stored: it
// is sent again with Complete, and Run waits for that before it returns.
func TestACaptureWithoutReceiptIsResentWhenTheStreamEnds(t *testing.T) {
	t.Parallel()
	m, r := newServing(), newRunner()
	start(t, Options{Mailbox: m}, r)
	b := receive(t, m.lines, "a Serve stream")
	b.invoke("i1")
	r.awaitStarted(t)
	r.release <- struct{}{}
	b.awaitSent(t)
	close(b.events) // the mailbox replica died before its receipt
	if got := m.awaitCompleted(t); got.id != "i1" || got.c.GetStdout() != "ran i1" {
		t.Fatalf("resent %v, want i1's capture", got)
	}
	receive(t, m.lines, "the next Serve stream")
}

// The follower stopping while a receipt is out resends the capture before
// Run returns.
func TestRunReturnsOnlyOnceEveryCaptureIsReceiptedOrResent(t *testing.T) {
	t.Parallel()
	m, r := newServing(), newRunner()
	_, stop := start(t, Options{Mailbox: m}, r)
	b := receive(t, m.lines, "a Serve stream")
	b.invoke("i1")
	r.awaitStarted(t)
	r.release <- struct{}{}
	b.awaitSent(t)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-m.completed:
		if got.id != "i1" {
			t.Fatalf("resent %s, want i1", got.id)
		}
	default:
		t.Fatal("Run returned before the unreceipted capture was resent")
	}
}

// A complete refused as unavailable (NATS unreachable for a moment) or out
// of time goes to Complete's retries; one refused as absent is given up,
// unsent again.
func TestRefusedCompletesAreRetriedOnlyWhenUnavailable(t *testing.T) {
	t.Parallel()
	m, r := newServing(), newRunner()
	_, stop := start(t, Options{Mailbox: m, Slots: 3}, r)
	b := receive(t, m.lines, "a Serve stream")
	b.invoke("gone")
	b.invoke("busy")
	b.invoke("slow")
	for range 3 {
		r.awaitStarted(t)
		r.release <- struct{}{}
	}
	for range 3 {
		switch id := b.awaitSent(t).GetComplete().GetInvocation(); id {
		case "gone":
			b.refused(id, codes.NotFound)
		case "busy":
			b.refused(id, codes.Unavailable)
		case "slow":
			b.refused(id, codes.DeadlineExceeded)
		}
	}
	got := []string{m.awaitCompleted(t).id, m.awaitCompleted(t).id}
	if slices.Sort(got); !slices.Equal(got, []string{"busy", "slow"}) {
		t.Fatalf("Complete was sent %v, want busy and slow", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	m.noUnaryCompletes(t)
}

// A mailbox without Serve is followed with Follow and answered with
// Complete, and asked for Serve again at the next read, which an upgraded
// replica may serve.
func TestAMailboxWithoutServeIsFollowed(t *testing.T) {
	t.Parallel()
	m, r := newServing(), newRunner()
	m.refuse = status.Error(codes.Unimplemented, "unknown method Serve for service switchboard.mailbox.v1.MailboxService")
	start(t, Options{Mailbox: m}, r)
	s := m.stream(t)
	s.invoke("i1")
	r.awaitStarted(t)
	r.release <- struct{}{}
	if got := m.awaitCompleted(t); got.id != "i1" {
		t.Fatalf("completed %s, want i1", got.id)
	}
	close(s.events) // the stream breaks: the follower follows again
	m.stream(t)
	if n := m.serveCalls(); n != 2 {
		t.Fatalf("Serve was asked %d times, want once per read", n)
	}
}
