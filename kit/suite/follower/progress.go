package follower

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// Bounds on progress reporting.
const (
	// MaxNoteChars bounds a note's message before it is sent; the mailbox
	// keeps no more than this either.
	MaxNoteChars = 1000
	// reportAttemptLimit bounds one Report call, and so how long the end
	// of a run waits for the one in flight.
	reportAttemptLimit = 5 * time.Second
	// maxPendingLogs bounds the log messages waiting to be sent; past it
	// the oldest waiting is dropped (the mailbox keeps fewer anyway).
	maxPendingLogs = 16
)

// Note is one progress note of a run, as a host heard it.
type Note struct {
	// Progress is how far the run has got, in the run's own unit.
	Progress float64
	// Step says the host was given no number: the note counts one on from
	// the run's previous note (1, 2, … for a run that never gives one), so
	// progress still grows as MCP asks.
	Step bool
	// Total is the progress at which the run is done; 0 when unknown.
	Total float64
	// Message says what is happening, for a person.
	Message string
}

// Progress returns the function through which the run whose context ctx is
// reports progress to the mailbox. It never blocks: a note waits while
// another Report is in flight, and a newer one replaces it, so a run
// reporting faster than the mailbox answers sends only its latest (and
// always its last, before the capture); notes given once the run has ended
// are dropped. Outside a run (ctx is not a
// run's) the function drops every note.
func Progress(ctx context.Context) func(Note) {
	if r, ok := ctx.Value(reporterKey{}).(*reporter); ok {
		return r.note
	}
	return func(Note) {}
}

// Log returns the function through which the run whose context ctx is
// passes on a message its MCP server logged (ReportRequest.log). It never
// blocks: messages wait in order behind the Report in flight, the oldest
// dropped past a bound.
func Log(ctx context.Context) func(*mailboxv1.LogMessage) {
	if r, ok := ctx.Value(reporterKey{}).(*reporter); ok {
		return r.log
	}
	return func(*mailboxv1.LogMessage) {}
}

type reporterKey struct{}

// reporter sends one run's notes to the mailbox, one Report at a time.
type reporter struct {
	f   *Follower
	id  string
	ctx context.Context // the run's values, not its end: see close

	mu      sync.Mutex
	pending *Note                   // the latest note not yet sent
	logs    []*mailboxv1.LogMessage // log messages not yet sent, in order
	sending bool                    // a goroutine is sending; it takes pending when done
	closed  bool
	last    float64       // the last progress value given, for Step
	idle    chan struct{} // closed when no goroutine is sending
	faulted bool          // one fault per run is enough
}

func (f *Follower) newReporter(ctx context.Context, id string) *reporter {
	idle := make(chan struct{})
	close(idle)
	return &reporter{f: f, id: id, ctx: context.WithoutCancel(ctx), idle: idle}
}

// note keeps n as the pending note and makes sure a goroutine sends it.
func (r *reporter) note(n Note) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if n.Step {
		n.Progress, n.Step = r.last+1, false
	}
	r.last = n.Progress
	n.Message = capture.Cap(n.Message, MaxNoteChars)
	r.pending = &n
	r.wake()
}

// log queues l behind the messages waiting and makes sure a goroutine
// sends it.
func (r *reporter) log(l *mailboxv1.LogMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if len(r.logs) >= maxPendingLogs {
		r.logs = r.logs[1:]
	}
	r.logs = append(r.logs, l)
	r.wake()
}

// wake starts the sending goroutine unless one runs. Called locked.
func (r *reporter) wake() {
	if !r.sending {
		r.sending = true
		r.idle = make(chan struct{})
		go r.send(r.idle)
	}
}

// send reports waiting log messages, then the pending note, until none is
// left, then closes idle.
func (r *reporter) send(idle chan struct{}) {
	defer close(idle)
	for {
		r.mu.Lock()
		var req *mailboxv1.ReportRequest
		switch {
		case len(r.logs) > 0:
			req = &mailboxv1.ReportRequest{Invocation: r.id, Log: r.logs[0]}
			r.logs = r.logs[1:]
		case r.pending != nil:
			n := r.pending
			r.pending = nil
			req = &mailboxv1.ReportRequest{Invocation: r.id, Progress: n.Progress, Message: n.Message}
			if n.Total > 0 {
				req.Total = &n.Total
			}
		default:
			r.sending = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.report(req)
	}
}

// report makes one Report call. A refusal is not tried again: a newer note
// will follow, and the capture supersedes them all.
func (r *reporter) report(req *mailboxv1.ReportRequest) {
	ctx, cancel := context.WithTimeout(r.ctx, reportAttemptLimit)
	defer cancel()
	_, err := r.f.o.Mailbox.Report(r.f.o.As(ctx), req)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
	case status.Code(err) == codes.NotFound || status.Code(err) == codes.FailedPrecondition:
		// Answered, cancelled or expired meanwhile: nobody reads its notes.
		r.f.log.Debug("progress note not taken", "invocation", r.id, "err", message(err))
	case !r.faulted:
		r.faulted = true
		r.f.fault(fmt.Sprintf("reporting progress on %s: %s", r.id, message(err)))
	}
}

// close ends reporting before the run's capture is sent: later notes are
// dropped, and the Reports still due — the one in flight, the log messages
// and the latest note waiting behind it — are made and waited for, so the
// poster's last note is the run's last, and no note reaches the mailbox
// after the capture.
func (r *reporter) close() {
	r.mu.Lock()
	r.closed = true
	idle := r.idle
	r.mu.Unlock()
	<-idle
}
