// Package storetest is the conformance suite of the mailbox's stores: the
// rules of docs/design.md §3 that a store keeps (the lease, the hand-off cap,
// read-once, cancel, expiry, the bounds and every sentence), run against the
// box on one NATS node and on a three-node cluster.
package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Bounds are the limits every store of the suite is opened with.
type Bounds struct {
	TTL             time.Duration
	MaxQueued       int
	MaxCaptureBytes int
}

// Open returns a fresh, empty store for one test, closed when it ends.
type Open func(t *testing.T, b Bounds) inflight.Store

// Defaults are the bounds of every test but the expiry test.
var Defaults = Bounds{TTL: time.Hour, MaxQueued: 100, MaxCaptureBytes: 1 << 20}

// rule is one named rule every store keeps.
type rule struct {
	name string
	f    func(*testing.T, Open)
}

// Run runs every rule against the stores open makes. parallel says whether
// the tests may run at once (stores that share a cluster may not).
func Run(t *testing.T, open Open, parallel bool) {
	for _, tt := range append([]rule{
		{"IdsAreUnguessableHandles", idsAreUnguessableHandles},
		{"AHostThatDiesGetsTheInvocationAgainUnderTheSameID", aHostThatDiesGetsTheInvocationAgain},
		{"ASecondReaderIsRefused", aSecondReaderIsRefused},
		{"ForeignIdentitiesGetTheAbsentSentence", foreignIdentitiesGetTheAbsentSentence},
		{"CaptureIsAbsentWhileRunningThenReadOnce", captureIsAbsentWhileRunningThenReadOnce},
		{"ThreeHandOffsProduceTheInDoubtCapture", threeHandOffsProduceTheInDoubtCapture},
		{"ACaptureAfterTwoHandOffsIsPrefixed", aCaptureAfterTwoHandOffsIsPrefixed},
		{"AnMCPResultIsKeptWhole", anMCPResultIsKeptWhole},
		{"CancelReachesTheHostAndAnswers130", cancelReachesTheHostAndAnswers130},
		{"CancelOfAQueuedInvocationTakesItOffTheQueue", cancelOfAQueuedInvocationTakesItOffTheQueue},
		{"AParkedReadGetsAPostAtOnce", aParkedReadGetsAPostAtOnce},
		{"ARetriedCollectionGetsTheSameCapture", aRetriedCollectionGetsTheSameCapture},
		{"AWaitWakesOnTheAnswer", aWaitWakesOnTheAnswer},
		{"AnUncollectedSlotExpires", anUncollectedSlotExpires},
		{"ADeadlineTravelsToTheHost", aDeadlineTravelsToTheHost},
		{"ATimeoutThatRanOutInTheQueueIsAnsweredNotHanded", aTimeoutThatRanOutInTheQueueIsAnsweredNotHanded},
		{"BoundsRefuseWithASentence", boundsRefuseWithASentence},
		{"CloseEndsReadsAndRefusesPosts", closeEndsReadsAndRefusesPosts},
	}, append(append(batchRules, callRules...), progressRules...)...) {
		t.Run(tt.name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			tt.f(t, open)
		})
	}
}

var ctx = context.Background()

