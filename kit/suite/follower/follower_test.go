package follower

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func (f *Follower) queuedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.queue {
		out = append(out, c.inv.GetInvocation())
	}
	return out
}

func (f *Follower) remembers(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recent.get(id) != nil
}

func TestRunsTakeASlotBeforeTheyStartAndTheRestWaitInOrder(t *testing.T) {
	t.Parallel()
	mb, r, n := newMailbox(), newRunner(), newNotes()
	f, _ := start(t, Options{Mailbox: mb, Slots: 2, Queued: 4, OnNotice: n.add}, r)
	s := mb.stream(t)
	s.invoke("a", "b", "c", "d", "e")
	s.cancel("e") // read after the five: its notice says the reader has taken them all
	n.await(t, "invocation e was cancelled by its poster")
	if q := f.queuedIDs(); !slices.Equal(q, []string{"c", "d"}) {
		t.Errorf("queued = %q, want c and d waiting in order (e cancelled while queued)", q)
	}
	f.mu.Lock()
	free := f.free
	f.mu.Unlock()
	if free != 0 {
		t.Errorf("%d slots free with five delivered and two slots", free)
	}
	got := []string{r.awaitStarted(t), r.awaitStarted(t)}
	r.release <- struct{}{} // one run ends: c takes its slot
	got = append(got, r.awaitStarted(t))
	r.release <- struct{}{} // another: d takes that one
	got = append(got, r.awaitStarted(t))
	slices.Sort(got[:2])
	if !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("started %q, want a and b, then c, then d", got)
	}
	r.release <- struct{}{}
	r.release <- struct{}{}
	for range 4 {
		mb.awaitCompleted(t)
	}
	if runs, most := r.counts(); runs != 4 || most > 2 {
		t.Errorf("%d runs, %d at once; want 4 runs, never more than the 2 slots", runs, most)
	}
}

func TestARedeliveryIsNotRunTwice(t *testing.T) {
	t.Parallel()
	mb, r := newMailbox(), newRunner()
	f, _ := start(t, Options{Mailbox: mb, Slots: 1, Queued: 1}, r)
	s := mb.stream(t)
	s.invoke("a", "a") // redelivered while it runs: dropped
	r.awaitStarted(t)
	s.awaitReads(t, 3)
	r.release <- struct{}{}
	first := mb.awaitCompleted(t)
	testkit.Eventually(t, "the capture sent remembered", wait, func() bool { return f.remembers("a") })
	s.invoke("a") // redelivered after it was answered: answered from memory
	again := mb.awaitCompleted(t)
	if first.id != "a" || again.id != "a" || again.c.GetStdout() != "ran a" {
		t.Errorf("completions %v then %v; want a's capture twice", first, again)
	}
	if runs, _ := r.counts(); runs != 1 {
		t.Errorf("a ran %d times", runs)
	}
}

func TestACancelledRunEndsAndIsNotAnswered(t *testing.T) {
	t.Parallel()
	mb, r, n := newMailbox(), newRunner(), newNotes()
	// With room for two read ahead, the cancel behind b is read while a runs.
	_, _ = start(t, Options{Mailbox: mb, Slots: 1, Queued: 2, OnNotice: n.add}, r)
	s := mb.stream(t)
	s.invoke("a", "b")
	r.awaitStarted(t)
	s.cancel("a")
	if id := <-r.cancelled; id != "a" {
		t.Fatalf("cancelled %q", id)
	}
	n.await(t, "invocation a was cancelled by its poster")
	// b takes a's slot only once a's outcome is settled: what completes
	// first is b.
	if r.awaitStarted(t) != "b" {
		t.Fatal("b did not run after a")
	}
	r.release <- struct{}{}
	if c := mb.awaitCompleted(t); c.id != "b" {
		t.Errorf("completed %q first; a was cancelled and must not be answered", c.id)
	}
}

