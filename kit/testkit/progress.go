package testkit

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// StatusReader is what Notes asks of the mailbox.
type StatusReader interface {
	Status(ctx context.Context, in *mailboxv1.StatusRequest, opts ...grpc.CallOption) (*mailboxv1.StatusResponse, error)
}

// Notes reads an invocation's progress as its poster would, with Status
// waiting for each note after the last one seen, until until holds over the
// notes seen (nil: never) or the invocation is answered or cancelled. It
// returns the notes in the order read and the last answer, and fails t
// when a note's seq does not grow or nothing settles within a minute.
func Notes(ctx context.Context, t TB, mb StatusReader, inv string, until func([]*mailboxv1.ProgressNote) bool) ([]*mailboxv1.ProgressNote, *mailboxv1.StatusResponse) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var seen []*mailboxv1.ProgressNote
	var after int64
	for time.Now().Before(deadline) {
		res, err := mb.Status(ctx, &mailboxv1.StatusRequest{Invocation: inv, After: after, Wait: durationpb.New(10 * time.Second)})
		if err != nil {
			t.Fatalf("Status(%s, after %d): %v", inv, after, err)
		}
		for _, n := range res.GetProgress() {
			if n.GetSeq() <= after {
				t.Fatalf("Status(%s, after %d) gave note %d", inv, after, n.GetSeq())
			}
			after = n.GetSeq()
			seen = append(seen, n)
		}
		if until != nil && until(seen) {
			return seen, res
		}
		switch res.GetPhase() {
		case mailboxv1.Phase_PHASE_ANSWERED, mailboxv1.Phase_PHASE_CANCELLED:
			return seen, res
		}
	}
	t.Fatalf("invocation %s was not answered within a minute; notes seen: %v", inv, seen)
	return nil, nil
}

// NoteTexts is each note as "progress/total message", "-" for no total.
func NoteTexts(ns []*mailboxv1.ProgressNote) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		total := "-"
		if n.Total != nil {
			total = fmt.Sprint(n.GetTotal())
		}
		out = append(out, fmt.Sprintf("%v/%s %s", n.GetProgress(), total, n.GetMessage()))
	}
	return out
}

// Subsequence reports whether got is want with some left out, in order:
// what a poster reads of notes a host sends one at a time, the latest
// replacing one still waiting.
func Subsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		for i < len(want) && want[i] != g {
			i++
		}
		if i == len(want) {
			return false
		}
		i++
	}
	return true
}