func idsAreUnguessableHandles(t *testing.T, o Open) {
	s := o(t, Defaults)
	seen := map[string]bool{}
	for i := range 200 {
		id := post(t, s, fmt.Sprint("host-", i%20), "echo")
		if !strings.HasPrefix(id, "inv-") || len(id) != 4+32 || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}

func aHostThatDiesGetsTheInvocationAgain(t *testing.T, o Open) {
	s := o(t, Defaults)
	id := post(t, s, "laptop", "echo")
	r := open(t, s, "laptop")
	got := take(t, r, 1)
	if got[0].ID != id || got[0].Delivery != 1 || got[0].Input != `{"n":1}` {
		t.Fatalf("first read: %+v", got)
	}
	r.Close() // the host died without completing

	newer := post(t, s, "laptop", "echo")
	r = open(t, s, "laptop")
	defer r.Close()
	if r.Requeued() != 1 {
		t.Fatalf("requeued = %d, want 1", r.Requeued())
	}
	got = take(t, r, 2)
	if got[0].ID != id || got[0].Delivery != 2 || got[1].ID != newer || got[1].Delivery != 1 {
		t.Fatalf("second read: %+v (the requeued invocation goes first, same id)", got)
	}
}

func aSecondReaderIsRefused(t *testing.T, o Open) {
	s := o(t, Defaults)
	r := open(t, s, "laptop")
	_, err := s.OpenRead(ctx, "laptop", "")
	want := `invocations: "laptop" is already holding this engine's follow-class read — one machine's queue has one reader`
	if status.Code(err) != codes.FailedPrecondition || status.Convert(err).Message() != want || contract.ReasonOf(err) != contract.ReasonSecondReader {
		t.Fatalf("second reader: %v (reason %q)", err, contract.ReasonOf(err))
	}
	r.Close()
	open(t, s, "laptop").Close() // released: a new read is fine
}

func foreignIdentitiesGetTheAbsentSentence(t *testing.T, o Open) {
	s := o(t, Defaults)
	id := post(t, s, "laptop", "echo")
	_, err := s.Complete(ctx, "mallory", id, inflight.Capture{Stdout: "x"})
	wantAbsent(t, err, id)
	_, err = s.Collect(ctx, "mallory", id, 0, "")
	wantAbsent(t, err, id)
	_, err = s.Cancel(ctx, "mallory", id, "", false)
	wantAbsent(t, err, id)
	_, err = s.Complete(ctx, "laptop", "inv-unknown", inflight.Capture{})
	wantAbsent(t, err, "inv-unknown")
	_, err = s.Collect(ctx, "driver", "not a handle at all", 0, "")
	wantAbsent(t, err, "not a handle at all")
}

func captureIsAbsentWhileRunningThenReadOnce(t *testing.T, o Open) {
	s := o(t, Defaults)
	id := post(t, s, "laptop", "echo")
	c, err := s.Collect(ctx, "driver", id, 0, "")
	if err != nil || c != nil {
		t.Fatalf("running: %v %v, want no capture", c, err)
	}
	r := open(t, s, "laptop")
	defer r.Close()
	take(t, r, 1)
	receipt, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "hi", Stderr: "", ExitCode: 3})
	if err != nil || !same(receipt, inflight.Capture{Stdout: "hi", ExitCode: 3}) {
		t.Fatalf("receipt %+v %v", receipt, err)
	}
	_, err = s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "again"})
	wantAbsent(t, err, id) // answered already
	c, err = s.Collect(ctx, "driver", id, 0, "")
	if err != nil || c == nil || c.Stdout != "hi" || c.ExitCode != 3 {
		t.Fatalf("collect: %+v %v", c, err)
	}
	_, err = s.Collect(ctx, "driver", id, 0, "")
	wantAbsent(t, err, id) // read once
	takeNone(t, s, r, "laptop")
}

func threeHandOffsProduceTheInDoubtCapture(t *testing.T, o Open) {
	s := o(t, Defaults)
	id := post(t, s, "laptop", "echo")
	for i := range inflight.HandoffCap {
		r := open(t, s, "laptop")
		if got := take(t, r, 1); got[0].ID != id || got[0].Delivery != int32(i+1) {
			t.Fatalf("hand-off %d: %+v", i+1, got)
		}
		r.Close()
	}
	r := open(t, s, "laptop")
	defer r.Close()
	takeNone(t, s, r, "laptop") // not handed out a fourth time
	c, err := answeredWhileReading(t, s, r, id)
	want := `this invocation was handed to "laptop" 3 times and never answered; each hand-off may have run it; read the world before acting again`
	if err != nil || c == nil || c.ExitCode != 1 || c.Stderr != want || c.Stdout != "" {
		t.Fatalf("in-doubt capture: %+v %v", c, err)
	}
}

