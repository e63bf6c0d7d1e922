package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// The rules of a Call (post, then wait for the answer in one act): the
// answer reaches the call once, and only the call; a call whose wait ends
// first leaves the capture to be collected with its handle.
var callRules = []rule{
	{"ACallGetsItsAnswerOnce", aCallGetsItsAnswerOnce},
	{"ACallAfterTwoHandOffsGetsThePrefix", aCallAfterTwoHandOffsGetsThePrefix},
	{"ACallWhoseWaitEndsLeavesTheCaptureToCollect", aCallWhoseWaitEndsLeavesTheCaptureToCollect},
	{"CallsAtOnceGetTheirOwnAnswers", callsAtOnceGetTheirOwnAnswers},
	{"ACallAtTheQueueBoundIsRefusedWithTheSentence", aCallAtTheQueueBoundIsRefusedWithTheSentence},
}

// called is the outcome of a Call.
type called struct {
	c   *inflight.Capture
	err error
}

// startCall calls on s in the background, waiting as long as wait lives.
func startCall(s inflight.Store, wait context.Context, id, input string) <-chan called {
	out := make(chan called, 1)
	go func() {
		c, err := s.Call(ctx, wait, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: input})
		out <- called{c, err}
	}()
	return out
}

func aCallGetsItsAnswerOnce(t *testing.T, o Open) {
	s := o(t, Defaults)
	r := open(t, s, "laptop")
	defer r.Close()
	id := inflight.NewID()
	done := startCall(s, ctx, id, `{"n":1}`)
	got := take(t, r, 1)
	if got[0].ID != id {
		t.Fatalf("handed out %+v, want %s", got, id)
	}
	receipt, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "hi", ExitCode: 3})
	if err != nil || !same(receipt, inflight.Capture{Stdout: "hi", ExitCode: 3}) {
		t.Fatalf("receipt %+v %v", receipt, err)
	}
	res := <-done
	if res.err != nil || res.c == nil || !same(*res.c, receipt) {
		t.Fatalf("the call got %+v %v, want %+v", res.c, res.err, receipt)
	}
	_, err = s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "again"})
	wantAbsent(t, err, id) // answered already
	_, err = s.Collect(ctx, "driver", id, 0, "")
	wantAbsent(t, err, id) // read once: the call's reply took it
	_, err = s.Cancel(ctx, "driver", id, "too late", false)
	wantAbsent(t, err, id)
	takeNone(t, s, r, "laptop")
}

func aCallAfterTwoHandOffsGetsThePrefix(t *testing.T, o Open) {
	s := o(t, Defaults)
	id := inflight.NewID()
	done := startCall(s, ctx, id, `{"n":1}`)
	r := open(t, s, "laptop")
	take(t, r, 1)
	r.Close()
	r = open(t, s, "laptop")
	defer r.Close()
	if got := take(t, r, 1); got[0].ID != id || got[0].Delivery != 2 {
		t.Fatalf("second hand-off: %+v", got)
	}
	receipt, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	want := `this invocation was handed to "laptop" 2 times; each hand-off may have run it, so what this capture reports may be the effect of more than one run; read the world before acting again`
	if res := <-done; res.err != nil || res.c == nil || res.c.Stderr != want || !same(*res.c, receipt) {
		t.Fatalf("the call got %+v %v; want stderr %q, as the receipt %+v", res.c, res.err, want, receipt)
	}
}

func aCallWhoseWaitEndsLeavesTheCaptureToCollect(t *testing.T, o Open) {
	s := o(t, Defaults)
	r := open(t, s, "laptop")
	defer r.Close()
	wait, stop := context.WithCancel(ctx)
	id := inflight.NewID()
	done := startCall(s, wait, id, `{"n":1}`)
	take(t, r, 1)
	stop() // the driver's deadline nears before the host answers
	if res := <-done; res.err != nil || res.c != nil {
		t.Fatalf("a call whose wait ended got %+v %v, want no capture yet", res.c, res.err)
	}
	if _, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "late"}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Collect(ctx, "driver", id, time.Minute, "")
	if err != nil || c == nil || c.Stdout != "late" {
		t.Fatalf("collect after the call: %+v %v", c, err)
	}
	_, err = s.Collect(ctx, "driver", id, 0, "")
	wantAbsent(t, err, id)
}

func callsAtOnceGetTheirOwnAnswers(t *testing.T, o Open) {
	const n = 40
	s := o(t, Defaults)
	r := open(t, s, "laptop")
	defer r.Close()
	calls := make(map[string]<-chan called, n)
	for i := range n {
		id := inflight.NewID()
		calls[id] = startCall(s, ctx, id, fmt.Sprintf(`{"n":%d}`, i))
	}
	for _, inv := range take(t, r, n) {
		if _, err := s.Complete(ctx, "laptop", inv.ID, inflight.Capture{Stdout: inv.Input}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for id, done := range calls {
		res := <-done
		if res.err != nil || res.c == nil || seen[res.c.Stdout] {
			t.Fatalf("call %s got %+v %v (answers so far %v)", id, res.c, res.err, seen)
		}
		seen[res.c.Stdout] = true
	}
	takeNone(t, s, r, "laptop")
}

// A Call while its client's host reads (the JetStream box then posts it
// precounted, its queue message sent asynchronously) is refused at the
// queue's bound as a post is, and leaves nothing behind.
func aCallAtTheQueueBoundIsRefusedWithTheSentence(t *testing.T, o Open) {
	s := o(t, Defaults)
	r := open(t, s, "laptop")
	defer r.Close()
	for range Defaults.MaxQueued {
		post(t, s, "laptop", "echo")
	}
	id := inflight.NewID()
	res := <-startCall(s, ctx, id, "1")
	if status.Code(res.err) != codes.ResourceExhausted || !strings.Contains(res.err.Error(), `client "laptop" has 100 invocations queued`) {
		t.Fatalf("a Call at the queue bound: %+v %v", res.c, res.err)
	}
	_, err := s.Collect(ctx, "driver", id, 0, "")
	wantAbsent(t, err, id)
}
