package storetest

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// progressRules are the rules of progress notes, Status and a kept cancel
// (issue 20).
var progressRules = []rule{
	{"ReportsAreNumberedAndReadByThePosterOnly", reportsAreNumberedAndReadByThePosterOnly},
	{"OnlyTheLatestNotesAreKeptAndLongMessagesAreCut", onlyTheLatestNotesAreKept},
	{"AReportOnAnAnsweredInvocationIsRefused", aReportOnAnAnsweredInvocationIsRefused},
	{"StatusReadsTheCaptureWithoutTakingIt", statusReadsTheCaptureWithoutTakingIt},
	{"AStatusWaitWakesOnANote", aStatusWaitWakesOnANote},
	{"AStatusWaitWakesOnTheAnswer", aStatusWaitWakesOnTheAnswer},
	{"AKeptCancelIsReadByStatusAndCollectedOnce", aKeptCancelIsReadByStatusAndCollectedOnce},
}

func note(progress float64, message string) inflight.Note {
	return inflight.NewNote(progress, nil, message, time.Now())
}

func report(t *testing.T, s inflight.Store, id string, progress float64, message string) int64 {
	t.Helper()
	seq, _, err := s.Report(ctx, "laptop", id, note(progress, message))
	if err != nil {
		t.Fatalf("report %v: %v", progress, err)
	}
	return seq
}

func statusOf(t *testing.T, s inflight.Store, id string, after int64, wait time.Duration) inflight.State {
	t.Helper()
	st, err := s.Status(ctx, "driver", id, after, wait)
	if err != nil {
		t.Fatalf("status of %s after %d: %v", id, after, err)
	}
	return st
}

func messages(ns []inflight.Note) string {
	var b []string
	for _, n := range ns {
		b = append(b, n.Message)
	}
	return strings.Join(b, ",")
}

func reportsAreNumberedAndReadByThePosterOnly(t *testing.T, o Open) {
	s := o(t, Defaults)
	before := time.Now()
	id := post(t, s, "laptop", "slow")
	st := statusOf(t, s, id, 0, 0)
	if st.Phase != inflight.Queued || st.Handoffs != 0 || len(st.Notes) != 0 || st.Capture != nil {
		t.Fatalf("queued: %+v", st)
	}
	// What it calls and when it was posted, for an MCP task's mapping.
	if st.Client != "laptop" || st.Tool != "slow" || st.Posted.Before(before.Add(-time.Second)) || st.Posted.After(time.Now().Add(time.Second)) {
		t.Fatalf("queued: client %q, tool %q, posted %v (posted between %v and now)", st.Client, st.Tool, st.Posted, before)
	}
	if left := time.Until(st.Expires); left <= 0 || left > Defaults.TTL {
		t.Fatalf("expires in %v, want within the TTL %v", left, Defaults.TTL)
	}
	r := open(t, s, "laptop")
	defer r.Close()
	take(t, r, 1)
	total := 10.0
	seq, held, err := s.Report(ctx, "laptop", id, inflight.NewNote(1, &total, "one", time.Now()))
	if err != nil || seq != 1 || held != inflight.NotesBytes([]inflight.Note{{Message: "one"}}) {
		t.Fatalf("first report: seq %d, holding %d, %v", seq, held, err)
	}
	if seq := report(t, s, id, 2, "two"); seq != 2 {
		t.Fatalf("second report: seq %d", seq)
	}
	st = statusOf(t, s, id, 0, 0)
	if st.Phase != inflight.HandedOut || st.Handoffs != 1 || messages(st.Notes) != "one,two" {
		t.Fatalf("handed out: %+v", st)
	}
	if n := st.Notes[0]; n.Seq != 1 || n.Progress != 1 || n.Total == nil || *n.Total != 10 || n.At.IsZero() {
		t.Fatalf("first note: %+v", n)
	}
	if n := st.Notes[1]; n.Seq != 2 || n.Total != nil {
		t.Fatalf("second note: %+v", n)
	}
	if st = statusOf(t, s, id, 1, 0); messages(st.Notes) != "two" {
		t.Fatalf("after 1: %+v", st.Notes)
	}
	if st = statusOf(t, s, id, 2, 0); len(st.Notes) != 0 {
		t.Fatalf("after 2: %+v", st.Notes)
	}
	// Anyone else's: absent, as for Capture; the reporter is its addressee.
	_, err = s.Status(ctx, "mallory", id, 0, 0)
	wantAbsent(t, err, id)
	_, err = s.Status(ctx, "laptop", id, 0, 0)
	wantAbsent(t, err, id)
	_, _, err = s.Report(ctx, "driver", id, note(3, "not mine"))
	wantAbsent(t, err, id)
	_, _, err = s.Report(ctx, "laptop", "inv-unknown", note(3, ""))
	wantAbsent(t, err, "inv-unknown")
	_, err = s.Status(ctx, "driver", "inv-unknown", 0, 0)
	wantAbsent(t, err, "inv-unknown")
}