func aCaptureAfterTwoHandOffsIsPrefixed(t *testing.T, o Open) {
	s := o(t, Defaults)
	id := post(t, s, "laptop", "echo")
	r := open(t, s, "laptop")
	take(t, r, 1)
	r.Close()
	r = open(t, s, "laptop")
	defer r.Close()
	take(t, r, 1)
	receipt, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "ok", Stderr: "warning"})
	if err != nil {
		t.Fatal(err)
	}
	want := `this invocation was handed to "laptop" 2 times; each hand-off may have run it, so what this capture reports may be the effect of more than one run; read the world before acting again` + "\nwarning"
	if receipt.Stderr != want {
		t.Fatalf("stderr = %q\nwant %q", receipt.Stderr, want)
	}
	if w := strings.TrimSuffix(want, "\nwarning"); receipt.Warning != w {
		t.Fatalf("warning = %q\nwant %q", receipt.Warning, w)
	}
}

// An MCP server's result, or its JSON-RPC error, is kept as the host sent
// it, byte for byte, with the text fields beside it.
func anMCPResultIsKeptWhole(t *testing.T, o Open) {
	s := o(t, Defaults)
	const res = `{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png","_meta":{"a":1}}],"isError":false,"structuredContent":{"k":"\u00e9"}}`
	for _, sent := range []inflight.Capture{
		{Stdout: "[image content]", MCPResult: res},
		{Stderr: "JSON-RPC error -32603: boom", ExitCode: 1, MCPError: `{"code":-32603,"message":"boom","data":{"k":"\u00e9"}}`},
	} {
		id := post(t, s, "laptop", "shot")
		r := open(t, s, "laptop")
		take(t, r, 1)
		r.Close()
		if receipt, err := s.Complete(ctx, "laptop", id, sent); err != nil || !same(receipt, sent) {
			t.Fatalf("receipt %+v %v", receipt, err)
		}
		c, err := s.Collect(ctx, "driver", id, 0, "")
		if err != nil || c == nil || !same(*c, sent) {
			t.Fatalf("collect: %+v %v, want %+v", c, err, sent)
		}
	}
}

func cancelReachesTheHostAndAnswers130(t *testing.T, o Open) {
	s := o(t, Defaults)
	id, r := handedOut(t, s, "slow")
	defer r.Close()
	c, err := s.Cancel(ctx, "driver", id, "the user pressed stop", false)
	if err != nil || c.ExitCode != 130 || c.Stderr != `invocation "`+id+`" was cancelled by its poster before it was answered: the user pressed stop` {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	if cancels := cancelsOf(t, r); len(cancels) != 1 || cancels[0] != id {
		t.Fatalf("cancels = %v", cancels)
	}
	_, err = s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "late"})
	wantAbsent(t, err, id)
}

func cancelOfAQueuedInvocationTakesItOffTheQueue(t *testing.T, o Open) {
	s := o(t, Defaults)
	id := post(t, s, "laptop", "echo")
	if _, err := s.Cancel(ctx, "driver", id, "", false); err != nil {
		t.Fatal(err)
	}
	r := open(t, s, "laptop")
	defer r.Close()
	takeNone(t, s, r, "laptop")
}

func aParkedReadGetsAPostAtOnce(t *testing.T, o Open) {
	s := o(t, Defaults)
	r := open(t, s, "laptop")
	defer r.Close()
	if got, _ := r.Take(true, Roomy()); len(got) != 0 {
		t.Fatalf("an empty queue handed out %+v", got)
	}
	id := post(t, s, "laptop", "echo")
	// The read is woken by the post itself: there is no tick to wait for.
	if got := take(t, r, 1); got[0].ID != id {
		t.Fatalf("parked read got %+v", got)
	}
}

func aWaitWakesOnTheAnswer(t *testing.T, o Open) {
	s := o(t, Defaults)
	id := post(t, s, "laptop", "echo")
	got := make(chan *inflight.Capture, 1)
	go func() {
		// An hour's wait: only the answer can end it within the test.
		c, err := s.Collect(ctx, "driver", id, time.Hour, "")
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	r := open(t, s, "laptop")
	defer r.Close()
	take(t, r, 1)
	if _, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "done"}); err != nil {
		t.Fatal(err)
	}
	if c := <-got; c == nil || c.Stdout != "done" {
		t.Fatalf("waiter got %+v", c)
	}
}

