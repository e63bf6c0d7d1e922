package follower

import (
	"context"
	"fmt"
	"testing"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// reportingRunner hands each run's progress function to the test and runs
// until released.
type reportingRunner struct {
	progress chan func(Note)
	release  chan struct{}
}

func (r reportingRunner) Run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	r.progress <- Progress(ctx)
	<-r.release
	out := "ran " + inv.GetInvocation()
	return &mailboxv1.Capture{Stdout: &out}
}

func wantNote(t *testing.T, got *mailboxv1.ReportRequest, progress, total float64, msg string) {
	t.Helper()
	if got.GetInvocation() != "inv-1" || got.GetProgress() != progress || got.GetTotal() != total || got.GetMessage() != msg ||
		(total == 0) != (got.Total == nil) {
		t.Fatalf("reported %v; want inv-1 at %g of %g, %q", got, progress, total, msg)
	}
}

// A run's notes go to the mailbox one Report at a time: while one is in
// flight the latest note waits and replaces older ones, a note without a
// number counts on from the last, and once the run returns the last note
// is still sent, before the capture, and later notes go nowhere.
func TestProgressSendsOneReportAtATimeAndTheLatestNoteWins(t *testing.T) {
	t.Parallel()
	mb := newMailbox()
	mb.gate = make(chan struct{})
	r := reportingRunner{progress: make(chan func(Note), 1), release: make(chan struct{})}
	start(t, Options{Mailbox: mb}, r)
	mb.stream(t).invoke("inv-1")
	p := receive(t, r.progress, "a run")

	p(Note{Progress: 1, Total: 10, Message: "one"})
	wantNote(t, receive(t, mb.reports, "the first report"), 1, 10, "one")
	p(Note{Progress: 2, Total: 10, Message: "two"})
	p(Note{Progress: 3, Total: 10, Message: "three"})
	p(Note{Step: true, Message: "a step"})
	if n := len(mb.reports); n != 0 {
		t.Fatalf("%d more reports while one was in flight; want none", n)
	}
	mb.gate <- struct{}{}
	wantNote(t, receive(t, mb.reports, "the latest note's report"), 4, 0, "a step")
	mb.gate <- struct{}{}

	p(Note{Progress: 5, Message: "five"})
	wantNote(t, receive(t, mb.reports, "a report"), 5, 0, "five")
	p(Note{Progress: 6, Message: "six, waiting"})
	r.release <- struct{}{}
	select {
	case c := <-mb.completed:
		t.Fatalf("completed %v while a report was in flight", c)
	case mb.gate <- struct{}{}:
	}
	// The run has returned: the waiting note is still sent, and before
	// the capture.
	wantNote(t, receive(t, mb.reports, "the last note's report"), 6, 0, "six, waiting")
	select {
	case c := <-mb.completed:
		t.Fatalf("completed %v while the last report was in flight", c)
	case mb.gate <- struct{}{}:
	}
	if c := receive(t, mb.completed, "the capture"); c.id != "inv-1" {
		t.Fatalf("completed %q; want inv-1", c.id)
	}
	p(Note{Progress: 7, Message: "after the end"})
	if n := len(mb.reports); n != 0 {
		t.Fatalf("%d reports after the run ended (first %v); want none", n, <-mb.reports)
	}
}

// A message longer than the mailbox keeps is cut before it is sent, and a
// context that is not a run's drops notes.
func TestProgressBoundsMessagesAndIgnoresContextsOutsideARun(t *testing.T) {
	t.Parallel()
	Progress(context.Background())(Note{Progress: 1}) // nothing to report to, and no panic
	mb := newMailbox()
	r := reportingRunner{progress: make(chan func(Note), 1), release: make(chan struct{})}
	start(t, Options{Mailbox: mb}, r)
	mb.stream(t).invoke("inv-1")
	p := receive(t, r.progress, "a run")
	long := make([]rune, MaxNoteChars+5)
	for i := range long {
		long[i] = 'é'
	}
	p(Note{Step: true, Message: string(long)})
	got := receive(t, mb.reports, "a report")
	want := string(long[:MaxNoteChars]) + "\n[truncated: 5 more characters not shown]"
	if got.GetMessage() != want || got.GetProgress() != 1 {
		t.Fatalf("reported progress %g, message of %d bytes; want 1 and the first %d characters with a marker", got.GetProgress(), len(got.GetMessage()), MaxNoteChars)
	}
	r.release <- struct{}{}
	mb.awaitCompleted(t)
}

// loggingRunner hands each run's log function to the test and runs until
// released.
type loggingRunner struct {
	log      chan func(*mailboxv1.LogMessage)
	progress chan func(Note)
	release  chan struct{}
}

func (r loggingRunner) Run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	r.log <- Log(ctx)
	r.progress <- Progress(ctx)
	<-r.release
	return &mailboxv1.Capture{}
}

// A run's log messages are sent in order, each its own Report, before the
// latest progress note; past the bound the oldest waiting are dropped, and
// those still waiting when the run returns go before the capture.
func TestLogMessagesAreSentInOrderBeforeTheLatestNote(t *testing.T) {
	t.Parallel()
	mb := newMailbox()
	mb.gate = make(chan struct{})
	r := loggingRunner{log: make(chan func(*mailboxv1.LogMessage), 1), progress: make(chan func(Note), 1), release: make(chan struct{})}
	start(t, Options{Mailbox: mb}, r)
	mb.stream(t).invoke("inv-1")
	log, p := receive(t, r.log, "a run"), receive(t, r.progress, "a run")

	p(Note{Progress: 1, Message: "first"})
	wantNote(t, receive(t, mb.reports, "the first report"), 1, 0, "first")
	p(Note{Progress: 2, Message: "behind the logs"})
	for i := range maxPendingLogs + 4 {
		log(&mailboxv1.LogMessage{Level: "info", Data: fmt.Sprint(i)})
	}
	r.release <- struct{}{} // the run returns with everything waiting
	for i := 4; i < maxPendingLogs+4; i++ {
		mb.gate <- struct{}{}
		got := receive(t, mb.reports, "a log message's report")
		if got.GetLog().GetData() != fmt.Sprint(i) || got.GetProgress() != 0 {
			t.Fatalf("report %v; want log message %d (the %d before it dropped)", got, i, 4)
		}
	}
	mb.gate <- struct{}{}
	wantNote(t, receive(t, mb.reports, "the note after the logs"), 2, 0, "behind the logs")
	mb.gate <- struct{}{}
	if c := receive(t, mb.completed, "the capture"); c.id != "inv-1" {
		t.Fatalf("completed %q; want inv-1", c.id)
	}
}
