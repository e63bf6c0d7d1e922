package box_test

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/box"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// What replicas do for each other: two (or three) boxes on one NATS, each
// on a connection of its own, as separate processes would be.

type called struct {
	c   *inflight.Capture
	err error
}

// call starts a Call of client's echo on b, waiting up to a minute.
func call(b *box.Box, client string) (string, <-chan called) {
	id := inflight.NewID()
	out := make(chan called, 1)
	go func() {
		wait, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		c, err := b.Call(ctx, wait, inflight.Post{ID: id, Client: client, Poster: "driver", Tool: "echo", Input: `{"n":1}`})
		out <- called{c, err}
	}()
	return id, out
}

func openRead(t *testing.T, b *box.Box, client, session string) inflight.Read {
	t.Helper()
	r, err := b.OpenRead(ctx, client, session)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// takeOne waits until r hands out one invocation.
func takeOne(t *testing.T, r inflight.Read) inflight.Invocation {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if got, _ := r.Take(true, storetest.Roomy()); len(got) > 0 {
			return got[0]
		}
		select {
		case <-r.Wake():
		case <-deadline:
			t.Fatal("nothing was handed out")
		}
	}
}

func result(t *testing.T, ch <-chan called) called {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the call never returned")
	}
	return called{}
}

// mcpResult is an MCP server's result as a bridge passes it on: the
// replicas carry it as they got it, in memory, between them and in records.
const mcpResult = `{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"structuredContent":{"w":1},"_meta":{"k":"\u00e9"}}`

// records counts the messages of the box's streams.
func records(t *testing.T, url string) uint64 {
	t.Helper()
	js := testkit.JetStream(t, url)
	var n uint64
	for k := range box.Partitions {
		s, err := js.Stream(ctx, box.StreamPrefix+strconv.Itoa(k))
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += info.State.Msgs
	}
	return n
}

func TestACallToAConnectedHostWritesNothingDurable(t *testing.T) {
	t.Parallel()
	url := testkit.NATS(t).ClientURL()
	a, _ := replica(t, url, storetest.Defaults, 1)
	b, _ := replica(t, url, storetest.Defaults, 1)
	r := openRead(t, b, "laptop", "s")
	for _, via := range []*box.Box{a, b} { // through another replica, and through the host's own
		id, out := call(via, "laptop")
		inv := takeOne(t, r)
		if inv.ID != id || inv.Delivery != 1 {
			t.Fatalf("handed %+v, want %s once", inv, id)
		}
		if _, err := b.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "hi", MCPResult: mcpResult}); err != nil {
			t.Fatal(err)
		}
		if got := result(t, out); got.err != nil || got.c == nil || got.c.Stdout != "hi" || got.c.MCPResult != mcpResult {
			t.Fatalf("call: %+v %v; want the capture with its MCP result whole", got.c, got.err)
		}
	}
	if n := records(t, url); n != 0 {
		t.Fatalf("%d records were written for calls to a connected host; want none", n)
	}
}

func TestACallWhoseHoldingReplicaDiesFailsInBand(t *testing.T) {
	t.Parallel()
	url := testkit.NATS(t).ClientURL()
	a, _ := replica(t, url, storetest.Defaults, 1)
	b, bConn := replica(t, url, storetest.Defaults, 1)
	r := openRead(t, b, "laptop", "s")
	id, out := call(a, "laptop")
	takeOne(t, r)
	bConn.Close() // b dies with the call in its memory
	got := result(t, out)
	if status.Code(got.err) != codes.Unavailable || !strings.Contains(got.err.Error(), id) || !strings.Contains(got.err.Error(), "may have run it") {
		t.Fatalf("call: %+v %v; want UNAVAILABLE naming %s and saying it may have run", got.c, got.err, id)
	}
}

