package watch

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protowire"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A replica folds its own changes in as it publishes them and hears only
// the others' (its connection has NoEcho): every watcher, on either
// replica, sees each change once, in order.
func TestAChangeReachesEveryReplicaOnce(t *testing.T) {
	t.Parallel()
	a, b := replicas(t)
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

// Changes made faster than they are sent leave in batches, cut to fit a
// message: the other replica hears every one.
func TestABurstOfChangesReachesTheOtherReplicaWhole(t *testing.T) {
	t.Parallel()
	a, b := replicas(t)
	const n = 3000 // of about 250 bytes each: several messages of maxBatch
	poster := strings.Repeat("p", 200)
	for i := range n {
		a.Publish(change(fmt.Sprintf("inv-%d", i), mailboxv1.Phase_PHASE_QUEUED, func(s *mailboxv1.InvocationState) { s.Poster = poster }))
	}
	testkit.Eventually(t, "the other replica tracks every invocation", 10*time.Second, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.live) == n
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	if got := b.live["inv-2999"].GetPoster(); got != poster {
		t.Fatalf("the last change arrived as %q", got)
	}
}

// A replica that knows of no other sends nothing: its changes would reach
// nobody. Once another is known it sends again; what the other heard
// first is the change made after, so the one before was never sent (a
// connection's messages arrive in order).
func TestAReplicaAloneSendsNothing(t *testing.T) {
	t.Parallel()
	var others atomic.Bool
	a, b := replicasWith(t, others.Load)
	wb, _ := b.Watch(true, "ops")
	wa, _ := a.Watch(true, "ops")
	a.Publish(change("alone", mailboxv1.Phase_PHASE_QUEUED, nil))
	select {
	case st := <-wa.C():
		if st.GetInvocation() != "alone" {
			t.Fatalf("a's own watcher saw %v, want its change made alone", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a's own watcher heard nothing of its change made alone")
	}
	others.Store(true)
	a.Publish(change("seen", mailboxv1.Phase_PHASE_QUEUED, nil))
	select {
	case st := <-wb.C():
		if st.GetInvocation() != "seen" {
			t.Fatalf("b heard %v first: a sent a change made while it knew of no other replica", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b heard nothing of a change made once a knew of it")
	}
}

// replicas are two trackers on one NATS server.
func replicas(t *testing.T) (a, b *Tracker) { return replicasWith(t, nil) }

// replicasWith are two trackers on one NATS server; a sends while
// aOthers says so (nil: always).
func replicasWith(t *testing.T, aOthers func() bool) (a, b *Tracker) {
	t.Helper()
	srv := testkit.NATS(t)
	replica := func(others func() bool) *Tracker {
		nc, err := nats.Connect("", srv.InProcess())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		tr, err := New(nc, time.Hour, others, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.Close)
		return tr
	}
	return replica(aOthers), replica(nil)
}

// A batch is cut at an entry's end, within maxBatch, and never empty.
func TestCutKeepsEntriesWholeWithinABatch(t *testing.T) {
	t.Parallel()
	entry := protowire.AppendBytes(nil, make([]byte, 1000))
	var batch []byte
	for range 600 {
		batch = append(batch, entry...)
	}
	if n := cut(batch); n > maxBatch || n%len(entry) != 0 || n == 0 {
		t.Fatalf("cut %d bytes of entries of %d, want whole entries within %d", n, len(entry), maxBatch)
	}
	huge := protowire.AppendBytes(nil, make([]byte, 2*maxBatch))
	if n := cut(huge); n != len(huge) {
		t.Fatalf("an entry larger than maxBatch: cut %d of %d, want it whole", n, len(huge))
	}
}
