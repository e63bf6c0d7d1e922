package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// The rules of a read's batch (docs/design.md §3): a Take hands out no more
// than its room, what does not fit waits uncounted for the next, and an
// invocation given back unsent is handed out again as the same hand-off.
var batchRules = []rule{
	{"ATakeHandsOutNoMoreThanItsRoom", aTakeHandsOutNoMoreThanItsRoom},
	{"WhatDidNotFitIsNoHandOff", whatDidNotFitIsNoHandOff},
	{"AnUnsentInvocationIsNoHandOff", anUnsentInvocationIsNoHandOff},
	{"ADroppedRedeliveryTakesNoRoom", aDroppedRedeliveryTakesNoRoom},
}

// postSized posts an invocation whose input is n bytes of JSON text.
func postSized(t *testing.T, s inflight.Store, client string, n int) string {
	t.Helper()
	id := inflight.NewID()
	input := `"` + strings.Repeat("x", n-2) + `"`
	if err := s.Post(ctx, inflight.Post{ID: id, Client: client, Poster: "driver", Tool: "echo", Input: input}); err != nil {
		t.Fatal(err)
	}
	return id
}

// takeInto takes into room until it holds n invocations or is full (a
// store may deliver a moment after the post), and returns them.
func takeInto(t *testing.T, r inflight.Read, room *inflight.Room, n int) []inflight.Invocation {
	t.Helper()
	var got []inflight.Invocation
	deadline := time.After(10 * time.Second)
	for {
		invs, _ := r.Take(true, room)
		got = append(got, invs...)
		if len(got) >= n || room.Full {
			return got
		}
		select {
		case <-r.Wake():
		case <-deadline:
			t.Fatalf("the read handed out %d invocations, want %d", len(got), n)
		}
	}
}

func aTakeHandsOutNoMoreThanItsRoom(t *testing.T, o Open) {
	s := o(t, Defaults)
	var ids []string
	for range 7 {
		ids = append(ids, postSized(t, s, "laptop", 1000))
	}
	r := open(t, s, "laptop")
	defer r.Close()
	size := (&inflight.Invocation{ID: ids[0], Tool: "echo", Input: strings.Repeat("x", 1000)}).Size()
	var got []inflight.Invocation
	for _, room := range []*inflight.Room{
		{Rows: 2, Bytes: 1 << 20},           // two by count
		{Rows: 100, Bytes: 3*size + size/2}, // three by bytes
		{Rows: 100, Bytes: 1},               // the first fits whatever its size
		{Rows: 100, Bytes: 1 << 20},
	} {
		want := min(room.Rows, max(room.Bytes/size, 1), len(ids)-len(got))
		batch := takeInto(t, r, room, want)
		if len(batch) != want {
			t.Fatalf("a room of %d rows and %d bytes handed out %d invocations of %d bytes, want %d", room.Rows, room.Bytes, len(batch), size, want)
		}
		got = append(got, batch...)
	}
	for i, inv := range got {
		if inv.ID != ids[i] || inv.Delivery != 1 {
			t.Fatalf("row %d is %s (delivery %d); want %s, once, in order", i, inv.ID, inv.Delivery, ids[i])
		}
	}
}

// whatDidNotFitIsNoHandOff: reads that each take one invocation of three
// and end count no hand-off for the two that waited, however often they
// were ready to go.
func whatDidNotFitIsNoHandOff(t *testing.T, o Open) {
	s := o(t, Defaults)
	waiting := map[string]bool{post(t, s, "laptop", "echo"): true, post(t, s, "laptop", "echo"): true, post(t, s, "laptop", "echo"): true}
	for range 3 {
		r := open(t, s, "laptop")
		got := takeInto(t, r, &inflight.Room{Rows: 1, Bytes: 1 << 20}, 1)
		// A store that gives deliveries back may hand them out again in
		// another order; each is handed out once all the same.
		if len(got) != 1 || !waiting[got[0].ID] || got[0].Delivery != 1 {
			t.Fatalf("read handed out %+v; want one of %v as its first hand-off", got, waiting)
		}
		delete(waiting, got[0].ID)
		if _, err := s.Complete(ctx, "laptop", got[0].ID, inflight.Capture{Stdout: "ok"}); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
}

// anUnsentInvocationIsNoHandOff: an invocation given back unsent, more
// times than the hand-off cap, is still handed out as its first hand-off,
// and its capture says nothing of hand-offs.
func anUnsentInvocationIsNoHandOff(t *testing.T, o Open) {
	s := o(t, Defaults)
	id := post(t, s, "laptop", "echo")
	for range inflight.HandoffCap + 1 {
		r := open(t, s, "laptop")
		got := take(t, r, 1)
		if got[0].ID != id || got[0].Delivery != 1 {
			t.Fatalf("handed out %+v; want %s as its first hand-off", got, id)
		}
		r.Unsent(got)
		r.Close()
	}
	r := open(t, s, "laptop")
	defer r.Close()
	if got := take(t, r, 1); got[0].ID != id || got[0].Delivery != 1 {
		t.Fatalf("handed out %+v; want %s as its first hand-off", got, id)
	}
	c, err := s.Complete(ctx, "laptop", id, inflight.Capture{Stdout: "ok"})
	if err != nil || c.Stderr != "" {
		t.Fatalf("capture %+v, %v; want it as the host sent it", c, err)
	}
}

// aDroppedRedeliveryTakesNoRoom: an invocation answered after its read
// ended comes back to a store that redelivers, and is dropped there; the
// batch's room goes to the next one instead of coming back empty.
func aDroppedRedeliveryTakesNoRoom(t *testing.T, o Open) {
	s := o(t, Defaults)
	answered, next := post(t, s, "laptop", "echo"), post(t, s, "laptop", "echo")
	r := open(t, s, "laptop")
	take(t, r, 2)
	r.Close()
	if _, err := s.Complete(ctx, "laptop", answered, inflight.Capture{Stdout: "late"}); err != nil {
		t.Fatal(err)
	}
	r = open(t, s, "laptop")
	defer r.Close()
	got := takeInto(t, r, &inflight.Room{Rows: 1, Bytes: 1 << 20}, 1)
	if len(got) != 1 || got[0].ID != next || got[0].Delivery != 2 {
		t.Fatalf("a batch of one handed out %+v; want %s as its second hand-off", got, next)
	}
}
