package plugin

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/follower"
)

// A notice naming the request in flight by its id is a progress note of
// that call, with its numbers when given and a step when not; every notice
// is still a notice, as for backends that never name a request; a notice
// naming another request, or no request, makes no note; a progress that is
// not a number is a fault.
func TestNoticesNamingTheRequestAreItsProgress(t *testing.T) {
	t.Parallel()
	b, r := start(t, nil, 0)
	var mu sync.Mutex
	var notes []follower.Note
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, answer := b.Submit(ctx, "progress", `{}`, Hearing{Progress: func(n follower.Note) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, n)
	}}).Wait()
	if !answer || c.GetStdout() != "done" {
		t.Fatalf("the call: %v, answered %v; want done", c, answer)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []follower.Note{
		{Progress: 1, Total: 4, Message: "first"},
		{Step: true, Message: "a step"},
		{Progress: 3.5, Total: 4, Message: "third"},
	}
	if !slices.Equal(notes, want) {
		t.Errorf("progress notes %+v; want %+v", notes, want)
	}
	notices, faults, _ := r.snapshot()
	for _, n := range []string{"notice (info): plain", "notice: first", "notice: a step", "notice: not yours", "notice: no request's id", "notice: third"} {
		if !slices.Contains(notices, n) {
			t.Errorf("notices %q lack %q", notices, n)
		}
	}
	if len(faults) != 1 || !strings.Contains(faults[0], `has a progress of lots, which is not a number`) {
		t.Errorf("faults %q; want one about the progress that is not a number", faults)
	}
	// A call given no progress function is served as before.
	if c := answered(t, b, "progress", `{}`); c.GetStdout() != "done" {
		t.Errorf("a call without a progress function: %v", c)
	}
}
