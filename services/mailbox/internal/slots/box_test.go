package slots

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// fakeClock drives expiry by hand.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves time on and runs the timers that came due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			due = append(due, t)
		} else if !t.stopped {
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, t := range due {
		t.stopped = true
		t.f()
	}
}

func newBox(t *testing.T) (*Box, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	b := New(Config{TTL: time.Hour, MaxQueued: 100, MaxSlots: 1000, MaxCaptureBytes: 1 << 20, Clock: clock})
	t.Cleanup(b.Close)
	return b, clock
}

var ctx = context.Background()

func post(t *testing.T, b *Box, client, tool string) string {
	t.Helper()
	id := inflight.NewID()
	if err := b.Post(ctx, inflight.Post{ID: id, Client: client, Poster: "driver", Tool: tool, Input: `{"n":1}`}); err != nil {
		t.Fatal(err)
	}
	return id
}

func wantAbsent(t *testing.T, err error, id string) {
	t.Helper()
	if status.Code(err) != codes.NotFound || status.Convert(err).Message() != status.Convert(inflight.Absent(id)).Message() {
		t.Fatalf("got %v, want the absent sentence", err)
	}
}

// TestTheRAMBoxKeepsTheRules runs the stores' conformance suite.
func TestTheRAMBoxKeepsTheRules(t *testing.T) {
	storetest.Run(t, func(t *testing.T, bounds storetest.Bounds) inflight.Store {
		b := New(Config{TTL: bounds.TTL, MaxQueued: bounds.MaxQueued, MaxSlots: 1000, MaxCaptureBytes: bounds.MaxCaptureBytes})
		t.Cleanup(b.Close)
		return b
	}, true)
}

func TestACollectedSlotIsNotRetained(t *testing.T) {
	t.Parallel()
	b, _ := newBox(t)
	id := post(t, b, "laptop", "echo")
	r, err := b.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	r.Take(true, storetest.Roomy())
	if _, err := b.Complete(ctx, "laptop", id, Capture{Stdout: "hi"}); err != nil {
		t.Fatal(err)
	}
	if c, err := b.Collect(ctx, "driver", id, 0, ""); err != nil || c == nil {
		t.Fatalf("collect: %v %v", c, err)
	}
	if b.Len() != 0 || b.expiry.n != 0 || len(b.queues) != 1 {
		t.Fatalf("a collected slot is retained: slots=%d expiry=%d queues=%d", b.Len(), b.expiry.n, len(b.queues))
	}
}

func TestExpiryBySweeperWithoutAnotherPost(t *testing.T) {
	t.Parallel()
	b, clock := newBox(t)
	id := post(t, b, "laptop", "echo")
	waiting := make(chan error, 1)
	go func() {
		_, err := b.Await(context.Background(), "driver", id)
		waiting <- err
	}()
	clock.Advance(59 * time.Minute)
	if b.Len() != 1 {
		t.Fatal("expired early")
	}
	clock.Advance(time.Minute)
	if b.Len() != 0 {
		t.Fatal("not expired after the TTL")
	}
	wantAbsent(t, <-waiting, id) // the waiter is woken and told
	_, err := b.Collect(context.Background(), "driver", id, 0, "")
	wantAbsent(t, err, id)
	r, err := b.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, _ := r.Take(true, storetest.Roomy()); len(got) != 0 {
		t.Fatalf("an expired invocation was handed out: %+v", got)
	}
}