func TestAnInvokeSurvivesTheReplicaHoldingIt(t *testing.T) {
	t.Parallel()
	url := testkit.NATS(t).ClientURL()
	a, _ := replica(t, url, storetest.Defaults, 1)
	b, bConn := replica(t, url, storetest.Defaults, 1)
	r := openRead(t, b, "laptop", "s")
	id := inflight.NewID()
	if err := a.Post(ctx, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`}); err != nil {
		t.Fatal(err)
	}
	if inv := takeOne(t, r); inv.ID != id || inv.Delivery != 1 {
		t.Fatalf("handed %+v", inv)
	}
	bConn.Close() // b dies having handed it out, and wrote nothing of it
	r2 := openRead(t, a, "laptop", "s")
	if inv := takeOne(t, r2); inv.ID != id || inv.Delivery != 2 {
		t.Fatalf("after b died, handed %+v; want %s as the second hand-off", inv, id)
	}
	if _, err := a.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "done"}); err != nil {
		t.Fatal(err)
	}
	c, err := a.Collect(ctx, "driver", id, 10*time.Second, "")
	if err != nil || c == nil || c.Stdout != "done" || !strings.Contains(c.Stderr, `handed to "laptop" 2 times`) {
		t.Fatalf("collect: %+v %v; want the capture with the two-hand-off warning", c, err)
	}
}

// A collection with a retry key waiting on the replica that holds the
// invocation takes the answer there; the replica dies before its reply
// reaches the driver, and the same key through another replica gets the
// same capture.
func TestARetriedCollectionOutlivesTheReplicaThatTookIt(t *testing.T) {
	t.Parallel()
	url := testkit.NATS(t).ClientURL()
	a, aConn := replica(t, url, storetest.Defaults, 1)
	b, _ := replica(t, url, storetest.Defaults, 1)
	r := openRead(t, a, "laptop", "s")
	id := inflight.NewID()
	if err := a.Post(ctx, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`}); err != nil {
		t.Fatal(err)
	}
	takeOne(t, r)
	got := make(chan *inflight.Capture, 1)
	go func() {
		c, _ := a.Collect(ctx, "driver", id, 10*time.Second, "k1")
		got <- c
	}()
	testkit.Eventually(t, "the collection to wait at a", 10*time.Second, func() bool {
		return a.Collectors(id) == 1
	})
	if _, err := a.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "done", MCPResult: mcpResult}); err != nil {
		t.Fatal(err)
	}
	if c := <-got; c == nil || c.Stdout != "done" {
		t.Fatalf("the waiting collection took %+v", c)
	}
	aConn.Close() // its reply lost with it
	if c, err := b.Collect(ctx, "driver", id, 0, "k1"); err != nil || c == nil || c.Stdout != "done" || c.MCPResult != mcpResult {
		t.Fatalf("again with the same key through b: %+v %v; want the same capture", c, err)
	}
	if _, err := b.Collect(ctx, "driver", id, 0, ""); status.Code(err) != codes.NotFound {
		t.Fatalf("without the key through b: %v; want it gone", err)
	}
}

func TestAHostMovingReplicasTakesItsCallsAlong(t *testing.T) {
	t.Parallel()
	url := testkit.NATS(t).ClientURL()
	a, _ := replica(t, url, storetest.Defaults, 1)
	b, _ := replica(t, url, storetest.Defaults, 1)
	onB := openRead(t, b, "laptop", "s")
	id, out := call(a, "laptop")
	takeOne(t, onB)
	if _, err := a.OpenRead(ctx, "laptop", "other"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("a read of another session while b holds one: %v, want the second-reader refusal", err)
	}
	onA := openRead(t, a, "laptop", "s") // the same host, redialed through a
	select {
	case <-onB.Ended():
	case <-time.After(10 * time.Second):
		t.Fatal("b's read did not end when the host read through a")
	}
	if inv := takeOne(t, onA); inv.ID != id || inv.Delivery != 2 {
		t.Fatalf("on a: %+v; want %s as the second hand-off", inv, id)
	}
	if _, err := a.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "moved"}); err != nil {
		t.Fatal(err)
	}
	if got := result(t, out); got.err != nil || got.c == nil || got.c.Stdout != "moved" {
		t.Fatalf("call: %+v %v", got.c, got.err)
	}
}

