package budget

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestEachBudgetRefusesWithItsSentence(t *testing.T) {
	l := New(Limits{Total: 100, PerPoster: 60, PerClient: 50, TTL: time.Hour}, nil)
	if err := l.Reserve("a", "alice", "laptop", 40); err != nil {
		t.Fatal(err)
	}
	testkit.Refused(t, l.Reserve("b", "alice", "desk", 30), codes.ResourceExhausted,
		`driver "alice" holds 40 bytes of invocations and uncollected captures in this mailbox, and this invocation's 30 more would pass the budget of 60 per poster (--max-poster-bytes); collect or cancel what it posted first`)
	testkit.Refused(t, l.Reserve("b", "bob", "laptop", 20), codes.ResourceExhausted,
		`client "laptop" has 40 bytes of invocations and uncollected captures waiting in this mailbox, and this invocation's 20 more would pass the budget of 50 per client (--max-client-bytes); it is not answering (or its posters not collecting) fast enough`)
	if err := l.Reserve("b", "bob", "desk", 50); err != nil {
		t.Fatal(err)
	}
	testkit.Refused(t, l.Reserve("c", "carol", "box", 11), codes.ResourceExhausted,
		`the mailbox holds 90 bytes of invocations and uncollected captures, and this invocation's 11 more would pass its budget of 100 (--max-held-bytes); collect captures, cancel what is not needed, or wait for hosts to answer`)
}

func TestACaptureCountsOnceUntilItsPosterReleasesIt(t *testing.T) {
	l := New(Limits{Total: 1000, TTL: time.Hour}, nil)
	if err := l.Reserve("a", "alice", "laptop", 10); err != nil {
		t.Fatal(err)
	}
	l.Captured("a", 100)
	l.Captured("a", 100) // heard again from another replica
	if total, byPoster, byClient := l.Held("alice", "laptop"); total != 110 || byPoster != 110 || byClient != 110 {
		t.Fatalf("held %d, %d, %d; want 110 each", total, byPoster, byClient)
	}
	l.Release("a", "mallory") // someone else's handle frees nothing
	if total, _, _ := l.Held("", ""); total != 110 {
		t.Fatalf("held %d after a stranger's release; want 110", total)
	}
	l.Release("a", "alice")
	if total, byPoster, byClient := l.Held("alice", "laptop"); total != 0 || byPoster != 0 || byClient != 0 {
		t.Fatalf("held %d, %d, %d after the release; want nothing", total, byPoster, byClient)
	}
}

func TestWhatOutlivesTheTTLIsReleased(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := New(Limits{Total: 100, TTL: time.Hour}, func() time.Time { return now })
	if err := l.Reserve("a", "alice", "laptop", 60); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Minute)
	if err := l.Reserve("b", "alice", "laptop", 30); err != nil {
		t.Fatal(err)
	}
	if err := l.Reserve("c", "alice", "laptop", 60); err == nil {
		t.Fatal("a post past the budget was taken")
	}
	now = now.Add(31 * time.Minute) // a has expired, b has not
	if err := l.Reserve("c", "alice", "laptop", 60); err != nil {
		t.Fatalf("after the first expired: %v", err)
	}
	if total, _, _ := l.Held("", ""); total != 90 {
		t.Fatalf("held %d; want 90", total)
	}
	l.Forget("b")
	if total, _, _ := l.Held("", ""); total != 60 {
		t.Fatalf("held %d after b was forgotten; want 60", total)
	}
}

func TestNotesCountAsTheSlotKeepsThemUntilReleased(t *testing.T) {
	l := New(Limits{Total: 1000, TTL: time.Hour}, nil)
	if err := l.Reserve("a", "alice", "laptop", 10); err != nil {
		t.Fatal(err)
	}
	l.Noted("a", 50)
	l.Noted("a", 80) // a note more: the slot's notes hold 80 bytes now
	l.Noted("a", 80) // heard again from another replica
	l.Captured("a", 5)
	if total, byPoster, byClient := l.Held("alice", "laptop"); total != 95 || byPoster != 95 || byClient != 95 {
		t.Fatalf("held %d, %d, %d; want 95 each", total, byPoster, byClient)
	}
	l.Noted("unknown", 10) // not posted here: nothing to count
	l.Release("a", "alice")
	if total, _, _ := l.Held("alice", "laptop"); total != 0 {
		t.Fatalf("held %d after the release; want 0", total)
	}
}
