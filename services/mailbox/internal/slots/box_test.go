package slots

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

type presenceLog struct {
	mu     sync.Mutex
	events []string
}

func (p *presenceLog) Opened(client, session string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, "open "+client+" "+session)
}

func (p *presenceLog) Closed(client string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, "close "+client)
}

func newBox(t *testing.T) (*Box, *fakeClock, *presenceLog) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	p := &presenceLog{}
	b := New(Config{TTL: time.Hour, MaxQueued: 100, MaxSlots: 1000, MaxCaptureBytes: 1 << 20, Clock: clock, Presence: p})
	t.Cleanup(b.Close)
	return b, clock, p
}

func post(t *testing.T, b *Box, client, tool string) string {
	t.Helper()
	id, err := b.Post(client, "driver", tool, `{"n":1}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func open(t *testing.T, b *Box, client string) *Read {
	t.Helper()
	r, err := b.OpenRead(client, "s1")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantAbsent(t *testing.T, err error, id string) {
	t.Helper()
	want := `no invocation "` + id + `" is in flight; it was answered already, it expired, or this engine restarted since it was posted — the box may have run it; read the world before acting again`
	if status.Code(err) != codes.NotFound || status.Convert(err).Message() != want {
		t.Fatalf("got %v, want NOT_FOUND %q", err, want)
	}
}

func TestIdsAreUnguessableHandles(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	seen := map[string]bool{}
	for i := range 1000 {
		id := post(t, b, fmt.Sprint("host-", i%20), "echo")
		if !strings.HasPrefix(id, "inv-") || len(id) != 4+32 || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}

func TestAHostThatDiesGetsTheInvocationAgainUnderTheSameID(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	id := post(t, b, "laptop", "echo")
	r := open(t, b, "laptop")
	got, _ := r.Take(true)
	if len(got) != 1 || got[0].ID != id || got[0].Delivery != 1 || got[0].Input != `{"n":1}` {
		t.Fatalf("first read: %+v", got)
	}
	r.Close() // the host died without completing

	newer := post(t, b, "laptop", "echo")
	r = open(t, b, "laptop")
	if r.Requeued != 1 {
		t.Fatalf("requeued = %d, want 1", r.Requeued)
	}
	got, _ = r.Take(true)
	if len(got) != 2 || got[0].ID != id || got[0].Delivery != 2 || got[1].ID != newer {
		t.Fatalf("second read: %+v (the requeued invocation goes first, same id)", got)
	}
}

func TestASecondReaderIsRefused(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	r := open(t, b, "laptop")
	_, err := b.OpenRead("laptop", "s2")
	want := `invocations: "laptop" is already holding this engine's follow-class read — one machine's queue has one reader`
	if status.Code(err) != codes.FailedPrecondition || status.Convert(err).Message() != want {
		t.Fatalf("second reader: %v", err)
	}
	r.Close()
	open(t, b, "laptop").Close() // released: a new read is fine
}

func TestForeignIdentitiesGetTheAbsentSentence(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	id := post(t, b, "laptop", "echo")
	_, err := b.Complete("mallory", id, Capture{Stdout: "x"})
	wantAbsent(t, err, id)
	_, err = b.Collect(context.Background(), "mallory", id, 0)
	wantAbsent(t, err, id)
	_, err = b.Cancel("mallory", id, "")
	wantAbsent(t, err, id)
	_, err = b.Complete("laptop", "inv-unknown", Capture{})
	wantAbsent(t, err, "inv-unknown")
}

func TestCaptureIsAbsentWhileRunningThenReadOnce(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	id := post(t, b, "laptop", "echo")
	c, err := b.Collect(context.Background(), "driver", id, 0)
	if err != nil || c != nil {
		t.Fatalf("running: %v %v, want no capture", c, err)
	}
	r := open(t, b, "laptop")
	r.Take(true)
	receipt, err := b.Complete("laptop", id, Capture{Stdout: "hi", Stderr: "", ExitCode: 3})
	if err != nil || receipt != (Capture{Stdout: "hi", ExitCode: 3}) {
		t.Fatalf("receipt %+v %v", receipt, err)
	}
	_, err = b.Complete("laptop", id, Capture{Stdout: "again"})
	wantAbsent(t, err, id) // answered already
	c, err = b.Collect(context.Background(), "driver", id, 0)
	if err != nil || c == nil || c.Stdout != "hi" || c.ExitCode != 3 {
		t.Fatalf("collect: %+v %v", c, err)
	}
	_, err = b.Collect(context.Background(), "driver", id, 0)
	wantAbsent(t, err, id) // read once
	if b.Len() != 0 || b.expiry.n != 0 || len(b.queues) != 1 {
		t.Fatalf("a collected slot is retained: slots=%d expiry=%d queues=%d", b.Len(), b.expiry.n, len(b.queues))
	}
}

func TestThreeHandOffsProduceTheInDoubtCapture(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	id := post(t, b, "laptop", "echo")
	for range HandoffCap {
		r := open(t, b, "laptop")
		if got, _ := r.Take(true); len(got) != 1 {
			t.Fatalf("hand-off: %+v", got)
		}
		r.Close()
	}
	r := open(t, b, "laptop")
	defer r.Close()
	if got, _ := r.Take(true); len(got) != 0 {
		t.Fatalf("handed out a fourth time: %+v", got)
	}
	c, err := b.Collect(context.Background(), "driver", id, 0)
	want := `this invocation was handed to "laptop" 3 times and never answered; each hand-off may have run it; read the world before acting again`
	if err != nil || c == nil || c.ExitCode != 1 || c.Stderr != want || c.Stdout != "" {
		t.Fatalf("in-doubt capture: %+v %v", c, err)
	}
}

func TestACaptureAfterTwoHandOffsIsPrefixed(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	id := post(t, b, "laptop", "echo")
	r := open(t, b, "laptop")
	r.Take(true)
	r.Close()
	r = open(t, b, "laptop")
	r.Take(true)
	receipt, err := b.Complete("laptop", id, Capture{Stdout: "ok", Stderr: "warning"})
	if err != nil {
		t.Fatal(err)
	}
	want := `this invocation was handed to "laptop" 2 times; each hand-off may have run it, so what this capture reports may be the effect of more than one run; read the world before acting again` + "\nwarning"
	if receipt.Stderr != want {
		t.Fatalf("stderr = %q\nwant %q", receipt.Stderr, want)
	}
}

func TestCancelReachesTheHostAndAnswers130(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	id := post(t, b, "laptop", "slow")
	r := open(t, b, "laptop")
	r.Take(true)
	c, err := b.Cancel("driver", id, "the user pressed stop")
	if err != nil || c.ExitCode != 130 || !strings.Contains(c.Stderr, "cancelled by its poster") || !strings.Contains(c.Stderr, "the user pressed stop") {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	select {
	case <-r.Wake():
	default:
		t.Fatal("the reader was not woken for the cancellation")
	}
	_, cancels := r.Take(true)
	if len(cancels) != 1 || cancels[0] != id {
		t.Fatalf("cancels = %v", cancels)
	}
	_, err = b.Complete("laptop", id, Capture{Stdout: "late"})
	wantAbsent(t, err, id)
}

func TestCancelOfAQueuedInvocationTakesItOffTheQueue(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	id := post(t, b, "laptop", "echo")
	if _, err := b.Cancel("driver", id, ""); err != nil {
		t.Fatal(err)
	}
	r := open(t, b, "laptop")
	defer r.Close()
	if got, _ := r.Take(true); len(got) != 0 {
		t.Fatalf("a cancelled invocation was handed out: %+v", got)
	}
}

func TestAWaitWakesOnTheAnswer(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	id := post(t, b, "laptop", "echo")
	got := make(chan *Capture, 1)
	go func() {
		// An hour's wait: only the answer can end it within the test.
		c, err := b.Collect(context.Background(), "driver", id, time.Hour)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	r := open(t, b, "laptop")
	r.Take(true)
	if _, err := b.Complete("laptop", id, Capture{Stdout: "done"}); err != nil {
		t.Fatal(err)
	}
	if c := <-got; c == nil || c.Stdout != "done" {
		t.Fatalf("waiter got %+v", c)
	}
}

func TestExpiryBySweeperWithoutAnotherPost(t *testing.T) {
	t.Parallel()
	b, clock, _ := newBox(t)
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
	_, err := b.Collect(context.Background(), "driver", id, 0)
	wantAbsent(t, err, id)
	r := open(t, b, "laptop")
	defer r.Close()
	if got, _ := r.Take(true); len(got) != 0 {
		t.Fatalf("an expired invocation was handed out: %+v", got)
	}
}

func TestBoundsRefuseWithASentence(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	for range 100 {
		post(t, b, "laptop", "echo")
	}
	_, err := b.Post("laptop", "driver", "echo", "1", nil)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), `client "laptop" has 100 invocations queued`) {
		t.Fatalf("queue bound: %v", err)
	}
	id := post(t, b, "desk", "echo")
	_, err = b.Complete("desk", id, Capture{Stdout: strings.Repeat("x", 1<<20+1)})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "at most 1048576") {
		t.Fatalf("capture bound: %v", err)
	}
}

func TestPresenceFollowsReads(t *testing.T) {
	t.Parallel()
	b, _, p := newBox(t)
	r := open(t, b, "laptop")
	r.Close()
	r.Close() // twice is once
	if got := strings.Join(p.events, ","); got != "open laptop s1,close laptop" {
		t.Fatalf("presence = %s", got)
	}
}

func TestCloseEndsReadsAndRefusesPosts(t *testing.T) {
	t.Parallel()
	b, _, _ := newBox(t)
	r := open(t, b, "laptop")
	b.Close()
	select {
	case <-r.Ended():
	default:
		t.Fatal("read not ended")
	}
	if _, err := b.Post("laptop", "d", "t", "1", nil); status.Code(err) != codes.Unavailable {
		t.Fatalf("post after close: %v", err)
	}
}