func onlyTheLatestNotesAreKept(t *testing.T, o Open) {
	s := o(t, Defaults)
	id, r := handedOut(t, s, "slow")
	defer r.Close()
	for i := 1; i <= inflight.MaxNotes+4; i++ {
		report(t, s, id, float64(i), "")
	}
	long := strings.Repeat("é", inflight.MaxNoteMessage+5)
	if seq := report(t, s, id, 99, long); seq != inflight.MaxNotes+5 {
		t.Fatalf("seq %d, want %d", seq, inflight.MaxNotes+5)
	}
	st := statusOf(t, s, id, 0, 0)
	if len(st.Notes) != inflight.MaxNotes || st.Notes[0].Seq != 6 || st.Notes[inflight.MaxNotes-1].Seq != inflight.MaxNotes+5 {
		t.Fatalf("kept %d notes, seq %d to %d; want the latest %d", len(st.Notes), st.Notes[0].Seq, st.Notes[len(st.Notes)-1].Seq, inflight.MaxNotes)
	}
	want := strings.Repeat("é", inflight.MaxNoteMessage) + "\n[truncated: 5 more characters not shown]"
	if got := st.Notes[inflight.MaxNotes-1].Message; got != want {
		t.Fatalf("long message kept as %d bytes ending %q", len(got), got[len(got)-50:])
	}
}

func aReportOnAnAnsweredInvocationIsRefused(t *testing.T, o Open) {
	s := o(t, Defaults)
	id, r := handedOut(t, s, "echo")
	defer r.Close()
	if _, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "done"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Report(ctx, "laptop", id, note(1, "late"))
	want := `report: invocation "` + id + `" is answered or cancelled already, so no progress on it is kept; stop running it`
	if status.Code(err) != codes.FailedPrecondition || status.Convert(err).Message() != want {
		t.Fatalf("report after the answer: %v, want FAILED_PRECONDITION %q", err, want)
	}
}

func statusReadsTheCaptureWithoutTakingIt(t *testing.T, o Open) {
	s := o(t, Defaults)
	id, r := handedOut(t, s, "echo")
	defer r.Close()
	report(t, s, id, 1, "half")
	if _, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "done", ExitCode: 2}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // read, not taken: twice the same
		st := statusOf(t, s, id, 0, 0)
		if st.Phase != inflight.AnsweredPhase || st.Capture == nil || !same(*st.Capture, inflight.Capture{Stdout: "done", ExitCode: 2}) || messages(st.Notes) != "half" {
			t.Fatalf("answered: %+v", st)
		}
	}
	c, err := s.Collect(ctx, "driver", id, 0, "")
	if err != nil || c == nil || c.Stdout != "done" {
		t.Fatalf("collect after status: %+v %v", c, err)
	}
	_, err = s.Status(ctx, "driver", id, 0, 0)
	wantAbsent(t, err, id) // collected: gone
}

