package mailbox_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

type statusResult struct {
	res *mailboxv1.StatusResponse
	err error
}

// waitStatus asks for news after `after`, waiting the longest allowed: only
// the news can end it within the test.
func waitStatus(mb mailboxv1.MailboxServiceClient, id string, after int64) <-chan statusResult {
	got := make(chan statusResult, 1)
	go func() {
		res, err := mb.Status(driver, &mailboxv1.StatusRequest{Invocation: id, After: after, Wait: durationpb.New(time.Minute)})
		got <- statusResult{res, err}
	}()
	return got
}

// TestProgressReachesAStatusWaitOnAnotherReplica: the host reports through
// one replica; the poster's Status waits on another and wakes on the note,
// then on the answer, and reads the capture without taking it.
func TestProgressReachesAStatusWaitOnAnotherReplica(t *testing.T) {
	t.Parallel()
	s, other := newTwoReplicas(t)
	_, id := s.running(t)
	first := waitStatus(other, id, 0)
	rep, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Progress: 1, Total: proto.Float64(4), Message: "reading"})
	if err != nil || rep.GetSeq() != 1 {
		t.Fatalf("report: %v, %v", rep, err)
	}
	r := <-first
	if r.err != nil || r.res.GetPhase() != mailboxv1.Phase_PHASE_HANDED_OUT || r.res.GetHandOffs() != 1 || len(r.res.GetProgress()) != 1 {
		t.Fatalf("status woken by the note: %v, %v", r.res, r.err)
	}
	n := r.res.GetProgress()[0]
	if n.GetSeq() != 1 || n.GetProgress() != 1 || n.GetTotal() != 4 || n.GetMessage() != "reading" || n.GetAt() == nil {
		t.Fatalf("note %v", n)
	}
	if left := r.res.GetExpiresIn().AsDuration(); left <= 0 || left > mailboxtest.Defaults.TTL {
		t.Fatalf("expires_in %v", left)
	}
	// A log message is a note too, read in its turn.
	logged := waitStatus(other, id, 1)
	log := &mailboxv1.LogMessage{Level: "warning", Logger: "db", Data: `{"slow":true}`}
	if rep, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Log: log}); err != nil || rep.GetSeq() != 2 {
		t.Fatalf("report of a log message: %v, %v", rep, err)
	}
	if r := <-logged; r.err != nil || len(r.res.GetProgress()) != 1 || !proto.Equal(r.res.GetProgress()[0].GetLog(), log) {
		t.Fatalf("status woken by the log message: %v, %v", r.res, r.err)
	}
	second := waitStatus(other, id, 2)
	if _, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: id, Capture: capture.New("done", "", 0)}); err != nil {
		t.Fatal(err)
	}
	r = <-second
	if r.err != nil || r.res.GetPhase() != mailboxv1.Phase_PHASE_ANSWERED || r.res.GetCapture().GetStdout() != "done" || len(r.res.GetProgress()) != 0 {
		t.Fatalf("status woken by the answer: %v, %v", r.res, r.err)
	}
	c, err := other.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id})
	if err != nil || c.GetCapture().GetStdout() != "done" {
		t.Fatalf("capture after status: %v, %v", c, err)
	}
	_, err = s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Progress: 2})
	testkit.Refused(t, err, codes.NotFound, absentSentence(id))
}

// TestAKeptCancelStaysReadable: cancelled with keep, the invocation reads
// as cancelled until its poster collects it, and its host is told at once.
func TestAKeptCancelStaysReadable(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "slow")
	stream, stop := s.follow(t, "laptop")
	defer stop()
	id := s.invoke(t, "laptop", "slow", "{}")
	next(t, stream)
	res, err := s.mb.Cancel(driver, &mailboxv1.CancelRequest{Invocation: id, Reason: proto.String("task cancelled"), Keep: true})
	want := `invocation "` + id + `" was cancelled by its poster before it was answered: task cancelled`
	if err != nil || res.GetCapture().GetExitCode() != 130 || res.GetCapture().GetStderr() != want {
		t.Fatalf("cancel: %v, %v", res, err)
	}
	if got := next(t, stream).GetCancelled().GetInvocation(); got != id {
		t.Fatalf("the host was told of %q, want %s", got, id)
	}
	st, err := s.mb.Status(driver, &mailboxv1.StatusRequest{Invocation: id})
	if err != nil || st.GetPhase() != mailboxv1.Phase_PHASE_CANCELLED || st.GetCapture().GetStderr() != want {
		t.Fatalf("status: %v, %v", st, err)
	}
	_, err = s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Progress: 1})
	testkit.Refused(t, err, codes.FailedPrecondition, `report: invocation "`+id+`" is answered or cancelled already, so no progress on it is kept; stop running it`)
	c, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id})
	if err != nil || c.GetCapture().GetStderr() != want {
		t.Fatalf("capture: %v, %v", c, err)
	}
	_, err = s.mb.Status(driver, &mailboxv1.StatusRequest{Invocation: id})
	testkit.Refused(t, err, codes.NotFound, absentSentence(id))
}

