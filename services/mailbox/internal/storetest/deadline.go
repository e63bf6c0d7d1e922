package storetest

import (
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// postBy queues an invocation whose driver set a timeout running out at
// deadline.
func postBy(t *testing.T, s inflight.Store, client string, deadline time.Time) string {
	t.Helper()
	id := inflight.NewID()
	p := inflight.Post{ID: id, Client: client, Poster: "driver", Tool: "t", Input: `{}`, Timeout: time.Minute, Deadline: deadline}
	if err := s.Post(ctx, p); err != nil {
		t.Fatal(err)
	}
	return id
}

// A driver's deadline reaches the host with the invocation, so the host can
// stop the run when it passes (docs/design.md §3).
func aDeadlineTravelsToTheHost(t *testing.T, o Open) {
	s := o(t, Defaults)
	deadline := time.Now().Add(time.Hour)
	id := postBy(t, s, "laptop", deadline)
	r := open(t, s, "laptop")
	defer r.Close()
	got := take(t, r, 1)
	if got[0].ID != id || !got[0].Deadline.Equal(deadline) || got[0].Timeout != time.Minute {
		t.Fatalf("handed %+v; want %s with the timeout 1m and the deadline %v", got[0], id, deadline)
	}
	// Its slot's expiry travels too: past it nobody can collect a capture.
	if e := got[0].Expires; !e.After(time.Now()) || e.After(time.Now().Add(Defaults.TTL)) {
		t.Errorf("handed with the expiry %v; want within the TTL of %v from now", e, Defaults.TTL)
	}
}

// An invocation whose driver's timeout ran out while it was queued is not
// handed out: the mailbox answers it, exit code 124, saying it never ran.
func aTimeoutThatRanOutInTheQueueIsAnsweredNotHanded(t *testing.T, o Open) {
	s := o(t, Defaults)
	deadline := time.Now().Add(-time.Second)
	id := postBy(t, s, "laptop", deadline)
	r := open(t, s, "laptop")
	defer r.Close()
	takeNone(t, s, r, "laptop")
	c, err := s.Collect(ctx, "driver", id, 10*time.Second, "")
	want := inflight.TimedOut(id, "laptop", deadline)
	if err != nil || c == nil || !same(*c, want) {
		t.Fatalf("collect: %+v %v; want %+v", c, err, want)
	}
}
