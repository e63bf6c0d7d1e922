package follower

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// overrunner runs until its context ends, then answers with what the
// context says about why; or, with silent, with nothing.
type overrunner struct {
	started chan string
	silent  bool
}

func (r overrunner) Run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	r.started <- inv.GetInvocation()
	<-ctx.Done()
	if r.silent {
		return nil
	}
	return capture.Failed(capture.ExitTimeout, "stopped: %v", context.Cause(ctx))
}

func (s *stream) invokeWithin(id string, timeout time.Duration) {
	s.events <- &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Invocation{
		Invocation: &mailboxv1.Invocation{Invocation: id, Tool: "t", Input: `{}`,
			TimeLeft: durationpb.New(timeout), Timeout: durationpb.New(timeout)}}}
}

// A run that reaches the host's per-call deadline is stopped and answered,
// unlike a cancelled one: nobody else will answer it.
func TestARunPastTheDeadlineIsStoppedAndAnswered(t *testing.T) {
	t.Parallel()
	mb, r := newMailbox(), overrunner{started: make(chan string, 10)}
	_, _ = start(t, Options{Mailbox: mb, Deadline: 20 * time.Millisecond}, r)
	mb.stream(t).invoke("a")
	c := mb.awaitCompleted(t)
	if c.id != "a" || c.c.GetExitCode() != capture.ExitTimeout || c.c.GetStderr() != "stopped: it ran past the per-call deadline of 20ms" {
		t.Errorf("completed %s with %v", c.id, c.c)
	}
}

// The invocation's own timeout, when shorter, beats the host's deadline;
// a runner with nothing to say is answered with the follower's sentence.
func TestTheInvocationsOwnTimeoutBeatsTheDeadline(t *testing.T) {
	t.Parallel()
	mb, r := newMailbox(), overrunner{started: make(chan string, 10), silent: true}
	_, _ = start(t, Options{Mailbox: mb, Deadline: time.Hour}, r)
	mb.stream(t).invokeWithin("a", 20*time.Millisecond)
	c := mb.awaitCompleted(t)
	if c.id != "a" || c.c.GetExitCode() != capture.ExitTimeout ||
		c.c.GetStderr() != "switchboard: invocation a was stopped: its timeout of 20ms ran out" {
		t.Errorf("completed %s with %v", c.id, c.c)
	}
}

// A run whose slot in the mailbox expires is stopped then: nobody could
// collect its capture, and a server must not hold the call on.
func TestARunIsStoppedWhenItsSlotExpires(t *testing.T) {
	t.Parallel()
	mb, r := newMailbox(), overrunner{started: make(chan string, 10), silent: true}
	_, _ = start(t, Options{Mailbox: mb}, r)
	mb.stream(t).events <- &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Invocation{
		Invocation: &mailboxv1.Invocation{Invocation: "a", Tool: "t", Input: `{}`, TimeLeft: durationpb.New(20 * time.Millisecond)}}}
	c := mb.awaitCompleted(t)
	if c.id != "a" || c.c.GetStderr() != "switchboard: invocation a was stopped: its slot in the mailbox expired (--ttl), so nobody could collect its capture" {
		t.Errorf("completed %s with %v", c.id, c.c)
	}
}

// One whose time ran out before it had a slot is answered without running.
func TestAnInvocationOutOfTimeIsNotRun(t *testing.T) {
	t.Parallel()
	mb, r := newMailbox(), overrunner{started: make(chan string, 10)}
	_, _ = start(t, Options{Mailbox: mb}, r)
	mb.stream(t).invokeWithin("a", 0)
	c := mb.awaitCompleted(t)
	if c.id != "a" || c.c.GetExitCode() != capture.ExitTimeout ||
		c.c.GetStderr() != "switchboard: invocation a was not run: its timeout of 0s ran out before it could start" {
		t.Errorf("completed %s with %v", c.id, c.c)
	}
	select {
	case id := <-r.started:
		t.Errorf("%s ran", id)
	default:
	}
}

// The memory of answered invocations is bounded by RecentBytes (the host's
// --cache-bytes): past it the oldest is forgotten, and its redelivery runs
// again rather than being answered from memory.
func TestTheRecentCapturesAreEvictedByBytes(t *testing.T) {
	t.Parallel()
	mb, r := newMailbox(), newRunner()
	one := captureSize("a", &mailboxv1.Capture{Stdout: proto.String("ran a")})
	f, _ := start(t, Options{Mailbox: mb, RecentBytes: one + one/2}, r)
	s := mb.stream(t)
	for _, id := range []string{"a", "b"} {
		s.invoke(id)
		r.awaitStarted(t)
		r.release <- struct{}{}
		mb.awaitCompleted(t)
		testkit.Eventually(t, "the capture of "+id+" remembered", wait, func() bool { return f.remembers(id) })
	}
	if f.remembers("a") {
		t.Fatal("a is still remembered with room for one capture")
	}
	s.invoke("a")
	if got := r.awaitStarted(t); got != "a" {
		t.Fatalf("started %q", got)
	}
	r.release <- struct{}{}
	mb.awaitCompleted(t)
	if runs, _ := r.counts(); runs != 3 {
		t.Errorf("%d runs; want a, b, and a again once forgotten", runs)
	}
}
