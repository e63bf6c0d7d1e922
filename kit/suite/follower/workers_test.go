package follower

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// workers counts the goroutines dispatch started that are still alive.
func workers() int {
	buf := make([]byte, 1<<20)
	for n := runtime.Stack(buf, true); n == len(buf); n = runtime.Stack(buf, true) {
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "created by github.com/switchboard-run/switchboard/kit/suite/follower.(*Follower).dispatch")
}

// Runs go to the goroutines of earlier runs: however many calls come, the
// workers number at most one more than the slots (workers.go says when the
// one more), and none lives once Run has returned.
// Not parallel: it counts the package's goroutines.
func TestRunsReuseTheirWorkersAndNoneOutlivesRun(t *testing.T) {
	base := testkit.CountGoroutines()
	mb, r := newMailbox(), newRunner()
	_, stop := start(t, Options{Mailbox: mb, Slots: 3, Queued: 8}, r)
	s := mb.stream(t)
	for round := range 4 {
		var ids []string
		for i := range 6 {
			ids = append(ids, fmt.Sprintf("r%d-%d", round, i))
		}
		s.invoke(ids...)
		for range ids {
			r.awaitStarted(t)
			r.release <- struct{}{}
			mb.awaitCompleted(t)
		}
		if n := workers(); n < 1 || n > 4 {
			t.Fatalf("after round %d: %d workers for 3 slots", round, n)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitGoroutinesBack(t, base, 10*time.Second)
}
