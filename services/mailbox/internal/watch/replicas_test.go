package watch

import (
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A replica folds its own changes in as it publishes them and hears only
// the others' (its connection has NoEcho): every watcher, on either
// replica, sees each change once, in order.
func TestAChangeReachesEveryReplicaOnce(t *testing.T) {
	t.Parallel()
	srv := testkit.NATS(t)
	replica := func() *Tracker {
		nc, err := nats.Connect("", srv.InProcess())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		tr, err := New(nc, time.Hour, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.Close)
		return tr
	}
	a, b := replica(), replica()
	wa, _ := a.Watch(true, "ops")
	wb, _ := b.Watch(true, "ops")
	next := func(w *Watcher, who string) *mailboxv1.InvocationState {
		t.Helper()
		select {
		case st := <-w.C():
			return st
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's watcher heard nothing more", who)
			return nil
		}
	}
	a.Publish(change("inv-1", mailboxv1.Phase_PHASE_QUEUED, func(s *mailboxv1.InvocationState) { s.Poster = "alice" }))
	a.Publish(change("inv-1", mailboxv1.Phase_PHASE_HANDED_OUT, nil))
	for _, w := range []struct {
		w   *Watcher
		who string
	}{{wa, "a"}, {wb, "b"}} {
		if st := next(w.w, w.who); st.GetPhase() != mailboxv1.Phase_PHASE_QUEUED || st.GetPoster() != "alice" {
			t.Fatalf("%s's watcher first saw %v", w.who, st)
		}
		if st := next(w.w, w.who); st.GetPhase() != mailboxv1.Phase_PHASE_HANDED_OUT {
			t.Fatalf("%s's watcher then saw %v", w.who, st)
		}
	}
	// b published after it heard a's changes, so an echo of them would
	// reach a before b's change does.
	b.Publish(change("inv-2", mailboxv1.Phase_PHASE_QUEUED, nil))
	if st := next(wa, "a"); st.GetInvocation() != "inv-2" {
		t.Fatalf("a's watcher saw %v again before b's change: its own changes came back to it", st)
	}
	if st := next(wb, "b"); st.GetInvocation() != "inv-2" {
		t.Fatalf("b's watcher saw %v, want its own change", st)
	}
}
