package watch

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// tracker is a Tracker without NATS: the tests apply changes directly,
// as its subscription would.
func tracker() *Tracker {
	return &Tracker{live: map[string]*mailboxv1.InvocationState{}, watchers: map[*Watcher]struct{}{}}
}

func change(id string, phase mailboxv1.Phase, f func(*mailboxv1.InvocationState)) *mailboxv1.InvocationState {
	st := &mailboxv1.InvocationState{Invocation: id, Phase: phase, Changed: timestamppb.Now()}
	if f != nil {
		f(st)
	}
	return st
}

func TestChangesMergeAndThePhaseOnlyMovesForward(t *testing.T) {
	tr := tracker()
	w, _ := tr.Watch(false, "alice")
	tr.apply(change("inv-1", mailboxv1.Phase_PHASE_QUEUED, func(s *mailboxv1.InvocationState) {
		s.Client, s.Tool, s.Poster, s.Posted = "laptop", "echo", "alice", timestamppb.Now()
	}))
	// The answer (known to the host's replica) overtakes the hand-off.
	tr.apply(change("inv-1", mailboxv1.Phase_PHASE_ANSWERED, func(s *mailboxv1.InvocationState) { s.ExitCode = proto.Int32(2) }))
	tr.apply(change("inv-1", mailboxv1.Phase_PHASE_HANDED_OUT, func(s *mailboxv1.InvocationState) { s.HandOffs = 1 }))
	var last *mailboxv1.InvocationState
	for range 3 {
		last = <-w.C()
	}
	if last.GetPhase() != mailboxv1.Phase_PHASE_ANSWERED || last.GetHandOffs() != 1 || last.GetExitCode() != 2 || last.GetPoster() != "alice" || last.GetAnswered() == nil {
		t.Fatalf("merged %v", last)
	}
	tr.apply(change("inv-1", mailboxv1.Phase_PHASE_COLLECTED, nil))
	if _, live := tr.live["inv-1"]; live || len(tr.done) != 1 {
		t.Fatalf("a collected invocation is still in flight (%d finished)", len(tr.done))
	}
	// A late echo of a finished invocation does not bring it back.
	tr.apply(change("inv-1", mailboxv1.Phase_PHASE_HANDED_OUT, nil))
	if len(tr.live) != 0 {
		t.Fatal("a late change revived a finished invocation")
	}
}

func TestWatchersSeeTheirOwnAndAreBounded(t *testing.T) {
	tr := tracker()
	bob, _ := tr.Watch(false, "bob")
	admin, _ := tr.Watch(true, "ops")
	for i := range MaxBuffer + 1 {
		tr.apply(change(fmt.Sprintf("inv-%d", i), mailboxv1.Phase_PHASE_QUEUED, func(s *mailboxv1.InvocationState) { s.Poster = "alice" }))
	}
	select {
	case <-admin.Ended():
	default:
		t.Fatalf("a watcher %d changes behind was not ended", MaxBuffer+1)
	}
	select {
	case st := <-bob.C():
		t.Fatalf("bob saw alice's %v", st)
	case <-bob.Ended():
		t.Fatal("bob was ended though he was sent nothing")
	default:
	}
	// The finished are kept to MaxDone, the newest.
	for i := range MaxBuffer + 1 {
		tr.apply(change(fmt.Sprintf("inv-%d", i), mailboxv1.Phase_PHASE_CANCELLED, nil))
	}
	if len(tr.done) != MaxDone || tr.done[MaxDone-1].GetInvocation() != fmt.Sprintf("inv-%d", MaxBuffer) {
		t.Fatalf("%d finished kept, the last %v", len(tr.done), tr.done[len(tr.done)-1])
	}
	_, snapshot := tr.Watch(false, "alice")
	if len(snapshot) != MaxDone {
		t.Fatalf("alice's snapshot holds %d, want the %d finished", len(snapshot), MaxDone)
	}
}