func anUncollectedSlotExpires(t *testing.T, o Open) {
	b := Defaults
	b.TTL = time.Second
	s := o(t, b)
	id := post(t, s, "laptop", "echo")
	// Expiry is the store's own doing: nothing else touches the box.
	var err error
	testkit.Eventually(t, "the slot to expire (a 1 s TTL)", 30*time.Second, func() bool {
		_, err = s.Collect(ctx, "driver", id, 0, "")
		return status.Code(err) == codes.NotFound
	})
	wantAbsent(t, err, id)
	r := open(t, s, "laptop")
	defer r.Close()
	takeNone(t, s, r, "laptop")
}

func boundsRefuseWithASentence(t *testing.T, o Open) {
	s := o(t, Defaults)
	for range Defaults.MaxQueued {
		post(t, s, "laptop", "echo")
	}
	err := s.Post(ctx, inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "driver", Tool: "echo", Input: "1"})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), `client "laptop" has 100 invocations queued`) {
		t.Fatalf("queue bound: %v", err)
	}
	id := post(t, s, "desk", "echo")
	_, err = s.Complete(ctx, "desk", id, inflight.Capture{Stdout: strings.Repeat("x", Defaults.MaxCaptureBytes+1)})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "at most 1048576") {
		t.Fatalf("capture bound: %v", err)
	}
	// An MCP result counts against the same bound.
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", Defaults.MaxCaptureBytes) + `"}]}`
	_, err = s.Complete(ctx, "desk", id, inflight.Capture{Stdout: "x", MCPResult: big})
	if want := fmt.Sprintf("capture: stdout, stderr and mcp_result hold %d bytes; this mailbox keeps at most 1048576", 1+len(big)); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), want) {
		t.Fatalf("capture bound with an MCP result: %v, want %q", err, want)
	}
}

func closeEndsReadsAndRefusesPosts(t *testing.T, o Open) {
	s := o(t, Defaults)
	r := open(t, s, "laptop")
	s.Close()
	select {
	case <-r.Ended():
	case <-time.After(10 * time.Second):
		t.Fatal("read not ended")
	}
	if err := s.Post(ctx, inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "d", Tool: "t", Input: "1"}); status.Code(err) != codes.Unavailable || !contract.NotPosted(err) {
		t.Fatalf("post after close: %v (reason %q); want UNAVAILABLE, not posted", err, contract.ReasonOf(err))
	}
}

// aRetriedCollectionGetsTheSameCapture: a collection named by a retry key
// may be asked again (its reply may have been lost); any other collection
// finds the capture gone, as read-once says.
func aRetriedCollectionGetsTheSameCapture(t *testing.T, o Open) {
	s := o(t, Defaults)
	id, r := handedOut(t, s, "echo")
	defer r.Close()
	if _, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "once"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c, err := s.Collect(ctx, "driver", id, 0, "try-1")
		if err != nil || c == nil || c.Stdout != "once" {
			t.Fatalf("collection try-1: %+v %v", c, err)
		}
	}
	_, err := s.Collect(ctx, "driver", id, 0, "try-2")
	wantAbsent(t, err, id)
	_, err = s.Collect(ctx, "driver", id, 0, "")
	wantAbsent(t, err, id)
	_, err = s.Collect(ctx, "mallory", id, 0, "try-1")
	wantAbsent(t, err, id)
	// A waiting collection with a key takes the answer the same way.
	id2 := post(t, s, "laptop", "echo")
	got := make(chan *inflight.Capture, 1)
	go func() {
		c, err := s.Collect(ctx, "driver", id2, time.Hour, "wait-1")
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	take(t, r, 1)
	if _, err := s.Complete(ctx, "laptop", id2, inflight.Capture{Stdout: "twice"}); err != nil {
		t.Fatal(err)
	}
	if c := <-got; c == nil || c.Stdout != "twice" {
		t.Fatalf("waiting collection: %+v", c)
	}
	if c, err := s.Collect(ctx, "driver", id2, 0, "wait-1"); err != nil || c == nil || c.Stdout != "twice" {
		t.Fatalf("retry of the waiting collection: %+v %v", c, err)
	}
}
