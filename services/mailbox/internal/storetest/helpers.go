package storetest

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// What the rules of storetest.go do over and over: post, open a read, take.

func post(t *testing.T, s inflight.Store, client, tool string) string {
	t.Helper()
	id := inflight.NewID()
	if err := s.Post(ctx, inflight.Post{ID: id, Client: client, Poster: "driver", Tool: tool, Input: `{"n":1}`}); err != nil {
		t.Fatal(err)
	}
	return id
}

func open(t *testing.T, s inflight.Store, client string) inflight.Read {
	t.Helper()
	r, err := s.OpenRead(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// handedOut posts an invocation of tool to "laptop" and takes it on a read
// the caller closes.
func handedOut(t *testing.T, s inflight.Store, tool string) (string, inflight.Read) {
	t.Helper()
	id := post(t, s, "laptop", tool)
	r := open(t, s, "laptop")
	take(t, r, 1)
	return id, r
}

// cancelsOf waits until r is told of cancellations and returns them.
func cancelsOf(t *testing.T, r inflight.Read) []string {
	t.Helper()
	for {
		if _, cancels := r.Take(true, Roomy()); len(cancels) > 0 {
			return cancels
		}
		select {
		case <-r.Wake():
		case <-time.After(10 * time.Second):
			t.Fatal("the reader was not woken for the cancellation")
		}
	}
}

// take waits until the read has handed out n invocations (a store may
// deliver them a moment after the post) and returns them.
func take(t *testing.T, r inflight.Read, n int) []inflight.Invocation {
	t.Helper()
	got := takeWithin(r, n, 10*time.Second)
	if len(got) < n {
		t.Fatalf("the read handed out %d invocations, want %d: %+v", len(got), n, got)
	}
	return got
}

// takeWithin takes until n invocations are handed out or d has passed,
// and returns what it got.
func takeWithin(r inflight.Read, n int, d time.Duration) []inflight.Invocation {
	var got []inflight.Invocation
	deadline := time.After(d)
	for len(got) < n {
		invs, _ := r.Take(true, Roomy())
		got = append(got, invs...)
		if len(got) >= n {
			break
		}
		select {
		case <-r.Wake():
		case <-deadline:
			return got
		}
	}
	return got
}

// takeNone checks that nothing is handed out: the post-and-settle of a
// marker invocation proves the store has delivered everything posted
// before it (not always what was given back before it: see
// answeredWhileReading).
// A store opened with a TTL shorter than a busy machine's delivery may let
// the marker itself expire before the read gets to it; then another marker
// is posted, and any marker handed out settles it.
func takeNone(t *testing.T, s inflight.Store, r inflight.Read, client string) {
	t.Helper()
	markers := map[string]bool{}
	for range 5 {
		markers[post(t, s, client, "marker")] = true
		got := takeWithin(r, 1, 10*time.Second)
		for _, inv := range got {
			if !markers[inv.ID] {
				t.Fatalf("handed out %+v; want only a marker of %v", inv, markers)
			}
		}
		if len(got) > 0 {
			return
		}
	}
	t.Fatalf("none of the markers %v was handed out", markers)
}

// answeredWhileReading collects id's capture as its poster "driver",
// taking from r meanwhile (it must hand out nothing more): a store may
// deliver an invocation given back after invocations posted since, and the
// mailbox's own answer to it (the in-doubt capture) is written by the Take
// that receives it. It gives up after a lease and a margin, when even a
// lost give-back would have been delivered again.
func answeredWhileReading(t *testing.T, s inflight.Store, r inflight.Read, id string) (*inflight.Capture, error) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		c, err := s.Collect(ctx, "driver", id, 0, "")
		if c != nil || err != nil || time.Now().After(deadline) {
			return c, err
		}
		if got := takeWithin(r, 1, 100*time.Millisecond); len(got) > 0 {
			t.Fatalf("handed out %+v while waiting for the answer of %s", got, id)
		}
	}
}

func wantAbsent(t *testing.T, err error, id string) {
	t.Helper()
	want := `no invocation "` + id + `" is in flight; it was answered already, it expired, or this engine restarted since it was posted — the box may have run it; read the world before acting again`
	if status.Code(err) != codes.NotFound || status.Convert(err).Message() != want {
		t.Fatalf("got %v, want NOT_FOUND %q", err, want)
	}
}

// Roomy is a read's room for every invocation a test posts.
func Roomy() *inflight.Room { return &inflight.Room{Rows: 1 << 20, Bytes: 1 << 40} }

// same reports whether two captures say the same, whatever notes came
// with them (Capture.Notes, for a Call).
func same(a, b inflight.Capture) bool {
	a.Notes, b.Notes = nil, nil
	return reflect.DeepEqual(a, b)
}