func TestActsByHandleReachTheReplicaHoldingACall(t *testing.T) {
	t.Parallel()
	url := testkit.NATS(t).ClientURL()
	a, _ := replica(t, url, storetest.Defaults, 1)
	b, _ := replica(t, url, storetest.Defaults, 1)
	c, _ := replica(t, url, storetest.Defaults, 1)
	r := openRead(t, b, "laptop", "s")
	id, out := call(a, "laptop")
	takeOne(t, r)
	if _, _, err := b.Report(ctx, "laptop", id, inflight.NewNote(1, nil, "half", time.Now())); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, "driver", id, 0, 0)
	if err != nil || st.Phase != inflight.HandedOut || len(st.Notes) != 1 || st.Notes[0].Message != "half" {
		t.Fatalf("status through a third replica: %+v %v", st, err)
	}
	if _, err := c.Cancel(ctx, "driver", id, "stop", false); err != nil {
		t.Fatal(err)
	}
	if got := result(t, out); got.err != nil || got.c == nil || got.c.ExitCode != inflight.ExitCancelled {
		t.Fatalf("the cancelled call: %+v %v", got.c, got.err)
	}
}

func TestParkedHostsAddNoJetStreamConsumer(t *testing.T) {
	t.Parallel()
	url := testkit.NATS(t).ClientURL()
	b, _ := replica(t, url, storetest.Defaults, 1)
	consumers := func() int {
		js := testkit.JetStream(t, url)
		n := 0
		for name := range js.StreamNames(ctx).Name() {
			s, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n += info.State.Consumers
		}
		return n
	}
	openRead(t, b, "host-first", "s")
	// The replica's own: its view of each partition and its watch of the
	// other replicas, made in the background as it starts.
	testkit.Eventually(t, "the replica's views to follow their partitions", 30*time.Second, func() bool {
		return consumers() >= box.Partitions+1
	})
	before := consumers()
	for i := range 1000 {
		openRead(t, b, fmt.Sprint("host-", i), "s")
	}
	if after := consumers(); after != before {
		t.Fatalf("%d consumers with one host reading, %d with 1,001: a host must cost no consumer", before, after)
	}
}

// A call held by a replica whose replies are lost (a NATS node going away
// with them) returns when its wait ends, for collection by its handle: the
// wait is the caller's, not NATS's.
func TestACallReturnsWhenItsWaitEndsThoughItsHomeIsSilent(t *testing.T) {
	t.Parallel()
	url := testkit.NATS(t).ClientURL()
	a, _ := replica(t, url, storetest.Defaults, 1)
	// A home that takes the call and answers pings, but never a collect.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	for subj, reply := range map[string]string{"sb.host.laptop": `{"replica":"ghost","held":true}`, "sb.mbx.ghost": ""} {
		if _, err := nc.Subscribe(subj, func(m *nats.Msg) {
			if strings.Contains(string(m.Data), `"op":"collect"`) {
				return
			}
			_ = m.Respond([]byte(cmp.Or(reply, `{"replica":"ghost"}`)))
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	done := make(chan called, 1)
	go func() {
		c, err := a.Call(ctx, wait, inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`})
		done <- called{c, err}
	}()
	// One that waits for the silent home instead hears, seconds later, that
	// home stopped answering.
	if got := result(t, done); got.err != nil || got.c != nil {
		t.Fatalf("call: %+v %v; want no answer and no error, for collection later", got.c, got.err)
	}
}

// A read that ends says why to its host: moved to another replica, or the
// replica draining — not one sentence for both.
func TestAnEndedReadSaysWhy(t *testing.T) {
	t.Parallel()
	url := testkit.NATS(t).ClientURL()
	a, _ := replica(t, url, storetest.Defaults, 1)
	b, _ := replica(t, url, storetest.Defaults, 1)
	ended := func(r inflight.Read, want string) {
		t.Helper()
		select {
		case <-r.Ended():
		case <-time.After(30 * time.Second):
			t.Fatal("the read never ended")
		}
		if !strings.Contains(r.Why(), want) {
			t.Fatalf("the read ended saying %q; want %q in it", r.Why(), want)
		}
	}
	first := openRead(t, a, "laptop", "s")
	openRead(t, b, "laptop", "s") // the same host through another replica
	ended(first, "moved to another mailbox replica")
	r := openRead(t, a, "desktop", "s")
	a.Close()
	ended(r, "shutting down")
}
