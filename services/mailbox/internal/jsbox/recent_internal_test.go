package jsbox

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// TestRecentAnswersStayWithinTheirBounds: the answers a replica keeps are
// bounded by count, by bytes and by age, and keys of answers taken do not
// pile up, whatever the traffic.
func TestRecentAnswersStayWithinTheirBounds(t *testing.T) {
	heard := func(r *recentAnswers, id string, stdout string) {
		r.heard(id, encodeAnswer(7, "driver", inflight.Capture{Stdout: stdout}))
	}
	t.Run("count", func(t *testing.T) {
		r := newRecentAnswers()
		for i := range recentMax + 100 {
			heard(r, fmt.Sprint("id-", i), "x")
		}
		if len(r.byID) != recentMax {
			t.Errorf("kept %d answers, want the bound %d", len(r.byID), recentMax)
		}
		if _, ok := r.take("id-0", "driver"); ok {
			t.Error("the oldest answer was kept past the bound")
		}
		if a, ok := r.take(fmt.Sprint("id-", recentMax+99), "driver"); !ok || a.Revision != 7 || a.Capture.Stdout != "x" {
			t.Errorf("the newest answer: %+v %v", a, ok)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		r := newRecentAnswers()
		big := strings.Repeat("x", maxAnnounced)
		for i := range 2 * recentMaxBytes / maxAnnounced {
			heard(r, fmt.Sprint("id-", i), big)
		}
		if r.bytes > recentMaxBytes {
			t.Errorf("kept %d bytes, want at most %d", r.bytes, recentMaxBytes)
		}
	})
	t.Run("age", func(t *testing.T) {
		r := newRecentAnswers()
		heard(r, "old", "x")
		r.evict(time.Now().Add(recentFor + time.Second))
		if len(r.byID) != 0 || r.bytes != 0 {
			t.Errorf("an answer older than %v was kept: %d answers, %d bytes", recentFor, len(r.byID), r.bytes)
		}
	})
	t.Run("taken", func(t *testing.T) {
		r := newRecentAnswers()
		heard(r, "fresh", "x") // at the front, never taken
		for i := range 10 * recentMax {
			id := fmt.Sprint("id-", i)
			heard(r, id, "x")
			if _, ok := r.take(id, "driver"); !ok {
				t.Fatalf("%s was not kept", id)
			}
		}
		if n := len(r.order) - r.head; n > 4*recentMax {
			t.Errorf("%d keys held for %d answers kept", n, len(r.byID))
		}
	})
	t.Run("poster and forgetting", func(t *testing.T) {
		r := newRecentAnswers()
		heard(r, "a", "x")
		if _, ok := r.take("a", "intruder"); ok {
			t.Error("someone else took the answer")
		}
		r.heard("a", nil) // a wake-up without an answer: the slot changed
		if _, ok := r.take("a", "driver"); ok {
			t.Error("an answer was kept after a wake-up without one")
		}
		r.heard("b", encodeAnswer(7, "", inflight.Capture{Stdout: "x"}))
		if len(r.byID) != 0 {
			t.Error("an answer naming no poster was kept")
		}
	})
}