func TestRunContextEndingLeavesRunsUnanswered(t *testing.T) {
	t.Parallel()
	mb, r := newMailbox(), newRunner()
	runs, stopRuns := context.WithCancel(context.Background())
	_, stop := start(t, Options{Mailbox: mb, RunContext: runs}, r)
	s := mb.stream(t)
	s.invoke("a")
	r.awaitStarted(t)
	stopRuns()
	<-r.cancelled
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-mb.completed:
		t.Errorf("completed %v after its run context ended", c)
	default:
	}
}

func TestStoppingFinishesAndCompletesTheRunsInFlight(t *testing.T) {
	t.Parallel()
	mb, r := newMailbox(), newRunner()
	_, stop := start(t, Options{Mailbox: mb, Slots: 1}, r)
	s := mb.stream(t)
	s.invoke("a", "b")
	r.awaitStarted(t)
	done := make(chan error, 1)
	go func() { done <- stop() }()
	<-s.ctx.Done() // reading has stopped
	select {
	case <-done:
		t.Fatal("Run returned with a run in flight")
	default:
	}
	r.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := mb.awaitCompleted(t); c.id != "a" {
		t.Errorf("completed %v, want a", c)
	}
	if runs, _ := r.counts(); runs != 1 {
		t.Errorf("%d runs; b was queued when reading stopped and goes back to the mailbox", runs)
	}
}

func TestABrokenStreamDropsWhatIsQueuedAndFollowsAgain(t *testing.T) {
	t.Parallel()
	mb, r, faults := newMailbox(), newRunner(), newNotes()
	opened := make(chan struct{}, 10)
	f, _ := start(t, Options{Mailbox: mb, Slots: 1, Queued: 2, OnFault: faults.add,
		Opened: func(context.Context, int32) { opened <- struct{}{} }}, r)
	s := mb.stream(t)
	<-opened
	s.invoke("a", "b")
	r.awaitStarted(t)
	close(s.events)
	faults.await(t, "following the mailbox: the mailbox ended the stream; again in ")
	if q := f.queuedIDs(); len(q) != 0 {
		t.Errorf("queued after the stream broke: %q", q)
	}
	s = mb.stream(t) // followed again
	<-opened
	s.invoke("a", "b") // the lease hands both out again; a still runs here
	s.awaitReads(t, 3)
	r.release <- struct{}{}
	r.release <- struct{}{}
	if r.awaitStarted(t) != "b" {
		t.Error("b did not run after the redial")
	}
	ids := []string{mb.awaitCompleted(t).id, mb.awaitCompleted(t).id}
	if slices.Sort(ids); !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("completed %q", ids)
	}
	if runs, _ := r.counts(); runs != 2 {
		t.Errorf("%d runs, want a and b once each", runs)
	}
}

func TestTheQueueIsBoundedAndTheReaderWaitsForRoom(t *testing.T) {
	t.Parallel()
	mb, r := newMailbox(), newRunner()
	f, _ := start(t, Options{Mailbox: mb, Slots: 1, Queued: 2}, r)
	s := mb.stream(t)
	s.invoke("a", "b", "c", "d")
	r.awaitStarted(t)
	s.awaitReads(t, 4) // opened, then a to c: d stays unread, with the mailbox
	if q := f.queuedIDs(); !slices.Equal(q, []string{"b", "c"}) {
		t.Errorf("queued %q, want b and c", q)
	}
	if read := s.reads(); read != 4 {
		t.Errorf("the follower read %d events with its queue full, want 4: d must stay unread", read)
	}
	for range 4 {
		r.release <- struct{}{}
	}
	var ids []string
	for range 4 {
		ids = append(ids, mb.awaitCompleted(t).id)
	}
	if !slices.Equal(ids, []string{"a", "b", "c", "d"}) {
		t.Errorf("completed %q, want all four in order", ids)
	}
}