// startStatus runs a Status wait of an hour: only news can end it within
// the test.
func startStatus(s inflight.Store, id string, after int64) <-chan inflight.State {
	got := make(chan inflight.State, 1)
	go func() {
		st, err := s.Status(ctx, "driver", id, after, time.Hour)
		if err != nil {
			st.Phase = 0
		}
		got <- st
	}()
	return got
}

func aStatusWaitWakesOnANote(t *testing.T, o Open) {
	s := o(t, Defaults)
	id, r := handedOut(t, s, "slow")
	defer r.Close()
	report(t, s, id, 1, "seen")
	// A note after `after` exists: no wait at all.
	if st := <-startStatus(s, id, 0); messages(st.Notes) != "seen" {
		t.Fatalf("status with a note waiting: %+v", st)
	}
	got := startStatus(s, id, 1)
	// The wait may start before or after the report: either way it ends
	// with the note, never with the hour.
	report(t, s, id, 2, "news")
	st := <-got
	if st.Phase != inflight.HandedOut || messages(st.Notes) != "news" || st.Notes[0].Seq != 2 {
		t.Fatalf("status woken by a note: %+v", st)
	}
}

func aStatusWaitWakesOnTheAnswer(t *testing.T, o Open) {
	s := o(t, Defaults)
	id, r := handedOut(t, s, "slow")
	defer r.Close()
	got := startStatus(s, id, 0)
	if _, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "over"}); err != nil {
		t.Fatal(err)
	}
	if st := <-got; st.Phase != inflight.AnsweredPhase || st.Capture == nil || st.Capture.Stdout != "over" {
		t.Fatalf("status woken by the answer: %+v", st)
	}
	if c, err := s.Collect(ctx, "driver", id, 0, ""); err != nil || c == nil || c.Stdout != "over" {
		t.Fatalf("collect after status: %+v %v", c, err)
	}
}

func aKeptCancelIsReadByStatusAndCollectedOnce(t *testing.T, o Open) {
	s := o(t, Defaults)
	id, r := handedOut(t, s, "slow")
	defer r.Close()
	report(t, s, id, 1, "started")
	got := startStatus(s, id, 1)
	c, err := s.Cancel(ctx, "driver", id, "stop", true)
	want := inflight.Cancelled(id, "stop")
	if err != nil || !same(c, want) {
		t.Fatalf("kept cancel: %+v %v", c, err)
	}
	// The host is told as without keep.
	if cancels := cancelsOf(t, r); len(cancels) != 1 || cancels[0] != id {
		t.Fatalf("cancels = %v", cancels)
	}
	if st := <-got; st.Phase != inflight.CancelledPhase || st.Capture == nil || !same(*st.Capture, want) {
		t.Fatalf("status woken by the cancel: %+v", st)
	}
	st := statusOf(t, s, id, 0, 0)
	if st.Phase != inflight.CancelledPhase || messages(st.Notes) != "started" || st.Capture == nil || !same(*st.Capture, want) {
		t.Fatalf("status of a kept cancel: %+v", st)
	}
	// Cancelled again, kept: the same capture, still there.
	if c, err := s.Cancel(ctx, "driver", id, "again", true); err != nil || !same(c, want) {
		t.Fatalf("second kept cancel: %+v %v", c, err)
	}
	_, _, err = s.Report(ctx, "laptop", id, note(2, "late"))
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("report after a kept cancel: %v", err)
	}
	_, err = s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "late"})
	wantAbsent(t, err, id)
	if c, err := s.Collect(ctx, "driver", id, 0, ""); err != nil || c == nil || !same(*c, want) {
		t.Fatalf("collect of a kept cancel: %+v %v", c, err)
	}
	_, err = s.Collect(ctx, "driver", id, 0, "")
	wantAbsent(t, err, id)
	_, err = s.Status(ctx, "driver", id, 0, 0)
	wantAbsent(t, err, id)
}
