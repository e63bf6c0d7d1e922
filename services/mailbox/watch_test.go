package mailbox_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// watchAs opens a Watch as ctx's caller and reads its snapshot up to
// synced.
func (s *suite) watchAs(t testing.TB, ctx context.Context) (grpc.ServerStreamingClient[mailboxv1.WatchResponse], []*mailboxv1.InvocationState) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	stream, err := s.mb.Watch(ctx, &mailboxv1.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var snapshot []*mailboxv1.InvocationState
	for {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("watch snapshot: %v", err)
		}
		if ev.GetSynced() != nil {
			return stream, snapshot
		}
		snapshot = append(snapshot, ev.GetInvocation())
	}
}

// nextState reads the next change of a watch.
func nextState(t testing.TB, stream grpc.ServerStreamingClient[mailboxv1.WatchResponse]) *mailboxv1.InvocationState {
	t.Helper()
	ev, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return ev.GetInvocation()
}

func TestWatchFollowsAnInvocationThroughItsPhases(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "echo")
	admin, _ := s.watchAs(t, testkit.As("ops", identity.Admin))
	mine, _ := s.watchAs(t, driver)
	other, _ := s.watchAs(t, testkit.As("other", identity.Driver))

	id := s.invoke(t, "laptop", "echo", `{}`)
	stream, stop := s.follow(t, "laptop")
	defer stop()
	next(t, stream)
	if _, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: id, Capture: capture.New("out", "", 3)}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id}); err != nil || res.GetCapture() == nil {
		t.Fatalf("Capture = %v, %v", res, err)
	}
	want := []mailboxv1.Phase{mailboxv1.Phase_PHASE_QUEUED, mailboxv1.Phase_PHASE_HANDED_OUT, mailboxv1.Phase_PHASE_ANSWERED, mailboxv1.Phase_PHASE_COLLECTED}
	for _, w := range []grpc.ServerStreamingClient[mailboxv1.WatchResponse]{admin, mine} {
		for _, phase := range want {
			st := nextState(t, w)
			if st.GetInvocation() != id || st.GetPhase() != phase || st.GetPoster() != "driver" || st.GetClient() != "laptop" || st.GetTool() != "echo" {
				t.Fatalf("watch: %v, want %s of %s posted by driver to laptop's echo", st, phase, id)
			}
			if phase >= mailboxv1.Phase_PHASE_HANDED_OUT && st.GetHandOffs() != 1 {
				t.Fatalf("hand-offs %d after the hand-off", st.GetHandOffs())
			}
			if phase >= mailboxv1.Phase_PHASE_ANSWERED && (st.ExitCode == nil || st.GetExitCode() != 3 || st.Answered == nil || st.GetAnswered().AsTime().Before(st.GetPosted().AsTime())) {
				t.Fatalf("exit code %v, answered %v (posted %v) once answered", st.ExitCode, st.GetAnswered(), st.GetPosted())
			}
		}
	}
	// Another driver's watch never shows it: its first change is its own.
	s.advertise(t, "laptop", "echo")
	own, err := s.mb.Invoke(testkit.As("other", identity.Driver), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	if st := nextState(t, other); st.GetInvocation() != own.GetInvocation() {
		t.Fatalf("another driver's watch showed %v before its own", st)
	}
	// A watcher that comes later finds the finished one in its snapshot.
	_, snapshot := s.watchAs(t, driver)
	if len(snapshot) != 1 || snapshot[0].GetInvocation() != id || snapshot[0].GetPhase() != mailboxv1.Phase_PHASE_COLLECTED {
		t.Fatalf("a later snapshot: %v", snapshot)
	}
}

func TestWatchShowsTheAnswersTheMailboxWritesItself(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "late", "echo")
	admin, _ := s.watchAs(t, testkit.As("ops", identity.Admin))
	posted := time.Now()
	res, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "late", Tool: "echo", Input: `{}`, Timeout: durationpb.New(time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if st := nextState(t, admin); st.GetPhase() != mailboxv1.Phase_PHASE_QUEUED {
		t.Fatalf("first %v, want queued", st)
	}
	testkit.Eventually(t, "the timeout to run out", time.Second, func() bool { return time.Since(posted) > 10*time.Millisecond })
	// Its host's read reaches it and the mailbox answers it, unrun.
	_, stop := s.follow(t, "late")
	defer stop()
	st := nextState(t, admin)
	if st.GetInvocation() != res.GetInvocation() || st.GetPhase() != mailboxv1.Phase_PHASE_ANSWERED || st.GetExitCode() != 124 || st.GetHandOffs() != 0 || st.GetPoster() != "driver" {
		t.Fatalf("after the timeout: %v, want answered with 124, never handed out", st)
	}
}

func TestWatchIsForDriversAndAdmins(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	stream, err := s.mb.Watch(host("laptop"), &mailboxv1.WatchRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	testkit.Refused(t, err, codes.PermissionDenied, `"laptop" is a host and may not call MailboxService.Watch`)
}

// A question its host asks shows on the watch as a count of the questions
// waiting, which the poster's answer brings back to zero; the phase stays.
func TestWatchCountsTheQuestionsWaiting(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	mine, _ := s.watchAs(t, driver)
	_, id := s.running(t)
	// The read was open before the post: the hand-off may be told before
	// the post, which then only fills in the poster (the phase never goes
	// back), so the driver may see the hand-off alone.
	st := nextState(t, mine)
	if st.GetPhase() == mailboxv1.Phase_PHASE_QUEUED && st.Questions == nil {
		st = nextState(t, mine)
	}
	if st.GetPhase() != mailboxv1.Phase_PHASE_HANDED_OUT || st.Questions != nil {
		t.Fatalf("watch: %v; want handed out (after queued, or alone) and no questions yet", st)
	}
	if err := s.ask(id, &mailboxv1.Question{Id: "q1", Method: "elicitation/create", Params: `{}`}); err != nil {
		t.Fatal(err)
	}
	if st = nextState(t, mine); st.GetInvocation() != id || st.GetPhase() != mailboxv1.Phase_PHASE_HANDED_OUT || st.Questions == nil || st.GetQuestions() != 1 {
		t.Fatalf("watch after the question: %v; want handed out, 1 question waiting", st)
	}
	if _, err := s.mb.Answer(driver, &mailboxv1.AnswerRequest{Invocation: id, Question: "q1", Result: `{}`}); err != nil {
		t.Fatal(err)
	}
	if st = nextState(t, mine); st.Questions == nil || st.GetQuestions() != 0 || st.GetPhase() != mailboxv1.Phase_PHASE_HANDED_OUT {
		t.Fatalf("watch after the answer: %v; want handed out, none waiting", st)
	}
}

// A watch on one replica hears the calls made through another, once that
// one knows of it (a replica alone sends its changes to nobody).
func TestAWatchHearsTheOtherReplicasCalls(t *testing.T) {
	t.Parallel()
	s, other := newTwoReplicas(t)
	s.advertise(t, "laptop", "echo")
	ctx, cancel := context.WithCancel(driver)
	t.Cleanup(cancel)
	stream, err := other.Watch(ctx, &mailboxv1.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan string, 64)
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			if id := ev.GetInvocation().GetInvocation(); id != "" {
				heard <- id
			}
		}
	}()
	posted := map[string]bool{}
	testkit.Eventually(t, "the other replica's watch to hear a call made here", 10*time.Second, func() bool {
		posted[s.invoke(t, "laptop", "echo", `{}`)] = true
		select {
		case id := <-heard:
			return posted[id]
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
}