func TestCompletingTriesAgainWhileTheMailboxIsUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		refuse    []error
		wantFault string
	}{
		{"unavailable, then taken", []error{status.Error(codes.Unavailable, "connection refused")}, ""},
		{"an attempt out of time, then taken", []error{status.Error(codes.DeadlineExceeded, "context deadline exceeded")}, ""},
		{"not found is quiet", []error{status.Error(codes.NotFound, "no invocation")}, ""},
		{"another refusal is a fault", []error{status.Error(codes.InvalidArgument, "capture: missing field")}, "completing a: capture: missing field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mb, r, faults := newMailbox(), newRunner(), newNotes()
			mb.refuse = tt.refuse
			_, stop := start(t, Options{Mailbox: mb, OnFault: faults.add}, r)
			s := mb.stream(t)
			s.invoke("a")
			r.awaitStarted(t)
			r.release <- struct{}{}
			if again(tt.refuse[0]) {
				if c := mb.awaitCompleted(t); c.id != "a" {
					t.Errorf("completed %v", c)
				}
			}
			if err := stop(); err != nil { // returns once a's completion is settled
				t.Fatal(err)
			}
			close(faults.ch)
			var got []string
			for s := range faults.ch {
				if !strings.HasPrefix(s, "following the mailbox") {
					got = append(got, s)
				}
			}
			if want := slices.DeleteFunc([]string{tt.wantFault}, func(s string) bool { return s == "" }); !slices.Equal(got, want) {
				t.Errorf("faults %q, want %q", got, want)
			}
		})
	}
}

// A refusal as UNAVAILABLE (the store away for a moment) is tried again
// within seconds, however long the redial policy's waits have grown.
func TestAnUnavailableRefusalIsTriedAgainSoon(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	mb := newMailbox()
	start(t, Options{Mailbox: mb, Redial: retry.Policy{Base: time.Hour, Max: time.Hour, Multiplier: 2},
		Advertise: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			if calls++; calls < 3 {
				return status.Error(codes.Unavailable, "the registry cannot reach NATS right now")
			}
			return nil
		}}, newRunner())
	mb.stream(t) // the third try opened a read, within wait, not hours
}

func TestAFatalErrorEndsRun(t *testing.T) {
	t.Parallel()
	refused := errors.New("the registry refused this host's advertisement")
	calls := 0
	f := New(Options{Mailbox: newMailbox(), Log: slog.New(slog.DiscardHandler), Fatal: func(err error) bool { return err == refused },
		Advertise: func(context.Context) error {
			calls++
			if calls == 1 {
				return status.Error(codes.Unavailable, "not yet")
			}
			return refused
		}})
	if err := f.Run(context.Background(), newRunner()); err != refused || calls != 2 {
		t.Errorf("Run = %v after %d advertisements; want the refusal after 2", err, calls)
	}
}

func TestTheMemoryOfCapturesIsBoundedInCountAndBytes(t *testing.T) {
	t.Parallel()
	out := func(n int) *mailboxv1.Capture { s := strings.Repeat("x", n); return &mailboxv1.Capture{Stdout: &s} }
	r := newRecent(3, 3*(recentOverhead+1+100))
	for _, id := range []string{"a", "b", "c", "d"} {
		r.put(id, out(100))
	}
	if r.get("a") != nil || r.get("d") == nil || len(r.order) != 3 {
		t.Errorf("after four puts with room for three: order %q", r.order)
	}
	r.put("e", out(250)) // needs the room of b and c
	if r.get("b") != nil || r.get("c") != nil || r.get("d") == nil || r.get("e") == nil {
		t.Errorf("a large capture did not evict the oldest by bytes: order %q", r.order)
	}
	if r.bytes > r.maxBytes {
		t.Errorf("%d bytes kept, bound %d", r.bytes, r.maxBytes)
	}
	r.put("f", out(r.maxBytes))
	if r.get("f") != nil || r.get("e") == nil {
		t.Error("a capture larger than the whole bound was kept, or evicted the rest")
	}
}