func TestReportAndStatusRefusals(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "slow")
	id := s.invoke(t, "laptop", "slow", "{}")
	for _, tt := range []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"a driver reporting", func() error {
			_, err := s.mb.Report(driver, &mailboxv1.ReportRequest{Invocation: id})
			return err
		}, codes.PermissionDenied, `"driver" is a driver and may not call MailboxService.Report`},
		{"a host asking the status", func() error {
			_, err := s.mb.Status(host("laptop"), &mailboxv1.StatusRequest{Invocation: id})
			return err
		}, codes.PermissionDenied, `"laptop" is a host and may not call MailboxService.Status`},
		{"progress that is no number", func() error {
			_, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Progress: math.NaN()})
			return err
		}, codes.InvalidArgument, "report: progress NaN is not a finite number"},
		{"an infinite total", func() error {
			_, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Total: proto.Float64(math.Inf(1))})
			return err
		}, codes.InvalidArgument, "report: total +Inf is not a finite number"},
		{"a log of no known level", func() error {
			_, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Log: &mailboxv1.LogMessage{Level: "loud", Data: `"x"`}})
			return err
		}, codes.InvalidArgument, `report: log level "loud" is not one of MCP's (debug, info, notice, warning, error, critical, alert, emergency)`},
		{"a log whose data is not JSON", func() error {
			_, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Log: &mailboxv1.LogMessage{Level: "info", Data: `x`}})
			return err
		}, codes.InvalidArgument, "report: log data is not valid JSON"},
		{"a log too large", func() error {
			_, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Log: &mailboxv1.LogMessage{Level: "info",
				Data: `"` + strings.Repeat("x", 4096) + `"`}})
			return err
		}, codes.InvalidArgument, "report: log data is 4098 bytes, over the 4096 a log message may hold"},
		{"a log with progress", func() error {
			_, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Progress: 1, Log: &mailboxv1.LogMessage{Level: "info", Data: `1`}})
			return err
		}, codes.InvalidArgument, "report: a log message carries no progress, total or message of its own"},
		{"someone else's invocation", func() error {
			_, err := s.mb.Report(host("desk"), &mailboxv1.ReportRequest{Invocation: id, Progress: 1})
			return err
		}, codes.NotFound, absentSentence(id)},
		{"a wait too long", func() error {
			_, err := s.mb.Status(driver, &mailboxv1.StatusRequest{Invocation: id, Wait: durationpb.New(61 * time.Second)})
			return err
		}, codes.InvalidArgument, "status: wait 1m1s is longer than the 1m0s allowed"},
		{"a negative after", func() error {
			_, err := s.mb.Status(driver, &mailboxv1.StatusRequest{Invocation: id, After: -1})
			return err
		}, codes.InvalidArgument, "status: after -1 is negative; send 0 for every note kept"},
		{"another driver's status", func() error {
			_, err := s.mb.Status(testkit.As("mallory", identity.Driver), &mailboxv1.StatusRequest{Invocation: id})
			return err
		}, codes.NotFound, absentSentence(id)},
	} {
		testkit.Refused(t, tt.call(), tt.code, tt.msg)
	}
	st, err := s.mb.Status(driver, &mailboxv1.StatusRequest{Invocation: id})
	if err != nil || st.GetPhase() != mailboxv1.Phase_PHASE_QUEUED || st.GetCapture() != nil {
		t.Fatalf("status of a queued invocation: %v, %v", st, err)
	}
}

// TestNotesCountInTheBudgets: what a slot's notes hold counts against its
// poster's budget until the capture is collected.
func TestNotesCountInTheBudgets(t *testing.T) {
	t.Parallel()
	func() {
		s := newSuite(t, func(b *mailbox.Bounds) { b.MaxInputBytes, b.MaxPosterBytes = 1<<10, 10<<10 })
		s.advertise(t, "laptop", "echo")
		id := s.invoke(t, "laptop", "echo", "{}") // 6 bytes: input and tool
		for range 10 {                            // 10 × (1,000 + the note's 48)
			if _, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: id, Message: strings.Repeat("x", 1000)}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: "{}"})
		testkit.Refused(t, err, codes.ResourceExhausted,
			`driver "driver" holds 10486 bytes of invocations and uncollected captures in this mailbox, and this invocation's 6 more would pass the budget of 10240 per poster (--max-poster-bytes); collect or cancel what it posted first`)
		// Cancelled and kept, it still holds them: Status reads the notes.
		if _, err := s.mb.Cancel(driver, &mailboxv1.CancelRequest{Invocation: id, Keep: true}); err != nil {
			t.Fatal(err)
		}
		_, err = s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: "{}"})
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("an invoke past the budget while a kept cancel holds its notes: %v", err)
		}
		if _, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id}); err != nil {
			t.Fatal(err)
		}
		s.invoke(t, "laptop", "echo", "{}") // released with the collection
	}()
}

// TestACallsAnswerCarriesItsNotes: the notes an invocation held when it was
// answered come with the Call's answer, in its trailer, for a caller whose
// relay of them may find the invocation collected; a call without notes
// sends no such trailer.
func TestACallsAnswerCarriesItsNotes(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "slow")
	stream, stop := s.follow(t, "laptop")
	defer stop()
	call := func(report bool) metadata.MD {
		t.Helper()
		go func() {
			inv := next(t, stream).GetInvocation()
			if report {
				log := &mailboxv1.LogMessage{Level: "info", Data: `"half way"`}
				if _, err := s.mb.Report(host("laptop"), &mailboxv1.ReportRequest{Invocation: inv.GetInvocation(), Log: log}); err != nil {
					t.Error(err)
				}
			}
			s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New("done", "", 0)})
		}()
		ctx, cancel := context.WithTimeout(driver, 10*time.Second)
		defer cancel()
		var trailer metadata.MD
		res, err := s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "slow", Input: "{}"}, grpc.Trailer(&trailer))
		if err != nil || res.GetCapture().GetStdout() != "done" {
			t.Fatalf("call = %v, %v", res, err)
		}
		return trailer
	}
	notes := contract.Notes(call(true))
	if len(notes) != 1 || notes[0].GetSeq() != 1 || notes[0].GetLog().GetData() != `"half way"` {
		t.Fatalf("the answer's notes = %v; want the log message", notes)
	}
	if tr := call(false); len(tr.Get(contract.NotesTrailer)) != 0 {
		t.Fatalf("a call without notes sent the trailer %v", tr)
	}
}
