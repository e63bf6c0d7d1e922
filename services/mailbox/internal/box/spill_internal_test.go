package box

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// A hand-over whose write fails (a stream electing its leader, NATS going)
// leaves the call on its client's queue here, for the next try, rather than
// stranded off every list: the next hand-over writes it, and the call is
// answered through its record.
func TestAHandOverThatCannotWriteKeepsItsCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openBox(t, testkit.NATS(t).ClientURL(), 1)
	r := laptopRead(t, b)
	id := inflight.NewID()
	answered := callOn(t, b, id)
	awaitHanded(t, r, id)
	r.Close()

	b.mu.Lock()
	q := b.queues["laptop"]
	b.mu.Unlock()
	cut, stop := context.WithCancel(ctx)
	stop() // every write fails
	if err := b.spill(cut, q); err == nil {
		t.Fatal("a hand-over that could not write said nothing")
	}
	b.mu.Lock()
	s := b.slots[id]
	kept := s != nil && b.queues["laptop"] == q && q.pending.has(s) && s.writing == nil
	b.mu.Unlock()
	if !kept {
		t.Fatal("the call whose write failed is on no queue here")
	}

	if err := b.spill(ctx, q); err != nil {
		t.Fatalf("the next hand-over: %v", err)
	}
	if rec, err := b.recs.get(ctx, "laptop", id); err != nil || rec == nil || rec.state != stQueued {
		t.Fatalf("the call's record: %+v %v; want it queued", rec, err)
	}
	answerThroughRead(t, b, id, "done")
	if c := <-answered; c == nil || c.Stdout != "done" {
		t.Fatalf("the call answered %+v; want its capture", c)
	}
}

// A collection of a call whose answer is on its way from home (the Call
// returned its handle first) waits for it here, rather than finding it
// nowhere while it travels.
func TestACollectionWaitsForAnAnswerOnItsWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openBox(t, testkit.NATS(t).ClientURL(), 1)
	p := inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`}
	b.mu.Lock()
	b.arriving[p.ID] = p.Poster
	b.mu.Unlock()
	if c, err := b.Collect(ctx, "driver", p.ID, 0, ""); c != nil || err != nil {
		t.Fatalf("a look without waiting: %+v %v; want it running", c, err)
	}
	if _, err := b.Collect(ctx, "intruder", p.ID, 0, ""); err == nil {
		t.Fatal("another caller's collection found a call on its way")
	}
	collected := make(chan error, 1)
	go func() {
		c, err := b.Collect(ctx, "driver", p.ID, time.Minute, "")
		if err == nil && (c == nil || c.Stdout != "done") {
			err = fmt.Errorf("collected %+v; want its answer", c)
		}
		collected <- err
	}()
	testkit.Eventually(t, "the collection to wait", 10*time.Second, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.waits[p.ID] != nil
	})
	b.keep(p, Capture{Stdout: "done"})
	b.landed(p.ID)
	if err := <-collected; err != nil {
		t.Fatal(err)
	}
}

// A home that loses NATS ends its reads at once: the read hands out
// nothing more, an answer sent through another replica meanwhile still
// reaches the call it holds, and once NATS is back what it had not handed
// out goes to records, for wherever the host reads next.
func TestAHomeThatLostNATSHandsOutNothingMoreAndLosesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testkit.NATS(t).ClientURL()
	home, other := openBox(t, url, 1), openBox(t, url, 1)
	testkit.Eventually(t, "the replicas to hear of each other", 10*time.Second, func() bool {
		other.mu.Lock()
		defer other.mu.Unlock()
		return len(other.replicas) > 0
	})
	r := laptopRead(t, home)
	call := func(id string) <-chan *Capture {
		answered := callOn(t, home, id)
		testkit.Eventually(t, id+" queued at home", 10*time.Second, func() bool {
			home.mu.Lock()
			defer home.mu.Unlock()
			return home.slots[id] != nil
		})
		return answered
	}
	handed, queued := inflight.NewID(), inflight.NewID()
	handedDone := call(handed)
	awaitHanded(t, r, handed)
	queuedDone := call(queued)

	home.orphan() // as when its connection to NATS breaks, which drops its interest at once
	if err := home.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Take(true, storetest.Roomy()); len(got) != 0 {
		t.Fatalf("a read ended by a lost NATS handed out %v", got)
	}
	if _, err := other.Complete(ctx, "laptop", handed, Capture{Stdout: "ran"}); err != nil {
		t.Fatalf("an answer sent through the other replica: %v", err)
	}
	if c := <-handedDone; c == nil || c.Stdout != "ran" {
		t.Fatalf("the handed call answered %+v; want its capture", c)
	}

	home.rehome(ctx) // NATS is back
	answerThroughRead(t, other, queued, "ran too")
	if c := <-queuedDone; c == nil || c.Stdout != "ran too" {
		t.Fatalf("the queued call answered %+v; want its capture", c)
	}
}

// A durable invocation answered behind the view's back (its message lost
// as a NATS node went) is collected once a wait without news reads its
// record, not reported running while its home still holds it handed out.
func TestACollectionReadsTheRecordOfAnAnswerItsViewMissed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openBox(t, testkit.NATS(t).ClientURL(), 1)
	r := laptopRead(t, b)
	id := inflight.NewID()
	if err := b.Post(ctx, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`}); err != nil {
		t.Fatal(err)
	}
	awaitHanded(t, r, id)
	b.mu.Lock()
	s, before := b.slots[id], *b.view[id]
	body := s.stored()
	b.mu.Unlock()

	c := Capture{Stdout: "done"}
	body.Capture = captureProto(&c)
	rev, err := b.recs.put(ctx, "laptop", id, stAnswered, body, s.rev, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the view to hear the answer", 10*time.Second, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.view[id] != nil && b.view[id].rev == rev
	})
	b.mu.Lock() // as if it had not: the handed slot and the queued record back
	b.slots[id], b.view[id] = s, &before
	b.mu.Unlock()

	got, err := b.Collect(ctx, "driver", id, 200*time.Millisecond, "")
	if err != nil || got == nil || got.Stdout != "done" {
		t.Fatalf("collected %+v, %v; want the answer in its record", got, err)
	}
}

// An ask that reaches the asker's own subscription (it became the client's
// home as it asked) is answered at once as one with no other home, so the
// asker acts here; it does not wait out an ask nobody answers.
func TestAnAskThatMeetsItsOwnReplicaIsAnsweredAsNoHome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openBox(t, testkit.NATS(t).ClientURL(), 1)
	laptopRead(t, b) // the replica is laptop's home: it subscribes to its asks
	for _, op := range []string{"status", "complete", "collect", "cancel", "release", "post"} {
		a := &ask{Op: op, Caller: "driver", ID: inflight.NewID(), Client: "laptop", Session: "s",
			Capture: &Capture{}, Post: &inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`}}
		if _, err := b.request(ctx, hostPrefix+"laptop", a); !errors.Is(err, errNoHome) {
			t.Errorf("%s asked of its own replica: %v; want it answered as no home", op, err)
		}
	}
	if !b.alive(ctx, b.name) {
		t.Error("a replica pinging itself is not alive")
	}
}
